/* peer_cell.c — see peer_cell.h. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../algos/common/gate.h"
#include "axes.h"
#include "cell_row.h"
#include "gpu.h"
#include "interrupt.h"
#include "peer_cell.h"
#include "timing.h"

/* The files of the scratch folder besides the logits: the worker's outputs of a cell. */
#define KEPT_FILE "kept.u8"
#define SAMPLES_FILE "samples.i64"

/* The scratch folder's n-th logits file: logits-<n>.<element type> (f32, bf16 or f16), so
 * that the worker can tell a file of one type from a request for another. */
static void input_path(char *path, size_t size, const char *dir, int n, enum tkp_dtype dtype)
{
    snprintf(path, size, "%s/logits-%d.%s", dir, n, tkp_dtype_name(dtype));
}

/* The session whose scratch folder a signal must remove (one per process). */
static struct tkp_peer_session *signalled;

/* Remove the scratch folder's files (the names this file gives them) and the folder. */
static void remove_scratch(const char *dir, int files)
{
    char path[800];
    for (int i = 1; i <= files; i++)
        for (int t = 0; t < TKP_DTYPE_COUNT; t++) {
            input_path(path, sizeof path, dir, i, (enum tkp_dtype)t);
            unlink(path);
        }
    snprintf(path, sizeof path, "%s/" KEPT_FILE, dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/" SAMPLES_FILE, dir);
    unlink(path);
    rmdir(dir);
}

/* On SIGINT, SIGTERM or SIGHUP (interrupt.h, which then ends the process). */
static void on_fatal_signal(void)
{
    struct tkp_peer_session *s = signalled;
    if (s && s->worker.pid > 0)
        kill(-s->worker.pid, SIGKILL);
    if (s && s->scratch[0])
        remove_scratch(s->scratch, s->files);
}

/* Is process `pid` running (a zombie, killed but not yet waited for, is not)? */
static int process_running(int pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    int got = f ? fscanf(f, "%*d (%*[^)]) %c", &state) : 0;
    if (f)
        fclose(f);
    return !(got == 1 && (state == 'Z' || state == 'X'));
}

/* Remove what killed runs left in `tmp`: folders topkp-peers-<pid>-* of processes gone. */
static void remove_stale_scratch(const char *tmp)
{
    DIR *d = opendir(tmp);
    for (struct dirent *e; d && (e = readdir(d));) {
        int pid = 0;
        if (sscanf(e->d_name, "topkp-peers-%d-", &pid) != 1 || pid <= 0 || process_running(pid))
            continue;
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s", tmp, e->d_name);
        DIR *inner = opendir(dir);
        for (struct dirent *f; inner && (f = readdir(inner));) {
            char path[900];
            snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
            if (f->d_name[0] != '.')
                unlink(path);
        }
        if (inner)
            closedir(inner);
        rmdir(dir);
    }
    if (d)
        closedir(d);
}

void tkp_peer_session_init(struct tkp_peer_session *s, enum tkp_backend backend,
                           long long l2_bytes, double max_clock_mhz, struct tkp_results *res)
{
    memset(s, 0, sizeof *s);
    s->backend = backend;
    s->flush_bytes = backend == TKP_GPU ? 2 * l2_bytes : 0; /* as the module timer (gpu.cu) */
    s->max_clock_mhz = max_clock_mhz;
    s->res = res;
    if (res && tkp_results_attr_get(res, "peer_packages", s->packages, sizeof s->packages))
        s->packages[0] = 0; /* a new file, or one without peers yet */
}

static int scratch_ready(struct tkp_peer_session *s, struct tkp_error *err)
{
    if (s->scratch[0])
        return TKP_OK;
    const char *tmp = getenv("TMPDIR");
    tmp = tmp && *tmp ? tmp : "/tmp";
    remove_stale_scratch(tmp);
    snprintf(s->scratch, sizeof s->scratch, "%s/topkp-peers-%d-XXXXXX", tmp, (int)getpid());
    if (strpbrk(s->scratch, "\t\n") || !mkdtemp(s->scratch)) {
        tkp_error_set(err, "cannot create a scratch folder %s for the peers", s->scratch);
        s->scratch[0] = 0;
        return TKP_EINVAL;
    }
    signalled = s;
    tkp_interrupt_call(on_fatal_signal);
    return TKP_OK;
}

void tkp_peer_session_close(struct tkp_peer_session *s)
{
    tkp_peer_worker_stop(&s->worker);
    if (!s->scratch[0])
        return;
    remove_scratch(s->scratch, s->files);
    s->scratch[0] = 0;
    if (signalled == s)
        signalled = NULL;
}

/* CRC-32 of `bytes` bytes (zlib takes 32-bit lengths: fed a gibibyte at a time). */
static uint32_t crc_of(const void *data, size_t bytes)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < bytes; at += 1u << 30) {
        size_t len = bytes - at < (1u << 30) ? bytes - at : (1u << 30);
        crc = crc32(crc, (const Bytef *)data + at, (uInt)len);
    }
    return (uint32_t)crc;
}

/* Can the first `rows` rows of b's input be written for the peers? */
static int input_writable(const struct tkp_batch *b, int64_t rows, struct tkp_error *err)
{
    const char *type = tkp_dtype_name(b->dtype);
    if (!type)
        tkp_error_set(err, "logits element type %d is not one of f32, bf16, f16", (int)b->dtype);
    else if (!tkp_batch_input(b))
        tkp_error_set(err, "the %s batch has no %s values to write for the peers", type, type);
    else if (rows < b->batch)
        tkp_error_set(err, "the peers' copy of the logits would hold %lld rows, fewer than the "
                      "batch's %lld", (long long)rows, (long long)b->batch);
    else
        return TKP_OK;
    return TKP_EINVAL;
}

int tkp_peer_input_write(struct tkp_peer_session *s, const struct tkp_batch *b, int64_t rows,
                         struct tkp_peer_input *in, struct tkp_error *err)
{
    int rc = input_writable(b, rows, err);
    if (rc)
        return rc;
    if (in->path[0] && in->rows != rows) {
        tkp_error_set(err, "the peers' copy of the logits %s holds %lld rows, not %lld", in->path,
                      (long long)in->rows, (long long)rows);
        return TKP_EINVAL;
    }
    rc = scratch_ready(s, err);
    if (rc)
        return rc;
    struct tkp_peer_file *file = &in->typed[b->dtype];
    if (file->path[0])
        unlink(file->path);
    input_path(file->path, sizeof file->path, s->scratch, ++s->files, b->dtype);
    const void *values = tkp_batch_input(b);
    size_t bytes = (size_t)tkp_dtype_size(b->dtype) * (size_t)(rows * b->vocab);
    FILE *f = fopen(file->path, "wb");
    size_t put = f ? fwrite(values, 1, bytes, f) : 0;
    int closed = f ? fclose(f) == 0 : 0; /* always closed: an open unlinked file keeps its blocks */
    if (!f || put != bytes || !closed) {
        tkp_error_set(err, "cannot write the peers' copy of the logits to %s (%zu of %zu bytes)",
                      file->path, put, bytes);
        unlink(file->path);
        file->path[0] = 0;
        return TKP_EINVAL;
    }
    file->crc = crc_of(values, bytes);
    in->rows = rows;
    if (!in->path[0])
        memcpy(in->path, file->path, sizeof in->path); /* the same size, NUL included */
    return TKP_OK;
}

void tkp_peer_input_remove(struct tkp_peer_input *in)
{
    for (int t = 0; t < TKP_DTYPE_COUNT; t++)
        if (in->typed[t].path[0])
            unlink(in->typed[t].path);
    memset(in, 0, sizeof *in);
}

/* What the repetition callbacks need. */
struct peer_reps {
    struct tkp_peer_session *s;
    double deadline_us;
};

/* A reply that is not ok becomes the status: unsupported, or an error with its message. */
static int reply_status(struct tkp_peer_session *s, const struct tkp_peer_reply *r,
                        struct tkp_error *err)
{
    if (strcmp(r->status, "ok") == 0)
        return TKP_OK;
    const char *msg = tkp_peer_field(r, "msg");
    tkp_error_set(err, "%s", msg ? msg : r->status);
    const char *restart = tkp_peer_field(r, "restart");
    if (restart && strcmp(restart, "1") == 0)
        tkp_peer_worker_stop(&s->worker); /* its CUDA context is broken */
    return strcmp(r->status, "unsupported") == 0 ? TKP_EUNSUPPORTED
           : strcmp(r->status, "oom") == 0       ? TKP_ENOMEM
                                                 : TKP_EINVAL;
}

static int request(struct tkp_peer_session *s, const char *line, double deadline_us,
                   struct tkp_peer_reply *r, struct tkp_error *err)
{
    int rc = tkp_peer_request(&s->worker, line, deadline_us, NULL, NULL, r, err);
    return rc ? rc : reply_status(s, r, err);
}

static int rep(struct peer_reps *p, int flush, double *us, struct tkp_error *err)
{
    struct tkp_peer_reply r;
    int rc = request(p->s, flush ? "rep\tflush=1" : "rep\tflush=0", p->deadline_us, &r, err);
    const char *v = rc ? NULL : tkp_peer_field(&r, "us");
    if (!rc && !v) {
        tkp_error_set(err, "the peer worker's `rep` reply has no time");
        return TKP_EINVAL;
    }
    /* a timing field through its domain (docs/ROBUSTNESS.md, "Numbers that enter") */
    static const struct tkp_domain time_us = { "a time in us", 0, 0, 1e15 };
    *us = 0;
    return rc ? rc : tkp_gate_number_text(&time_us, "the peer worker's `rep` time", v, us, err);
}

static int peer_warm(void *ctx, struct tkp_error *err)
{
    double us;
    return rep(ctx, 0, &us, err);
}

static int peer_take(void *ctx, int cold, double *us, double *clock_mhz, struct tkp_error *err)
{
    struct peer_reps *p = ctx;
    int rc = rep(p, cold && p->s->backend == TKP_GPU, us, err);
    *clock_mhz = p->s->backend == TKP_GPU ? tkp_gpu_sm_clock_mhz() : 0;
    return rc;
}

/* After the warm-up of a graph = 1 cell: the worker captures the peer's call as a CUDA graph
 * (torch.cuda.CUDAGraph) and replays it from then on, or answers `unsupported` with the reason
 * (docs/PEERS.md, "Graph mode"); never timed eagerly instead. */
static int peer_capture(void *ctx, struct tkp_error *err)
{
    struct peer_reps *p = ctx;
    struct tkp_peer_reply r;
    return request(p->s, "graph", p->deadline_us, &r, err);
}

/* Read `bytes` bytes of a file the worker wrote. */
static int read_output(const char *path, void *dst, size_t bytes, struct tkp_error *err)
{
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(dst, 1, bytes, f) : 0;
    int extra = f && fgetc(f) != EOF;
    if (f)
        fclose(f);
    unlink(path);
    if (got != bytes || extra) {
        tkp_error_set(err, "the peer's output %s holds %zu bytes, expected %zu", path, got, bytes);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* Remember which package version served a peer, once per peer. */
static void note_package(struct tkp_peer_session *s, const char *peer, const char *info)
{
    char entry[256];
    snprintf(entry, sizeof entry, "%s: %s", peer, info ? tkp_gate_shown(info) : "?");
    if (strstr(s->packages, entry))
        return;
    size_t used = strlen(s->packages);
    snprintf(s->packages + used, sizeof s->packages - used, "%s%s", used ? "; " : "", entry);
    if (s->res) /* written at once (whole: the store holds), so that a killed run keeps it */
        tkp_results_attr(s->res, "peer_packages", s->packages);
}

int tkp_peer_open_line(const struct tkp_cell *cell, const char *logits, int64_t rows,
                       enum tkp_backend backend, long long flush_bytes, char *line, size_t n)
{
    int len = snprintf(line, n, "open\tpeer=%s\tlogits=%s\trows=%lld\tdevice=%s\tflush_bytes=%lld",
                       cell->algo->name, logits, (long long)rows,
                       backend == TKP_GPU ? "cuda" : "cpu", flush_bytes);
    if (len < 0 || (size_t)len >= n)
        return len;
    tkp_axes_append(cell, TKP_AXES_PEER, line, n);
    const size_t used = strlen(line);
    return (int)used + snprintf(line + used, n - used, "\toptions=%s", cell->options);
}

static int open_cell(struct tkp_peer_session *s, const struct tkp_cell *cell,
                     const struct tkp_peer_input *in, enum tkp_dtype dtype, double deadline_us,
                     struct tkp_error *err)
{
    if ((int)dtype != cell->dtype) {
        tkp_error_set(err, "the %s cell's logits are %s, not its dtype %s", cell->algo->name,
                      tkp_dtype_name(dtype), tkp_dtype_name((enum tkp_dtype)cell->dtype));
        return TKP_EINVAL;
    }
    const struct tkp_peer_file *file = &in->typed[dtype];
    char line[2048];
    int len = tkp_peer_open_line(cell, file->path, in->rows, s->backend, s->flush_bytes, line,
                                 sizeof line);
    if (len < 0 || (size_t)len >= sizeof line) {
        tkp_error_set(err, "the peer request for %s is too long (%d bytes)", cell->algo->name, len);
        return TKP_EINVAL;
    }
    struct tkp_peer_reply r;
    int rc = request(s, line, deadline_us, &r, err);
    if (rc)
        return rc;
    note_package(s, cell->algo->name, tkp_peer_field(&r, "info"));
    const char *crc = tkp_peer_field(&r, "crc");
    static const struct tkp_domain crc32 = { "a CRC-32", 1, 0, 4294967295.0 };
    double sum = -1;
    if (crc && tkp_gate_number_text(&crc32, "the peer's crc", crc, &sum, err))
        return TKP_EINVAL;
    if (!crc || sum != (double)file->crc) {
        tkp_error_set(err, "the peer read other logits than the modules (CRC-32 %s, expected %u)",
                      crc ? crc : "missing", file->crc);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* An untimed call: its extra device bytes, and its kept mask or draws for the oracle. */
static int fetch_outputs(struct tkp_peer_session *s, const struct tkp_batch *b, uint8_t *kept,
                         int64_t *drawn, int32_t draws, double deadline_us,
                         int64_t *extra_bytes, struct tkp_error *err)
{
    char line[1400], kept_path[600], samples_path[600];
    snprintf(kept_path, sizeof kept_path, "%s/" KEPT_FILE, s->scratch);
    snprintf(samples_path, sizeof samples_path, "%s/" SAMPLES_FILE, s->scratch);
    int len = snprintf(line, sizeof line, "fetch\tkept=%s\tsamples=%s\tdraws=%d",
                       kept ? kept_path : "", drawn ? samples_path : "", draws);
    if (len < 0 || (size_t)len >= sizeof line) {
        tkp_error_set(err, "the peer's scratch path %s is too long", s->scratch);
        return TKP_EINVAL;
    }
    struct tkp_peer_reply r;
    int rc = request(s, line, deadline_us, &r, err);
    if (rc)
        return rc;
    const char *extra = tkp_peer_field(&r, "extra_bytes");
    *extra_bytes = extra ? atoll(extra) : 0;
    if (kept)
        rc = read_output(kept_path, kept, (size_t)(b->batch * b->vocab), err);
    if (!rc && drawn)
        rc = read_output(samples_path, drawn, sizeof(int64_t) * (size_t)(b->batch * draws), err);
    return rc;
}

/* The file of b's element type in `in`, written now when a cell of that type comes first;
 * `in` must hold the batch's rows. */
static int input_ready(struct tkp_peer_session *s, struct tkp_peer_input *in,
                       const struct tkp_batch *b, struct tkp_error *err)
{
    if (in->rows < b->batch) {
        tkp_error_set(err, "the peers' copy of the logits %s holds %lld rows; the cell reads %lld",
                      in->path[0] ? in->path : "(none written)", (long long)in->rows,
                      (long long)b->batch);
        return TKP_EINVAL;
    }
    if (!tkp_dtype_name(b->dtype) || in->typed[b->dtype].path[0])
        return TKP_OK; /* an element type outside the enum: tkp_capable refused it */
    return tkp_peer_input_write(s, b, in->rows, in, err);
}

int tkp_peer_cell(struct tkp_peer_session *s, const struct tkp_cell *cell,
                  const struct tkp_batch *b, struct tkp_peer_input *in, uint8_t *kept,
                  int64_t *drawn, int32_t draws, struct tkp_cell_row *row, double **samples,
                  int64_t *n_samples, struct tkp_judge_memo *memo, struct tkp_error *err)
{
    struct tkp_problem pb = tkp_problem_of(b, s->backend, cell->algo->outputs, draws);
    int rc = tkp_capable(cell->algo, &pb, err);
    if (!rc)
        rc = input_ready(s, in, b, err);
    if (rc)
        return rc;
    struct peer_reps reps = { s, tkp_now_us() + cell->timing.timeout * 1e6 };
    rc = open_cell(s, cell, in, b->dtype, reps.deadline_us, err);
    struct tkp_rep_source src = { peer_warm, cell->graph ? peer_capture : NULL, peer_take,
                                  &reps };
    struct tkp_timing timing = cell->timing;
    if (timing.warmup < 1)
        timing.warmup = 1; /* a peer's first call compiles (Triton) or allocates its caches */
    if (!rc)
        rc = tkp_time_repetitions(&timing, &src, s->max_clock_mhz, samples, n_samples,
                                  &row->throttled, err);
    int64_t extra = 0;
    if (!rc)
        rc = fetch_outputs(s, b, kept, drawn, draws, reps.deadline_us, &extra, err);
    if (s->worker.pid) {
        struct tkp_peer_reply r;
        struct tkp_error ignored;
        tkp_peer_request(&s->worker, "close", tkp_now_us() + 10e6, NULL, NULL, &r, &ignored);
    }
    if (rc)
        return rc;
    row->workspace_bytes = extra;
    row->peak_device_bytes = s->backend == TKP_GPU ? extra + (int64_t)tkp_batch_input_bytes(b) : 0;
    return tkp_row_judge(row, b, kept, drawn, draws, cell->verify_rows, 0, memo, err);
}

/* The probe's per-peer lines, handed on to the caller's function. */
struct probe_ctx {
    void (*fn)(const char *, int, const char *, const char *, void *);
    void *ctx;
};

static void on_probe_line(const struct tkp_peer_reply *r, void *ctx)
{
    struct probe_ctx *p = ctx;
    const char *name = tkp_peer_field(r, "name"), *ok = tkp_peer_field(r, "available");
    const char *info = tkp_peer_field(r, "info"), *cast = tkp_peer_field(r, "cast");
    if (name)
        p->fn(name, ok && strcmp(ok, "1") == 0, info ? info : "", cast ? cast : "", p->ctx);
}

int tkp_peer_probe(struct tkp_peer_session *s,
                   void (*fn)(const char *name, int available, const char *info,
                              const char *cast, void *ctx),
                   void *ctx, struct tkp_error *err)
{
    struct probe_ctx p = { fn, ctx };
    struct tkp_peer_reply r;
    int rc = tkp_peer_request(&s->worker, "probe", tkp_now_us() + 120e6, on_probe_line, &p, &r, err);
    return rc ? rc : reply_status(s, &r, err);
}

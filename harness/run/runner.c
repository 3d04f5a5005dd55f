/* runner.c — see runner.h. One cell: build the batch (generated or read, cached between
 * cells), open the module, warm up, time repetitions, verify sample rows against the oracle,
 * append the row. Every failure becomes the cell's status; the sweep goes on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../algos/common/half.h"
#include "../algos/common/prob.h"
#include "../datasets/datasets.h"
#include "apply.h"
#include "axes.h"
#include "cell_row.h"
#include "dispatch.h"
#include "gpu.h"
#include "interrupt.h"
#include "logits_file.h"
#include "peer_cell.h"
#include "peers.h"
#include "progress.h"
#include "provenance.h"
#include "results.h"
#include "run_record.h"
#include "runner.h"
#include "timing.h"
#include "timing_graph.h"

/* Generated or read logits, kept between cells: one entry per (dataset, seed, vocab), holding
 * as many rows as the largest batch any cell of the plan asks of it, so that the cells of a
 * batch sweep share one generation, and, once a cell asks for one, the rows in each 16-bit
 * type with their exact upcast (so that an f32/bf16 sweep converts once per entry and type).
 * Least recently used entries go first. */
#define CACHE_ENTRIES 8 /* Figure 2's five vocabularies stay generated across its algorithms */
#define MEMO_BYTES ((int64_t)256 << 20) /* an entry's oracle prefixes, per element type */
struct cached_batch {
    char dataset[256];
    uint64_t seed;
    int64_t vocab, rows;
    float *logits;
    uint16_t *encoded[TKP_DTYPE_COUNT]; /* [rows, vocab] in a 16-bit type (f32: NULL) ... */
    float *upcast[TKP_DTYPE_COUNT];     /* ... and those encodings upcast, exactly */
    struct tkp_peer_input peer_file; /* the same rows for the peers, written on first use */
    struct tkp_judge_memo *memo[TKP_DTYPE_COUNT]; /* the oracle on these rows (judge_memo.h) */
    uint64_t used; /* a tick of the last use */
};

struct batch_cache {
    struct cached_batch entry[CACHE_ENTRIES];
    uint64_t tick;
};

static int same_data(const struct tkp_cell *a, const struct tkp_cell *b)
{
    return strcmp(a->dataset, b->dataset) == 0 && a->seed == b->seed && a->vocab == b->vocab;
}

/* Fill rows [0, rows) of x from the cell's dataset. */
static int load_rows(const struct tkp_cell *cell, int64_t rows, float *x, struct tkp_error *err)
{
    if (strncmp(cell->dataset, "file:", 5) != 0)
        return tkp_dataset_generate(cell->dataset, cell->seed, rows, cell->vocab, x, err);
    struct tkp_batch file;
    int rc = tkp_logits_read(cell->dataset + 5, 0, 1.0f, &file, err);
    if (rc == TKP_OK && file.vocab != cell->vocab) {
        tkp_error_set(err, "%s has V=%lld but the cell asks for V=%lld", cell->dataset + 5,
                      (long long)file.vocab, (long long)cell->vocab);
        rc = TKP_EINVAL;
    } else if (rc == TKP_OK && file.batch == 0) {
        tkp_error_set(err, "%s has no rows", cell->dataset + 5);
        rc = TKP_EINVAL;
    }
    for (int64_t r = 0; rc == TKP_OK && r < rows; r++) /* rows repeat cyclically */
        memcpy(x + r * cell->vocab, file.logits + (r % file.batch) * cell->vocab,
               sizeof(float) * (size_t)cell->vocab);
    tkp_batch_free(&file);
    return rc;
}

static void cache_entry_free(struct cached_batch *e)
{
    free(e->logits);
    for (int t = 0; t < TKP_DTYPE_COUNT; t++) {
        free(e->encoded[t]);
        free(e->upcast[t]);
        tkp_judge_memo_free(e->memo[t]);
    }
    tkp_peer_input_remove(&e->peer_file);
}

/* The entry's rows in 16-bit type t (tkp_encode_16bit, in chunks on every core)
 * and their exact upcast, which the oracle judges (docs/SEMANTICS.md, "16-bit logits"). */
static int convert_entry(struct cached_batch *e, enum tkp_dtype t, struct tkp_error *err)
{
    const size_t n = (size_t)(e->rows * e->vocab);
    uint16_t *enc = malloc(sizeof(uint16_t) * n);
    float *up = malloc(sizeof(float) * n);
    if (!enc || !up) {
        free(enc);
        free(up);
        tkp_error_set(err, "out of host memory for [%lld, %lld] %s logits", (long long)e->rows,
                      (long long)e->vocab, tkp_dtype_name(t));
        return TKP_ENOMEM;
    }
    const float *x = e->logits;
    const size_t chunk = (size_t)1 << 20;
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < n; c += chunk)
        tkp_encode_16bit(x + c, n - c < chunk ? n - c : chunk, t, enc + c, up + c);
    e->encoded[t] = enc;
    e->upcast[t] = up;
    return TKP_OK;
}

/* Point batch b at the entry's rows in the cell's element type (converted on first use). */
static int typed_rows(struct cached_batch *e, const struct tkp_cell *cell, struct tkp_batch *b,
                      struct tkp_error *err)
{
    const enum tkp_dtype t = (enum tkp_dtype)cell->dtype;
    b->dtype = t;
    b->logits = e->logits;
    b->logits16 = NULL;
    if (t == TKP_F32)
        return TKP_OK;
    if (!e->encoded[t]) {
        int rc = convert_entry(e, t, err);
        if (rc)
            return rc;
    }
    b->logits = e->upcast[t];
    b->logits16 = e->encoded[t];
    return TKP_OK;
}

/* The logits of `cell` (at least cell->batch rows), generated once for the plan. */
static struct cached_batch *cache_get(struct batch_cache *c, const struct tkp_plan *plan,
                              const struct tkp_cell *cell, struct tkp_error *err)
{
    struct cached_batch *e = NULL, *oldest = &c->entry[0];
    for (int i = 0; i < CACHE_ENTRIES; i++) {
        struct cached_batch *x = &c->entry[i];
        if (x->logits && strcmp(x->dataset, cell->dataset) == 0 && x->seed == cell->seed &&
            x->vocab == cell->vocab && x->rows >= cell->batch)
            e = x;
        if (x->used < oldest->used)
            oldest = x;
    }
    if (!e) {
        int64_t rows = cell->batch;
        for (size_t i = 0; i < plan->n; i++)
            if (same_data(&plan->cells[i], cell) && plan->cells[i].batch > rows)
                rows = plan->cells[i].batch;
        e = oldest;
        cache_entry_free(e);
        memset(e, 0, sizeof *e);
        e->logits = malloc(sizeof(float) * (size_t)(rows * cell->vocab));
        if (!e->logits) {
            tkp_error_set(err, "out of host memory for [%lld, %lld] logits", (long long)rows,
                          (long long)cell->vocab);
            return NULL;
        }
        if (load_rows(cell, rows, e->logits, err)) {
            free(e->logits);
            e->logits = NULL;
            return NULL;
        }
        snprintf(e->dataset, sizeof e->dataset, "%s", cell->dataset);
        e->seed = cell->seed;
        e->vocab = cell->vocab;
        e->rows = rows;
    }
    e->used = ++c->tick;
    return e;
}

static void cache_free(struct batch_cache *c)
{
    for (int i = 0; i < CACHE_ENTRIES; i++)
        cache_entry_free(&c->entry[i]);
}

/* What one timed launch needs. `call` comes first: the timer's plain launch callback,
 * tkp_instance_call_launch (apply.h), receives the whole struct as its struct tkp_instance_call. */
struct launch {
    struct tkp_instance_call call;
    struct tkp_gpu_timer *gpu; /* NULL on the CPU */
};

/* One timed launch: CUDA events (L2 flushed first when cold, graph replay when captured) on
 * the GPU, the host clock on the CPU. */
static int launch_timed(void *ctx, int cold, double *us, double *clock_mhz, struct tkp_error *err)
{
    struct launch *l = ctx;
    if (l->gpu)
        return tkp_gpu_time(l->gpu, cold, tkp_instance_call_launch, &l->call, us, clock_mhz,
                            err);
    double t0 = tkp_now_us();
    int rc = tkp_instance_call_launch(&l->call, err);
    *us = tkp_now_us() - t0;
    return rc;
}

/* After the warm-up, with graph = 1: capture the launch as a CUDA graph, whose replays the
 * timer then times (timing_graph.h: a failed capture is `unsupported`). */
static int capture_graph(void *ctx, struct tkp_error *err)
{
    struct launch *l = ctx;
    return tkp_graph_capture(l->gpu, tkp_instance_call_launch, &l->call, l->call.in->algo->name,
                             err);
}

/* A warm-up call that waits for the device, so that warm-up's `warmup_seconds` counts the GPU's
 * time: launches only enqueued for that long could hold seconds of work that the first timed
 * repetition then waits behind, past the cell's `max_seconds`, leaving it one sample (as a
 * peer's warm-up call, a whole repetition, always waited). */
static int warm_and_wait(void *ctx, struct tkp_error *err)
{
    struct launch *l = ctx;
    int rc = tkp_instance_call_launch(&l->call, err);
    return rc || !l->gpu ? rc : tkp_gpu_sync(err);
}

/* Time repetitions of one opened instance under the shared timer policy (timing.h). */
static int time_cell(struct tkp_instance *in, const struct tkp_io *io, const struct tkp_cell *cell,
                     struct tkp_gpu_timer *gpu, double max_clock_mhz, double **samples,
                     int64_t *n, int64_t *throttled, struct tkp_error *err)
{
    struct launch l = { { in, io }, gpu };
    struct tkp_rep_source src = { warm_and_wait, gpu && cell->graph ? capture_graph : NULL,
                                  launch_timed, &l };
    int rc = tkp_time_repetitions(&cell->timing, &src, max_clock_mhz, samples, n, throttled, err);
    if (gpu)
        tkp_graph_release(gpu);
    return rc;
}

/* What the whole run shares between cells. */
struct run_env {
    enum tkp_backend backend;
    double copy_gbps, max_clock_mhz;
    struct tkp_gpu_timer *gpu; /* NULL on the CPU */
    struct batch_cache cache;
    struct tkp_peer_session peers;
};

/* A module's cell: open it, stage the batch, time it, fetch and judge its outputs. */
static int run_module(const struct tkp_cell *cell, struct run_env *env, const struct tkp_batch *b,
                      uint8_t *kept, int64_t *drawn, int32_t draws, struct tkp_cell_row *row,
                      double **samples, int64_t *n_samples, struct tkp_judge_memo *memo,
                      struct tkp_error *err)
{
    const struct tkp_algo *a = cell->algo;
    enum tkp_backend backend = env->backend;
    struct tkp_problem pb = tkp_problem_of(b, backend, a->outputs, draws);
    struct tkp_instance in;
    int rc = tkp_instance_open(&in, a, cell->opts, &pb, err);
    if (rc)
        return rc;
    struct tkp_staged st;
    rc = tkp_stage(&st, b, backend, kept, drawn, draws, cell->seed, 0, err);
    if (!rc)
        rc = time_cell(&in, &st.io, cell, env->gpu, env->max_clock_mhz, samples, n_samples,
                       &row->throttled, err);
    if (!rc)
        rc = tkp_staged_fetch(&st, err);
    row->workspace_bytes = (int64_t)in.workspace_bytes;
    row->peak_device_bytes = (int64_t)(tkp_staged_bytes(&st) +
                                       (backend == TKP_GPU ? in.workspace_bytes : 0));
    tkp_staged_release(&st);
    if (!rc) {
        struct tkp_stats stats;
        tkp_instance_stats(&in, &stats);
        tkp_row_stats(row, a, &stats);
        /* a native peer's rows are reported, as a bridged peer's (docs/PEERS.md); one with no
         * outputs (a memory floor) has nothing to judge */
        int exact = !(a->flags & TKP_PEER) && !(a->approximate && a->approximate(cell->opts));
        if (a->outputs)
            rc = tkp_row_judge(row, b, kept, drawn, draws, cell->verify_rows, exact, memo, err);
    }
    tkp_instance_close(&in);
    return rc;
}

/* A peer's cell: the cached rows go to the worker as a file (written once per cache entry). */
static int run_peer(const struct tkp_cell *cell, struct run_env *env, struct cached_batch *e,
                    const struct tkp_batch *b, uint8_t *kept, int64_t *drawn, int32_t draws,
                    struct tkp_cell_row *row, double **samples, int64_t *n_samples,
                    struct tkp_error *err)
{
    if (!e->peer_file.path[0]) {
        int rc = tkp_peer_input_write(&env->peers, b, e->rows, &e->peer_file, err);
        if (rc)
            return rc;
    }
    return tkp_peer_cell(&env->peers, cell, b, &e->peer_file, kept, drawn, draws, row, samples,
                         n_samples, e->memo[b->dtype], err);
}

/* The cell's min_p on every row (min_p axis, when on) and, with row_keys = 1, each row's own
 * seed (the cell's seed + r) and offset 0 (docs/SEMANTICS.md, "Sampling: two keying modes").
 * 0 when out of memory. */
static int cell_sampling_rows(const struct tkp_cell *cell, struct tkp_batch *b)
{
    const size_t rows = (size_t)(cell->batch ? cell->batch : 1);
    b->min_p = tkp_minp_on(cell->min_p) ? malloc(sizeof(float) * rows) : NULL;
    b->seed = cell->row_keys ? malloc(sizeof(uint64_t) * rows) : NULL;
    b->offset = cell->row_keys ? calloc(rows, sizeof(uint64_t)) : NULL;
    for (int64_t r = 0; r < cell->batch; r++) {
        if (b->min_p)
            b->min_p[r] = cell->min_p;
        if (b->seed)
            b->seed[r] = cell->seed + (uint64_t)r;
    }
    return (!tkp_minp_on(cell->min_p) || b->min_p) && (!cell->row_keys || (b->seed && b->offset));
}

static void run_cell(const struct tkp_plan *plan, const struct tkp_cell *cell, struct run_env *env,
                     struct tkp_cell_row *row, double **samples, int64_t *n_samples)
{
    struct tkp_error err = { "" };
    *samples = NULL;
    *n_samples = 0;
    struct cached_batch *e = cache_get(&env->cache, plan, cell, &err);
    if (!e) { /* no logits: untimed (NaN times, cell_row.h) */
        const struct tkp_batch shape = { .batch = cell->batch, .vocab = cell->vocab,
                                         .dtype = (enum tkp_dtype)cell->dtype };
        tkp_row_times(row, &shape, 0, 0, NULL, 0, &cell->timing, env->copy_gbps);
        tkp_row_status(row, TKP_EINVAL, err.msg);
        return;
    }
    int32_t *k = malloc(sizeof(int32_t) * (size_t)cell->batch);
    float *p = malloc(sizeof(float) * (size_t)cell->batch);
    for (int64_t r = 0; k && p && r < cell->batch; r++) {
        k[r] = cell->k;
        p[r] = cell->p;
    }
    struct tkp_batch b = { cell->batch, cell->vocab, e->logits, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    const int sampling_ok = cell_sampling_rows(cell, &b);
    const struct tkp_algo *a = cell->algo;
    int32_t draws = (a->outputs & TKP_OUT_SAMPLE) ? cell->draws : 0;
    uint8_t *kept = (a->outputs & TKP_OUT_SET) ? malloc((size_t)(b.batch * b.vocab)) : NULL;
    int64_t *drawn = draws ? malloc(sizeof(int64_t) * (size_t)(b.batch * draws)) : NULL;
    int rc = typed_rows(e, cell, &b, &err); /* b's logits in the cell's element type */
    if (!rc && (!k || !p || !sampling_ok || ((a->outputs & TKP_OUT_SET) && !kept) ||
                (draws && !drawn))) {
        tkp_error_set(&err, "out of host memory for the outputs of [%lld, %lld] with %d draws",
                      (long long)b.batch, (long long)b.vocab, (int)draws);
        rc = TKP_ENOMEM;
    }
    if (!rc)
        rc = tkp_validate_rows(&b, &err);
    if (!rc && !e->memo[b.dtype]) /* none (out of memory): every row judged afresh */
        e->memo[b.dtype] = tkp_judge_memo_new(e->rows, MEMO_BYTES);
    if (!rc)
        rc = tkp_graph_refusal(cell->graph, env->backend, a->name, &err);
    if (!rc && tkp_peer_bridged(a))
        rc = run_peer(cell, env, e, &b, kept, drawn, draws, row, samples, n_samples, &err);
    else if (!rc)
        rc = run_module(cell, env, &b, kept, drawn, draws, row, samples, n_samples,
                        e->memo[b.dtype], &err);
    tkp_row_times(row, &b, kept != NULL, draws, *samples, *n_samples, &cell->timing,
                  env->copy_gbps);
    tkp_row_status(row, rc, err.msg);
    free(kept);
    free(drawn);
    free(k);
    free(p);
    free(b.min_p), free(b.seed), free(b.offset);
}

static void fill_row_identity(const struct tkp_cell *c, enum tkp_backend backend,
                              struct tkp_cell_row *row)
{
    memset(row, 0, sizeof *row);
    tkp_cell_key(c, backend, row->key);
    snprintf(row->algo, sizeof row->algo, "%s", c->algo->name);
    snprintf(row->variant, sizeof row->variant, "%s", c->variant);
    snprintf(row->options, sizeof row->options, "%s", c->options);
    snprintf(row->mode, sizeof row->mode, "%s", tkp_mode_name(c->k, c->p, c->vocab));
    snprintf(row->backend, sizeof row->backend, "%s", backend == TKP_GPU ? "gpu" : "cpu");
    tkp_axes_to_row(c, row);
    tkp_row_stats(row, NULL, NULL); /* NaN until a module reports them (peers never do) */
}

void tkp_plan_print(const struct tkp_plan *plan, FILE *out)
{
    fprintf(out, "%zu cells\n", plan->n);
    for (size_t i = 0; i < plan->n; i++) {
        const struct tkp_cell *c = &plan->cells[i];
        char line[sizeof c->variant + sizeof c->options + sizeof c->dataset + 512];
        snprintf(line, sizeof line, "%s\t%s%s%s\t%s", c->sweep, c->algo->name,
                 c->variant[0] ? ":" : "", c->variant, c->options);
        tkp_axes_append(c, TKP_AXES_PLAN, line, sizeof line);
        fprintf(out, "%s\t%s\n", line, tkp_mode_name(c->k, c->p, c->vocab));
    }
}

/* Is `name` one of the comma-separated names of `list`? */
static int in_list(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *at = list; *at; at += strcspn(at, ",") + (at[strcspn(at, ",")] != 0))
        if (strcspn(at, ",") == n && strncmp(at, name, n) == 0)
            return 1;
    return 0;
}

/* The name a cell is listed by in --only (its algorithm) and in --sweep (its sweep). */
static const char *cell_algo(const struct tkp_cell *c) { return c->algo->name; }
static const char *cell_sweep(const struct tkp_cell *c) { return c->sweep; }

/* --only / --sweep: keep the cells whose name_of is in `list`; a name no cell of the plan has is
 * an error (a typo would otherwise run nothing). */
static int keep_listed(struct tkp_plan *plan, const char *list, const char *flag,
                       const char *(*name_of)(const struct tkp_cell *), const char *config,
                       struct tkp_error *err)
{
    for (const char *at = list; *at; at += strcspn(at, ",") + (at[strcspn(at, ",")] != 0)) {
        const size_t len = strcspn(at, ",");
        int found = 0;
        for (size_t i = 0; i < plan->n && !found; i++)
            found = strlen(name_of(&plan->cells[i])) == len &&
                    strncmp(name_of(&plan->cells[i]), at, len) == 0;
        if (!found) {
            tkp_error_set(err, "%s %.*s: no cell of %s has it", flag, (int)len, at, config);
            return TKP_EINVAL;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (in_list(list, name_of(&plan->cells[i])))
            plan->cells[kept++] = plan->cells[i];
        else
            free(plan->cells[i].opts);
    }
    plan->n = kept;
    return TKP_OK;
}

/* --resume: the cells the file already holds are not run again (tkp_results_done). */
static void skip_done_cells(struct tkp_progress *prog, const struct tkp_plan *plan,
                            struct tkp_results *res, enum tkp_backend backend)
{
    for (size_t i = 0; i < plan->n; i++) {
        struct tkp_cell_row row;
        fill_row_identity(&plan->cells[i], backend, &row);
        if (tkp_results_done(res, plan->cells[i].sweep, row.key))
            tkp_progress_skip(prog, i);
    }
}

/* The cells this run runs: the config's, those of --only and --sweep, then of --shard (sp
 * describes the plan before that cut: shard.h). */
static int plan_of(const struct tkp_run_args *args, struct tkp_plan *plan,
                   struct tkp_shard_plan *sp, struct tkp_error *err)
{
    int rc = tkp_config_load(args->config, args->backend, plan, err);
    if (rc)
        return rc;
    char slug[64]; /* a GPU run: its device's dispatch table (docs/DESIGN.md, "Variants and the
                      dispatch table") */
    if (args->backend == TKP_GPU && tkp_dispatch_device_slug(slug, sizeof slug)) {
        if ((rc = tkp_plan_dispatch(plan, slug, tkp_dispatch_rows, tkp_dispatch_count, err))) {
            tkp_plan_free(plan);
            return rc;
        }
        tkp_plan_merge_duplicates(plan, args->config, stderr);
    }
    if ((args->only && (rc = keep_listed(plan, args->only, "--only", cell_algo, args->config,
                                          err)) != TKP_OK) ||
        (args->sweeps && (rc = keep_listed(plan, args->sweeps, "--sweep", cell_sweep,
                                            args->config, err)) != TKP_OK) ||
        (rc = tkp_shard_cut(plan, &args->shard, args->backend, sp, err)) != TKP_OK)
        tkp_plan_free(plan);
    return rc;
}

/* What a run holds from its plan to its end. Each step of tkp_run fills its part; run_close,
 * the one cleanup path, releases whatever was filled (each release takes an empty part). */
struct run_state {
    const struct tkp_run_args *args;
    struct tkp_plan plan;
    struct tkp_shard_plan sp; /* the plan before the --shard cut (plan_of) */
    struct run_env env;
    long long l2_bytes;
    struct tkp_results *res;
    struct tkp_run_identity id; /* the binary's and the config's (run_record.h) */
    int earlier_run; /* the file holds a run already (--resume) */
    int begun;       /* the resume checks passed: run_finish records the end */
    int run_index;   /* /runs/<run_index>; -1 when it could not be written */
    struct tkp_progress prog;
};

/* The GPU first: a machine without one must not leave an empty results file behind. */
static int open_gpu(struct run_state *s, struct tkp_error *err)
{
    struct tkp_gpu_props props;
    int rc = tkp_gpu_props(&props, err);
    if (!rc)
        rc = tkp_gpu_timer_open(&s->env.gpu, err);
    if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        tkp_error_set(err, "--backend gpu needs a usable GPU (%s); nothing was written to %s",
                      why, s->args->output);
        return rc;
    }
    s->env.max_clock_mhz = props.max_sm_clock_mhz;
    s->l2_bytes = props.l2_bytes;
    return TKP_OK;
}

/* Open the results file. --resume first reads a file it would continue in a child process as
 * export does (tkp_results_read_crashes): a corrupt file may crash libhdf5 itself, and this
 * process is about to open it. Then the file must hold this run's plan and shard. */
static int open_results(struct run_state *s, struct tkp_error *err)
{
    const struct tkp_run_args *args = s->args;
    struct stat st;
    struct tkp_error crash;
    if (args->resume && stat(args->output, &st) == 0 && st.st_size > TKP_PARTIAL_CREATE_BYTES &&
        tkp_results_read_crashes(args->output, &crash)) {
        tkp_error_set(err, "%s; not resumed", crash.msg);
        return TKP_EINVAL;
    }
    /* a fresh file is whole, or removed on a signal, when this returns (the store holds) */
    int rc = tkp_results_open(&s->res, args->output, args->resume, err);
    if (rc)
        return rc;
    tkp_run_identity_of(&s->plan, &s->id);
    char commit[8];
    s->earlier_run = tkp_results_attr_get(s->res, "git_commit", commit, sizeof commit) == 0;
    if (s->earlier_run &&
        ((rc = tkp_run_check_resume(s->res, args->output, &s->plan, &s->id, args->force, err)) ||
         (rc = tkp_shard_check_resume(s->res, args->output, &args->shard, &s->sp, err))))
        return rc;
    s->begun = 1;
    return TKP_OK;
}

/* Before the first cell: the provenance, the config texts and this run's record (/runs). */
static int write_start(struct run_state *s, struct tkp_error *err)
{
    const struct tkp_run_args *args = s->args;
    uint64_t texts = 0; /* the config texts, twice at most (/config and a forced run's record) */
    for (size_t i = 0; i < s->plan.n_files; i++)
        texts += 2 * strlen(s->plan.files[i].text);
    texts += args->shard.count ? 64 * (uint64_t)s->sp.n : 0; /* /plan, deflated */
    int rc = tkp_results_reserve(s->res, texts, err);
    if (rc == TKP_OK && (!args->resume || tkp_results_fresh(s->res)))
        tkp_provenance_write(s->res, args->backend, args->argc, args->argv, s->env.copy_gbps);
    for (size_t i = 0; i < s->plan.n_files && rc == TKP_OK; i++)
        if (tkp_results_config(s->res, s->plan.files[i].name, s->plan.files[i].text) != 0) {
            tkp_error_set(err, "%s: cannot write the config text of %s (disk full or an I/O "
                          "error?)", args->output, s->plan.files[i].name);
            rc = TKP_EINVAL;
        }
    if (rc)
        return rc;
    s->run_index = tkp_run_record_begin(s->res, &s->plan, &s->id, args->backend, !s->earlier_run,
                                        s->earlier_run && args->force, args->argc, args->argv);
    if (s->run_index >= 0 && tkp_shard_record(s->res, s->run_index, !s->earlier_run,
                                              &args->shard, &s->sp, args->device))
        s->run_index = -1;
    if (s->run_index < 0) {
        tkp_results_fail(s->res);
        tkp_error_set(err, "%s: cannot write the run record /runs (disk full or an I/O error?)",
                      args->output);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* write_start with signals held (interrupt.h): a stop in its writes would leave a torn file. */
static int record_start(struct run_state *s, struct tkp_error *err)
{
    tkp_interrupt_hold();
    const int rc = write_start(s, err);
    tkp_interrupt_release();
    return rc;
}

/* The cells, one results row each, with a progress line; --resume skips those done. */
static int run_cells(struct run_state *s, struct tkp_error *err)
{
    int rc = tkp_progress_init(&s->prog, &s->plan, err);
    if (rc)
        return rc;
    if (s->args->resume)
        skip_done_cells(&s->prog, &s->plan, s->res, s->args->backend);
    tkp_progress_report(&s->prog);
    for (size_t i = 0; i < s->plan.n && rc == TKP_OK; i++) {
        if (tkp_progress_skipped(&s->prog, i))
            continue;
        const struct tkp_cell *c = &s->plan.cells[i];
        struct tkp_cell_row row;
        fill_row_identity(c, s->args->backend, &row);
        row.run = s->run_index;
        double t0 = tkp_now_us(), *samples;
        int64_t n;
        run_cell(&s->plan, c, &s->env, &row, &samples, &n);
        row.cell_seconds = (tkp_now_us() - t0) * 1e-6;
        /* a signal now acts once the row is on disk (the store holds) */
        rc = tkp_results_append(s->res, c->sweep, &row, samples, n, err);
        free(samples);
        if (rc) /* not recorded: the error says why, and no progress line claims the cell */
            break;
        tkp_progress_done(&s->prog, i, &row, (tkp_now_us() - t0) * 1e-6, stderr);
        tkp_pause_point("cell-done");
    }
    return rc;
}

/* After the last cell (or the first fatal error): the end of the run's record, unless a write
 * failed (then nothing more goes in), and the summary. Returns the run's status. */
static int run_finish(struct run_state *s, int rc, struct tkp_error *err)
{
    if (s->prog.skipped_n)
        fprintf(stderr, "resume: %lld %s already done\n", (long long)s->prog.skipped_n,
                s->prog.skipped_n == 1 ? "cell was" : "cells were");
    struct tkp_error end_err = { "" };
    tkp_interrupt_hold(); /* the run's end and the close, whole or not begun */
    if (!tkp_results_failed(s->res) && tkp_results_reserve(s->res, 0, &end_err) != TKP_OK &&
        rc == TKP_OK) {
        *err = end_err;
        rc = TKP_EINVAL;
    }
    if (!tkp_results_failed(s->res)) {
        char now[64];
        tkp_utc_now(now, sizeof now);
        tkp_results_attr(s->res, "end_time", now);
        tkp_run_record_end(s->res, s->run_index);
    }
    tkp_results_close(s->res);
    s->res = NULL;
    tkp_interrupt_release();
    if (s->prog.plan)
        tkp_progress_summary(&s->prog, s->args->output, rc == TKP_OK, stderr);
    return rc;
}

/* The one cleanup path: whatever the run holds, in reverse order of its taking. */
static void run_close(struct run_state *s)
{
    tkp_results_close(s->res);
    tkp_progress_free(&s->prog);
    cache_free(&s->env.cache);
    tkp_peer_session_close(&s->env.peers);
    tkp_gpu_timer_close(s->env.gpu);
    tkp_plan_free(&s->plan);
    tkp_shard_plan_free(&s->sp);
}

int tkp_run(const struct tkp_run_args *args, struct tkp_error *err)
{
    struct run_state s = { .args = args, .env = { .backend = args->backend }, .run_index = -1 };
    int rc = plan_of(args, &s.plan, &s.sp, err);
    if (rc)
        return rc;
    /* --dry-run prints the plan (no logits file needed); a run first finds every file it reads */
    if (args->dry_run)
        tkp_plan_print(&s.plan, stdout);
    else if ((rc = tkp_plan_check_files(&s.plan, args->config, err)) == TKP_OK &&
             (args->backend != TKP_GPU || (rc = open_gpu(&s, err)) == TKP_OK) &&
             (rc = open_results(&s, err)) == TKP_OK) {
        tkp_peer_session_init(&s.env.peers, args->backend, s.l2_bytes, s.env.max_clock_mhz, s.res);
        s.env.copy_gbps = tkp_measure_copy_gbps(args->backend);
        rc = record_start(&s, err);
        if (rc == TKP_OK)
            rc = run_cells(&s, err);
    }
    if (s.begun)
        rc = run_finish(&s, rc, err);
    run_close(&s);
    return rc;
}

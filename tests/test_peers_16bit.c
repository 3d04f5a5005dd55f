/* test_peers_16bit.c — peers on 16-bit logits (docs/PEERS.md, "16-bit logits"): the file the
 * harness writes for a peer holds the encodings, the torch peers equal their float32 upcast,
 * a malformed file is a clear error, the dtype axis through `topkp run`, and what the library
 * peers and SGLang's call are handed. Skipped where /usr/bin/python3 lacks torch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../algos/tkp.h"
#include "axes.h"
#include "peer_cell.h"
#include "peer_worker.h"
#include "peers.h"
#include "timing.h"
#include "cli_util.h"
#include "test.h"
#include "peers_util.h"

/* ---- 16-bit logits (docs/PEERS.md, "16-bit logits"): the file the harness writes, what the
 * worker makes of it, and peers on 16-bit rows judged against their float32 upcast. ---- */

/* A batch of `rows` x `vocab` logits of `dtype`: the 16-bit encodings of pseudo-random values
 * (seeded) and, in row 1, the special values (+-0, +-inf, NaN, subnormal halves), with their
 * exact upcast in `up`, a float32 batch of the same values. */
struct half_case {
    struct tkp_batch b, up;
    uint16_t enc[8 * 512];
    float values[8 * 512];
    int32_t k[8];
    float p[8];
};

static uint16_t encode(enum tkp_dtype t, float x)
{
    return t == TKP_BF16 ? tkp_f32_to_bf16(x) : tkp_f32_to_f16(x);
}

static float decode(enum tkp_dtype t, uint16_t h)
{
    return t == TKP_BF16 ? tkp_bf16_to_f32(h) : tkp_f16_to_f32(h);
}

static void half_case_make(struct half_case *c, enum tkp_dtype t, int64_t rows, int64_t vocab,
                           int32_t k, float p, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    uint64_t x = seed;
    for (int64_t i = 0; i < rows * vocab; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(x >> 11) / 9007199254740992.0) * 12.0f - 6.0f;
        c->enc[i] = encode(t, v);
    }
    /* +0, -0, the smallest subnormals of each sign, the largest subnormal */
    const uint16_t f16_specials[] = { 0x0000, 0x8000, 0x0001, 0x8001, 0x03FF };
    const uint16_t bf16_specials[] = { 0x0000, 0x8000, 0x0001, 0x8001, 0x007F };
    for (int j = 0; j < 5 && vocab > 16; j++)
        c->enc[vocab + j] = t == TKP_F16 ? f16_specials[j] : bf16_specials[j];
    c->enc[vocab + 5] = encode(t, INFINITY);
    c->enc[vocab + 6] = encode(t, -INFINITY);
    c->enc[vocab + 7] = encode(t, NAN);
    for (int64_t i = 0; i < rows * vocab; i++)
        c->values[i] = decode(t, c->enc[i]);
    for (int64_t r = 0; r < rows; r++) {
        c->k[r] = k;
        c->p[r] = p;
    }
    c->b = (struct tkp_batch){ rows, vocab, c->values, c->k, c->p, t, c->enc, NULL, NULL, NULL };
    c->up = (struct tkp_batch){ rows, vocab, c->values, c->k, c->p, TKP_F32, NULL, NULL, NULL, NULL };
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (f)
        fclose(f);
    return n;
}

TEST(peers_16bit_input_file_holds_the_encodings)
{
    /* the harness's side alone: no worker starts */
    struct tkp_peer_session s;
    tkp_peer_session_init(&s, TKP_CPU, 0, 0, NULL);
    static struct half_case c;
    const enum tkp_dtype types[] = { TKP_BF16, TKP_F16, TKP_F32 };
    for (int i = 0; i < 3; i++) {
        enum tkp_dtype t = types[i] == TKP_F32 ? TKP_BF16 : types[i];
        half_case_make(&c, t, 6, 257, 50, 0.9f, 11 + i);
        const struct tkp_batch *b = types[i] == TKP_F32 ? &c.up : &c.b;
        struct tkp_batch first = *b;
        first.batch = 4; /* the cell's rows; the file holds the cache entry's 6 */
        struct tkp_peer_input in = { .path = "" };
        struct tkp_error err = { "" };
        REQUIRE(tkp_peer_input_write(&s, &first, 6, &in, &err) == TKP_OK, "%s", err.msg);
        const char *type = tkp_dtype_name(types[i]);
        size_t bytes = (size_t)tkp_dtype_size(types[i]) * 6 * 257;
        char suffix[16];
        snprintf(suffix, sizeof suffix, ".%s", type);
        CHECK(strlen(in.path) > strlen(suffix) &&
                  strcmp(in.path + strlen(in.path) - strlen(suffix), suffix) == 0,
              "%s: the file %s is not named for its type", type, in.path);
        CHECK(file_size(in.path) == (long)bytes, "%s: %s holds %ld bytes, expected %zu", type,
              in.path, file_size(in.path), bytes);
        static unsigned char back[8 * 512 * 4];
        FILE *f = fopen(in.path, "rb");
        size_t got = f ? fread(back, 1, sizeof back, f) : 0;
        if (f)
            fclose(f);
        CHECK(got == bytes && memcmp(back, tkp_batch_input(b), bytes) == 0,
              "%s: the file is not the batch's input bytes (seed %d)", type, 11 + i);
        CHECK(strcmp(in.typed[types[i]].path, in.path) == 0 && in.rows == 6 &&
                  in.typed[types[i]].crc == (uint32_t)crc32(0L, (const Bytef *)back, (uInt)bytes),
              "%s: file %s, %lld rows, CRC %u", type, in.typed[types[i]].path, (long long)in.rows,
              in.typed[types[i]].crc);
        for (int t = 0; t < TKP_DTYPE_COUNT; t++)
            CHECK(t == (int)types[i] || !in.typed[t].path[0], "%s: a %s file %s was written too",
                  type, tkp_dtype_name((enum tkp_dtype)t), in.typed[t].path);
        tkp_peer_input_remove(&in);
    }
    /* refusals, each naming what is wrong */
    struct tkp_peer_input in = { .path = "" };
    struct tkp_error err = { "" };
    struct tkp_batch bad = c.b;
    bad.dtype = (enum tkp_dtype)7;
    CHECK(tkp_peer_input_write(&s, &bad, 6, &in, &err) == TKP_EINVAL &&
              strstr(err.msg, "element type 7 is not one of f32, bf16, f16"), "%s", err.msg);
    bad = c.b;
    bad.logits16 = NULL;
    CHECK(tkp_peer_input_write(&s, &bad, 6, &in, &err) == TKP_EINVAL &&
              strstr(err.msg, "no bf16 values"), "%s", err.msg);
    CHECK(tkp_peer_input_write(&s, &c.b, 3, &in, &err) == TKP_EINVAL &&
              strstr(err.msg, "3 rows, fewer than the batch's 6"), "%s", err.msg);
    tkp_peer_session_close(&s);
}

/* A peer cell of `algo` on batch b (CPU), as the runner makes one: k, p and the seed from the
 * batch's first row; the kept mask or `draws` draws per row come back in kept / drawn. */
struct peer_run {
    struct tkp_cell_row row;
    int rc;
    struct tkp_error err;
};

static struct peer_run run_peer_cell(struct tkp_peer_session *s, const char *algo,
                                     const struct tkp_batch *b, struct tkp_peer_input *in,
                                     uint8_t *kept, int64_t *drawn, int32_t draws)
{
    struct tkp_cell cell;
    tkp_cell_defaults(&cell);
    cell.algo = tkp_algo_find(algo);
    snprintf(cell.dataset, sizeof cell.dataset, "test");
    cell.batch = b->batch;
    cell.vocab = b->vocab;
    cell.k = b->k[0];
    tkp_axis_store(tkp_axis_named("p"), &cell, b->p[0]);
    cell.draws = draws;
    cell.seed = 42;
    cell.dtype = (int)b->dtype;
    cell.verify_rows = (int)b->batch;
    cell.timing = (struct tkp_timing){ .warmup = 1, .min_reps = 1, .max_reps = 2,
                                       .max_seconds = 5, .timeout = 120 };
    struct peer_run r;
    memset(&r, 0, sizeof r);
    double *samples = NULL;
    int64_t n_samples = 0;
    r.rc = tkp_peer_cell(s, &cell, b, in, kept, drawn, draws, &r.row, &samples, &n_samples,
                         NULL, &r.err);
    free(samples);
    return r;
}

/* On a 16-bit row a peer reads the encodings, yet the oracle judges it on their upcast: the
 * torch peers (native on 16-bit) must keep and draw on a bf16 / f16 row exactly what they
 * keep and draw on the same values in float32, special values included (docs/PEERS.md,
 * "16-bit logits"). As in the runner, the float32 cell writes the input first and the 16-bit
 * cell adds the file of its type. */
TEST(peers_16bit_cells_equal_their_float32_upcast)
{
    if (!torch_ready())
        return;
    setenv("TOPKP_PYTHON", PYTHON, 1);
    struct tkp_peer_session s;
    tkp_peer_session_init(&s, TKP_CPU, 0, 0, NULL);
    static struct half_case c;
    static uint8_t kept16[8 * 512], kept32[8 * 512];
    static int64_t drawn16[8 * 16], drawn32[8 * 16];
    const char *algos[] = { "torch.sort", "torch.sample", "torch.topk" };
    const enum tkp_dtype types[] = { TKP_BF16, TKP_F16 };
    for (int t = 0; t < 2; t++) {
        uint64_t seed = 100 + (uint64_t)t;
        const char *type = tkp_dtype_name(types[t]);
        half_case_make(&c, types[t], 6, 500, 50, 0.9f, seed);
        struct tkp_peer_input in = { .path = "" };
        struct tkp_error err = { "" };
        REQUIRE(tkp_peer_input_write(&s, &c.up, 6, &in, &err) == TKP_OK, "%s", err.msg);
        for (int a = 0; a < 3; a++) {
            int sampler = a == 1;
            int32_t draws = sampler ? 16 : 0;
            for (int r = 0; r < 6; r++)
                c.p[r] = a == 2 ? 1.0f : 0.9f; /* torch.topk does top-k alone */
            struct peer_run r32 = run_peer_cell(&s, algos[a], &c.up, &in, sampler ? NULL : kept32,
                                                sampler ? drawn32 : NULL, draws);
            struct peer_run r16 = run_peer_cell(&s, algos[a], &c.b, &in, sampler ? NULL : kept16,
                                                sampler ? drawn16 : NULL, draws);
            if (a == 2 && types[t] == TKP_F16 && r16.rc == TKP_EUNSUPPORTED &&
                strstr(r16.err.msg, "not implemented for 'Half'"))
                continue; /* an older torch has no CPU kernel for float16 (torch 1.13: topk) */
            CHECK(r16.rc == TKP_OK && r32.rc == TKP_OK, "%s %s (seed %llu): rc %d (%s), f32 rc %d (%s)",
                  algos[a], type, (unsigned long long)seed, r16.rc, r16.err.msg, r32.rc, r32.err.msg);
            CHECK(r16.row.rows_checked == 6 && r16.row.rows_exact == r32.row.rows_exact,
                  "%s %s (seed %llu): %lld of %lld rows exact, %lld in float32", algos[a], type,
                  (unsigned long long)seed, (long long)r16.row.rows_exact,
                  (long long)r16.row.rows_checked, (long long)r32.row.rows_exact);
            if (sampler)
                CHECK(memcmp(drawn16, drawn32, sizeof(int64_t) * 6 * 16) == 0,
                      "%s %s (seed %llu): the draws differ from the float32 run's", algos[a], type,
                      (unsigned long long)seed);
            else
                CHECK(memcmp(kept16, kept32, 6 * 500) == 0,
                      "%s %s (seed %llu): the kept set differs from the float32 run's", algos[a],
                      type, (unsigned long long)seed);
        }
        const char *path16 = in.typed[types[t]].path;
        CHECK(strlen(path16) > 5 && strcmp(strrchr(path16, '.') + 1, type) == 0 &&
                  file_size(path16) == 2 * 6 * 500 && strcmp(in.path, in.typed[TKP_F32].path) == 0,
              "%s: the 16-bit cells' file is %s (%ld bytes), the input's first %s", type, path16,
              file_size(path16), in.path);
        tkp_peer_input_remove(&in);
        CHECK(file_size(path16) < 0 && !in.path[0], "%s: the input's files outlive it", type);
    }
    tkp_peer_session_close(&s);
}

/* Send the worker an `open` of `path` read as `dtype` with `batch` of its `rows` rows. */
static void open_request(struct tkp_peer_session *s, const char *path, const char *dtype,
                         int rows, int batch, struct tkp_peer_reply *reply, struct tkp_error *err)
{
    char line[1024];
    snprintf(line, sizeof line, "open\tpeer=torch.sort\tlogits=%s\tdtype=%s\trows=%d\tbatch=%d\t"
             "vocab=300\tk=50\tp=0.9\tdevice=cpu\tseed=1\tflush_bytes=0\toptions=", path, dtype,
             rows, batch);
    int rc = tkp_peer_request(&s->worker, line, tkp_now_us() + 120e6, NULL, NULL, reply, err);
    if (rc) {
        reply->status = "no reply";
        reply->n = 0;
    }
}

/* The worker's reply to an `open` of `path` as `dtype` is an error whose message holds `part`. */
#define EXPECT_OPEN_ERROR(s, path, dtype, rows, batch, part)                                     \
    do {                                                                                         \
        struct tkp_peer_reply reply_;                                                            \
        struct tkp_error err_ = { "" };                                                          \
        open_request(s, path, dtype, rows, batch, &reply_, &err_);                               \
        const char *msg_ = tkp_peer_field(&reply_, "msg");                                       \
        CHECK(strcmp(reply_.status, "error") == 0 && msg_ && strstr(msg_, part),                 \
              "open %s as %s (%d of %d rows): %s %s, expected an error with \"%s\"", path, dtype, \
              batch, rows, reply_.status, msg_ ? msg_ : err_.msg, part);                         \
    } while (0)

TEST(peers_16bit_malformed_input_is_a_clear_error)
{
    if (!torch_ready())
        return;
    setenv("TOPKP_PYTHON", PYTHON, 1);
    struct tkp_peer_session s;
    tkp_peer_session_init(&s, TKP_CPU, 0, 0, NULL);
    static struct half_case c, other;
    half_case_make(&c, TKP_BF16, 4, 300, 50, 0.9f, 7);
    struct tkp_peer_input in = { .path = "" }, cut = { .path = "" };
    struct tkp_error err = { "" };
    REQUIRE(tkp_peer_input_write(&s, &c.b, 4, &in, &err) == TKP_OK, "%s", err.msg);
    REQUIRE(tkp_peer_input_write(&s, &c.b, 4, &cut, &err) == TKP_OK, "%s", err.msg);
    /* the worker: a well-formed open answers the file's CRC and the peer's cast note */
    struct tkp_peer_reply reply;
    open_request(&s, in.path, "bf16", 4, 4, &reply, &err);
    const char *crc = tkp_peer_field(&reply, "crc"), *cast = tkp_peer_field(&reply, "cast");
    uint32_t want_crc = in.typed[TKP_BF16].crc;
    CHECK(strcmp(reply.status, "ok") == 0 && crc && strtoul(crc, NULL, 10) == want_crc,
          "open bf16: %s (crc %s, expected %u) %s", reply.status, crc ? crc : "none", want_crc,
          err.msg);
    CHECK(cast && strncmp(cast, "native: ", 8) == 0, "torch.sort's cast note: %s",
          cast ? cast : "none");
    EXPECT_OPEN_ERROR(&s, in.path, "f8", 4, 4, "element type 'f8' is not one of f32, bf16, f16");
    EXPECT_OPEN_ERROR(&s, in.path, "f16", 4, 4, "is named as a bf16 file but the request reads it as f16");
    EXPECT_OPEN_ERROR(&s, in.path, "bf16", 4, 5, "the cell reads 5 rows of its 4");
    /* a short file: the cell is an error naming the file, its size and the size expected */
    REQUIRE(truncate(cut.path, 2 * 4 * 300 - 2) == 0, "cannot shorten %s", cut.path);
    struct peer_run r = run_peer_cell(&s, "torch.sort", &c.b, &cut, (uint8_t[4 * 300]){ 0 }, NULL, 0);
    char want[700];
    snprintf(want, sizeof want, "%s: 2398 bytes, expected 4 x 300 bf16 values (2400 bytes)", cut.path);
    CHECK(r.rc == TKP_EINVAL && strstr(r.err.msg, want), "short file: rc %d, %s", r.rc, r.err.msg);
    /* the harness: a cell of more rows than the input holds is refused before the worker sees
     * it */
    half_case_make(&other, TKP_F16, 5, 300, 50, 0.9f, 7);
    r = run_peer_cell(&s, "torch.sort", &other.b, &in, (uint8_t[5 * 300]){ 0 }, NULL, 0);
    CHECK(r.rc == TKP_EINVAL && strstr(r.err.msg, "holds 4 rows; the cell reads 5"),
          "too many rows: rc %d, %s", r.rc, r.err.msg);
    CHECK(!in.typed[TKP_F16].path[0], "a refused cell wrote %s", in.typed[TKP_F16].path);
    tkp_peer_input_remove(&in);
    tkp_peer_input_remove(&cut);
    tkp_peer_session_close(&s);
    /* a peer that writes into its bf16 input: the 16-bit checksums see it */
    setenv("TOPKP_PEER_FAULT", "write:torch.sort", 1);
    tkp_peer_session_init(&s, TKP_CPU, 0, 0, NULL);
    struct tkp_peer_input w = { .path = "" };
    REQUIRE(tkp_peer_input_write(&s, &c.b, 4, &w, &err) == TKP_OK, "%s", err.msg);
    r = run_peer_cell(&s, "torch.sort", &c.b, &w, (uint8_t[4 * 300]){ 0 }, NULL, 0);
    unsetenv("TOPKP_PEER_FAULT");
    CHECK(r.rc == TKP_EINVAL && strstr(r.err.msg, "wrote into its input logits"),
          "a write into bf16 input: rc %d, %s", r.rc, r.err.msg);
    tkp_peer_input_remove(&w);
    tkp_peer_session_close(&s);
}

/* Through `topkp run` and the `dtype` axis (docs/DESIGN.md, the axes table): the torch peers'
 * f32, bf16 and f16 cells of one dataset (one cache entry, one peer input of three files) are
 * ok and exact, one row per type. */
TEST(peers_16bit_sweep_cells_are_exact)
{
    if (!torch_ready())
        return;
    char log[1 << 16];
    const char *cfg = "sweep \"half\" { algos = { \"torch.sort\", \"torch.sample\" },\n"
                      "  dataset = \"gaussian\", vocab = 3001, batch = 8, k = 50, p = 0.9,\n"
                      "  dtype = { \"f32\", \"bf16\", \"f16\" }, verify = 8, draws = 64,\n"
                      "  timing = { warmup = 1, min_reps = 2, max_reps = 2 } }\n";
    const char *path = write_scratch("half.lua", cfg);
    REQUIRE(run_cmd(log, sizeof log, "%s run %s --dry-run --backend cpu", topkp_bin(), path) == 0,
            "the dtype sweep does not plan: %s", log);
    REQUIRE(run_peers("half", "", cfg, log, sizeof log) == 0, "run failed: %s", log);
    int c_algo = tsv_column(tsv, "algo"), c_dtype = tsv_column(tsv, "dtype");
    int c_status = tsv_column(tsv, "status"), c_exact = tsv_column(tsv, "rows_exact");
    int c_message = tsv_column(tsv, "message");
    REQUIRE(c_dtype >= 0, "the export has no dtype column");
    int seen = 0;
    for (char *line = strchr(tsv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char algo[64], dtype[16], status[32], exact[32], message[300];
        tsv_field(line + 1, c_algo, algo, sizeof algo);
        tsv_field(line + 1, c_dtype, dtype, sizeof dtype);
        tsv_field(line + 1, c_status, status, sizeof status);
        tsv_field(line + 1, c_exact, exact, sizeof exact);
        tsv_field(line + 1, c_message, message, sizeof message);
        CHECK(strcmp(status, "ok") == 0 && !message[0] && atoi(exact) == 8,
              "%s %s: %s (%s), %s of 8 rows exact", algo, dtype, status, message, exact);
        int t = strcmp(dtype, "f32") == 0 ? 0 : strcmp(dtype, "bf16") == 0 ? 1 : 2;
        seen |= 1 << (t + (strcmp(algo, "torch.sort") == 0 ? 0 : 3));
    }
    CHECK(seen == 077, "expected one f32, one bf16 and one f16 cell per peer (seen %#o)", seen);
}

/* The library peers (GPU-only here) hand their library what their catalog entry says on a
 * 16-bit cell: the 16-bit logits (native) or float32 (peers/cast_check.py, with stand-ins for
 * the libraries). */
TEST(peers_library_calls_get_the_declared_element_type)
{
    if (!torch_ready())
        return;
    char out[1 << 14];
    int rc = run_cmd(out, sizeof out, PYTHON " peers/cast_check.py 2>&1");
    CHECK(rc == 0 && strstr(out, "ok 40"), "peers/cast_check.py (rc %d):\n%s", rc, out);
}

/* sglang.via_flashinfer makes the call SGLang's sampler makes on CUDA (docs/PEERS.md, "SGLang";
 * peers/sglang_check.py, with stand-ins for FlashInfer): the joint order, SGLang's top_ks and
 * top_ps, torch's softmax undone between repetitions, and `unsupported` where SGLang calls no
 * kernel. */
TEST(peers_sglang_makes_the_call_sglangs_sampler_makes)
{
    if (!torch_ready())
        return;
    char out[1 << 14];
    int rc = run_cmd(out, sizeof out, PYTHON " peers/sglang_check.py 2>&1");
    CHECK(rc == 0 && strstr(out, "ok 23"), "peers/sglang_check.py (rc %d):\n%s", rc, out);
}

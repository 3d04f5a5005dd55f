/* test_gpu_cake.c — cake's CUDA backend against its CPU reference, bit for bit: the adversarial
 * cases under forced cluster sizes and chained top-p (the defaults: tests/test_conformance.c),
 * large random batches at the benchmark shapes, rows that defeat the sampled candidate list
 * (ties everywhere, ascending ramps, few valid tokens) so that the streaming fallback and the
 * index-ordered tie collect run on every cluster size, and run-to-run determinism; each with
 * top-p fused into the cluster kernel and chained to a second kernel; more draws than one
 * warp takes; and bf16 / fp16 batches large enough that pass 1 streams several 16-byte-vector
 * steps, at odd V too (rows at 2-byte boundaries: scalar heads and tails of up to 7 tokens),
 * against the CPU on their float32 upcast (docs/SEMANTICS.md, "16-bit logits"). Every test
 * skips without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "gpu.h"
#include "logits_file.h"
#include "cases.h"
#include "test.h"

/* Draws per row; rank 0's step 5 runs on one warp for at most 32 (and <= 128 gathered
 * entries), on the whole CTA otherwise. */
static int32_t draws = 4;

static void free_batch(struct tkp_batch *b)
{
    free(b->logits);
    free(b->k);
    free(b->p);
    free(b->logits16);
}

/* The options of the GPU runs ("topp_launch=..."; NULL: the defaults). */
static const char *const *gpu_options;

/* Run cake on `backend`: kept masks and `draws` samples per row. */
static int run_cake(enum tkp_backend backend, const struct tkp_batch *b, uint64_t seed,
                    uint8_t *kept, int64_t *samples)
{
    struct tkp_error err = { "" };
    void *opts = module_options("cake", backend == TKP_GPU ? gpu_options : NULL);
    if (!opts)
        return TKP_EINVAL;
    int rc = tkp_apply(tkp_algo_find("cake"), opts, backend, b, kept, samples, draws, seed, 5,
                       NULL, &err);
    CHECK(rc == TKP_OK, "cake %s: %s", backend == TKP_GPU ? "GPU" : "CPU", err.msg);
    free(opts);
    return rc;
}

static const char *const chained[] = { "topp_launch=chained", NULL };

/* A test body with the chained launch on the GPU side. */
static void with_chained(void (*body)(void))
{
    gpu_options = chained;
    body();
    gpu_options = NULL;
}

/* CPU and GPU must agree on every kept byte and every draw of every row (the CPU runs on the
 * float32 values, the exact upcast of a 16-bit batch; the GPU reads the batch's own type). */
static void check_cpu_equals_gpu(const struct tkp_batch *b, const char *name, uint64_t seed)
{
    const size_t cells = (size_t)(b->batch * b->vocab), drawn = (size_t)(b->batch * draws);
    uint8_t *kc = malloc(cells), *kg = malloc(cells);
    int64_t *sc = malloc(sizeof(int64_t) * drawn), *sg = malloc(sizeof(int64_t) * drawn);
    struct tkp_batch up = *b;
    up.dtype = TKP_F32;
    up.logits16 = NULL;
    int rc = run_cake(TKP_CPU, &up, seed, kc, sc);
    if (rc == TKP_OK)
        rc = run_cake(TKP_GPU, b, seed, kg, sg);
    int64_t bad = 0;
    for (int64_t r = 0; rc == TKP_OK && r < b->batch; r++) {
        const uint8_t *c = kc + r * b->vocab, *g = kg + r * b->vocab;
        if (memcmp(c, g, (size_t)b->vocab)) {
            int64_t i = 0, nc = 0, ng = 0;
            while (c[i] == g[i])
                i++;
            for (int64_t j = 0; j < b->vocab; j++)
                nc += c[j], ng += g[j];
            if (bad++ < 3)
                test_fail(__FILE__, __LINE__,
                          "%s (seed %llu, B=%lld, V=%lld) row %lld k=%d p=%g: kept masks differ "
                          "(first at token %lld: CPU %u GPU %u; CPU keeps %lld, GPU %lld)",
                          name, (unsigned long long)seed, (long long)b->batch,
                          (long long)b->vocab, (long long)r, b->k[r], (double)b->p[r],
                          (long long)i, c[i], g[i], (long long)nc, (long long)ng);
        }
        if (memcmp(sc + r * draws, sg + r * draws, sizeof(int64_t) * draws) && bad++ < 3)
            test_fail(__FILE__, __LINE__,
                      "%s (seed %llu, B=%lld, V=%lld) row %lld k=%d p=%g: draws differ "
                      "(CPU %lld %lld, GPU %lld %lld)",
                      name, (unsigned long long)seed, (long long)b->batch, (long long)b->vocab,
                      (long long)r, b->k[r], (double)b->p[r], (long long)sc[r * draws],
                      (long long)sc[r * draws + 1], (long long)sg[r * draws],
                      (long long)sg[r * draws + 1]);
    }
    CHECK(bad == 0, "%s: %lld mismatches in total", name, (long long)bad);
    free(kc), free(kg), free(sc), free(sg);
}

/* Every cluster size on every adversarial case (slices of a few tokens, empty slices, ties
 * across slices): TKP_CAKE_CLUSTER forces the size the plan takes. */
TEST(gpu_cake_forced_clusters_match_cpu)
{
    static const char *const sizes[] = { "16", "8", "2", "1" };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        setenv("TKP_CAKE_CLUSTER", sizes[i], 1);
        check_gpu_matches_cpu("cake", NULL);
        unsetenv("TKP_CAKE_CLUSTER");
    }
}

/* The variant of 256 threads a CTA (algos/cake/README.md, "Two CTAs a SM"), at every cluster
 * size, on every adversarial case: TKP_CAKE_THREADS=256 selects it. */
TEST(gpu_cake_256_threads_match_cpu)
{
    static const char *const sizes[] = { "", "16", "4", "1" };
    setenv("TKP_CAKE_THREADS", "256", 1);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        setenv("TKP_CAKE_CLUSTER", sizes[i], 1);
        check_gpu_matches_cpu("cake", NULL);
        unsetenv("TKP_CAKE_CLUSTER");
    }
    unsetenv("TKP_CAKE_THREADS");
}

/* Top-p, mask and draws in a second, chained kernel (the default fuses them). */
TEST(gpu_cake_chained_matches_cpu_on_adversarial_cases)
{
    check_gpu_matches_cpu("cake", chained);
}

/* A gaussian batch with one (k, p) on every row. */
static void uniform_batch(struct test_case *c, uint64_t seed, int64_t batch, int64_t vocab,
                          int32_t k, float p)
{
    case_gaussian(c, seed, batch, vocab, 1.0f);
    for (int64_t r = 0; r < batch; r++) {
        c->b.k[r] = k;
        c->b.p[r] = p;
    }
}

static void benchmark_shapes(void);

TEST(gpu_cake_benchmark_shapes_match_cpu) { benchmark_shapes(); }

TEST(gpu_cake_benchmark_shapes_match_cpu_chained) { with_chained(benchmark_shapes); }

/* Gaussian batches with one (k, p) per batch, seeds seed0, seed0 + 1, ... */
struct shape {
    int64_t batch, vocab;
    int32_t k;
    float p;
};

static void check_shapes(const struct shape *shapes, size_t n, uint64_t seed0, const char *name)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    for (size_t i = 0; i < n && !test_failed(); i++) {
        struct test_case c;
        uint64_t seed = seed0 + i;
        uniform_batch(&c, seed, shapes[i].batch, shapes[i].vocab, shapes[i].k, shapes[i].p);
        check_cpu_equals_gpu(&c.b, name, seed);
        free_batch(&c.b);
    }
}

static void benchmark_shapes(void)
{
    static const struct shape shapes[] = {
        { 1, 128256, 50, 0.9f },    { 1, 262144, 1000, 0.9f },  { 16, 128256, 50, 0.9f },
        { 64, 128256, 50, 0.9f },   { 64, 262144, 1000, 0.9f }, { 128, 128256, 50, 0.9f },
        { 128, 128256, 1000, 0.9f }, { 128, 262144, 50, 0.9f }, { 128, 262144, 1000, 0.9f },
        { 1024, 32768, 50, 0.9f },
    };
    check_shapes(shapes, sizeof shapes / sizeof shapes[0], 100, "gaussian");
}

/* Rows with outliers (12 up at every 9973rd, 997th or 97th token), k = 1000 at V = 262144
 * (1300-1700 entries gathered): the kept set of a large slab is short, so rank 0 sorts only
 * its heavy top-digit buckets (ck_mass_tail), selecting the slab's n-th entry first; dense
 * outliers and p = 0.999 make the heavy part too long for one warp (the whole slab is sorted),
 * p = 0 keeps one token; k = 300 gathers too few for the mass tail (the sort). */
TEST(gpu_cake_peaked_large_slabs_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct shape shapes[] = { { 1, 262144, 1000, 0.9f }, { 16, 128256, 300, 0.9f },
                                           { 128, 262144, 1000, 0.5f },
                                           { 4, 262144, 1000, 0.999f },
                                           { 8, 262144, 1000, 0.0f } };
    static const int64_t every[] = { 9973, 997, 97 };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !test_failed(); i++)
        for (size_t e = 0; e < 3 && !test_failed(); e++) {
            struct test_case c;
            const uint64_t seed = 400 + 3 * i + e;
            uniform_batch(&c, seed, shapes[i].batch, shapes[i].vocab, shapes[i].k, shapes[i].p);
            for (int64_t r = 0; r < c.b.batch; r++)
                for (int64_t j = r % every[e]; j < c.b.vocab; j += every[e])
                    c.b.logits[r * c.b.vocab + j] += 12.0f;
            check_cpu_equals_gpu(&c.b, "peaked, large slab", seed);
            free_batch(&c.b);
        }
}

/* More draws per row than warp 0 takes: small slabs go through the whole CTA's step 5 too. */
TEST(gpu_cake_many_draws_match_cpu)
{
    static const struct shape shapes[] = { { 16, 128256, 50, 0.9f },
                                           { 4, 32768, 100, 0.5f },
                                           { 2, 262144, 1000, 0.95f } };
    draws = 100;
    check_shapes(shapes, sizeof shapes / sizeof shapes[0], 300, "gaussian, 100 draws");
    draws = 4;
}

TEST(gpu_cake_mixed_rows_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    /* The standard (k, p) mix, clamped to the slab, at cluster sizes 16 (8 where the device
     * refuses 16-CTA clusters), 4, 2 and 1. */
    static const int64_t batches[] = { 3, 20, 50, 130 };
    for (size_t i = 0; i < 4 && !test_failed(); i++) {
        struct test_case c;
        uint64_t seed = 200 + i;
        case_gaussian(&c, seed, batches[i], 100003, 2.0f);
        cases_fit(tkp_algo_find("cake"), &c, 1);
        check_cpu_equals_gpu(&c.b, "gaussian mix", seed);
        free_batch(&c.b);
    }
}

/* Rows that break the sampled candidate bound or force the index-ordered tie collect, and
 * rows of huge magnitudes whose sums overflow (pass 1's validity test adds values: in fp16
 * pairs, 30000 + 40000 is +inf, and +inf meets -inf in NaN), with -inf, NaN and +inf among
 * them. */
enum hard { H_EQUAL, H_RAMP_UP, H_COARSE, H_FEW_VALID, H_NAN_INF, H_TIE_AT_K, H_HUGE, H_COUNT };

static void fill_hard(float *x, int64_t vocab, enum hard h, uint64_t *s)
{
    for (int64_t i = 0; i < vocab; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t u = (uint32_t)(*s >> 33);
        const float g = (float)((int32_t)(u % 20001) - 10000) / 2500.0f; /* [-4, 4] */
        switch (h) {
        case H_EQUAL: x[i] = 0.25f; break;
        case H_RAMP_UP: x[i] = (float)i * 1e-3f; break;        /* the best tokens come last */
        case H_COARSE: x[i] = roundf(g * 2.0f) / 2.0f; break;  /* 17 values, huge ties */
        case H_FEW_VALID: x[i] = (u % 5000 == 0) ? g : -INFINITY; break;
        case H_NAN_INF:
            x[i] = u % 997 == 0 ? INFINITY : (u % 7 == 0 ? NAN : (u % 11 == 0 ? -INFINITY : g));
            break;
        case H_TIE_AT_K: x[i] = i % 1000 == 999 ? 3.0f : (u % 3 == 0 ? 1.0f : g - 5.0f); break;
        case H_HUGE: /* +-[30000, 65000] (sums overflow fp16 both ways); rare -inf, NaN, +inf */
            x[i] = u % 499 == 0 ? -INFINITY : u % 503 == 0 ? NAN : u % 4999 == 0 ? INFINITY
                 : (u % 3 == 0 ? -1.0f : 1.0f) * (30000.0f + (float)(u % 35001));
            break;
        default: break;
        }
    }
}

static void hard_rows_of(enum tkp_dtype t);
static void hard_rows(void) { hard_rows_of(TKP_F32); }

TEST(gpu_cake_hard_rows_match_cpu) { hard_rows(); }

TEST(gpu_cake_hard_rows_match_cpu_chained) { with_chained(hard_rows); }

/* The same rows rounded to bf16 and fp16 (fp16's largest finite value is 65504). */
TEST(gpu_cake_16bit_hard_rows_match_cpu)
{
    hard_rows_of(TKP_BF16);
    hard_rows_of(TKP_F16);
}

static void hard_rows_of(enum tkp_dtype t)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const int32_t ks[] = { 1, 7, 50, 333, 1000, 1024 };
    static const float ps[] = { 0.9f, 1.0f, 0.5f, 0.99f, 0.9f, 1e-7f };
    /* H_COUNT rows: clusters of 16 CTAs where the device runs them (else 8); 12 rows: 8;
     * 6 H_COUNT: 2 (or 4); 28 H_COUNT: 1 CTA per row, several waves */
    static const int64_t batches[] = { H_COUNT, 12, 6 * H_COUNT, 6 * H_COUNT * 28 / 6 };
    static const int64_t vocabs[] = { 262144, 50001 };
    for (int bi = 0; bi < 4 && !test_failed(); bi++)
        for (int vi = 0; vi < 2 && !test_failed(); vi++) {
            const int64_t B = batches[bi], V = vocabs[vi];
            struct tkp_batch b = { B, V, malloc(sizeof(float) * (size_t)(B * V)),
                                   malloc(sizeof(int32_t) * (size_t)B),
                                   malloc(sizeof(float) * (size_t)B), TKP_F32, NULL, NULL, NULL, NULL };
            uint64_t s = 77 + (uint64_t)(bi * 2 + vi);
            for (int64_t r = 0; r < B; r++) {
                fill_hard(b.logits + r * V, V, (enum hard)((r / 6 + r) % H_COUNT), &s);
                b.k[r] = ks[r % 6];
                b.p[r] = ps[r % 6];
            }
            struct tkp_error err = { "" };
            if (t != TKP_F32 && tkp_batch_to_dtype(&b, t, &err) != TKP_OK)
                test_fail(__FILE__, __LINE__, "%s", err.msg);
            else
                check_cpu_equals_gpu(&b, t == TKP_F32 ? "hard rows" : tkp_dtype_name(t),
                                     (uint64_t)(bi * 2 + vi));
            free_batch(&b);
        }
}

/* 16-bit batches: one CTA per row with slices of several steps (B = 128, 1024), clusters at
 * B = 1 and 16, odd V (every other row at a 2-byte boundary), a row of one vector and a tail. */
TEST(gpu_cake_16bit_streaming_matches_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct shape shapes[] = {
        { 128, 262144, 1000, 0.9f }, { 1024, 32768, 50, 0.9f }, { 130, 262143, 50, 0.9f },
        { 1, 262144, 1000, 0.9f },   { 16, 128257, 50, 0.95f }, { 200, 50001, 7, 1.0f },
        { 300, 15, 3, 0.9f },
    };
    static const enum tkp_dtype types[] = { TKP_BF16, TKP_F16 };
    for (int ti = 0; ti < 2 && !test_failed(); ti++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !test_failed(); i++) {
            struct test_case c;
            const uint64_t seed = 300 + i;
            uniform_batch(&c, seed, shapes[i].batch, shapes[i].vocab, shapes[i].k,
                          shapes[i].p);
            case_to_dtype(&c, types[ti]);
            check_cpu_equals_gpu(&c.b, ti ? "f16 gaussian" : "bf16 gaussian", seed);
            free_batch(&c.b);
        }
}

TEST(gpu_cake_two_runs_are_identical)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    struct test_case c;
    uniform_batch(&c, 9, 128, 128256, 1000, 0.9f);
    for (int64_t r = 0; r < c.b.batch; r += 3) /* some boundary ties too */
        for (int64_t i = 0; i < c.b.vocab; i++)
            c.b.logits[r * c.b.vocab + i] = roundf(c.b.logits[r * c.b.vocab + i] * 4.0f);
    const size_t cells = (size_t)(c.b.batch * c.b.vocab), drawn = (size_t)(c.b.batch * draws);
    uint8_t *k1 = malloc(cells), *k2 = malloc(cells);
    int64_t *s1 = malloc(sizeof(int64_t) * drawn), *s2 = malloc(sizeof(int64_t) * drawn);
    /* fused twice, then chained: every run gives the same masks and draws */
    int rc = run_cake(TKP_GPU, &c.b, 3, k1, s1);
    for (int i = 0; i < 2 && rc == TKP_OK; i++) {
        gpu_options = i ? chained : NULL;
        rc = run_cake(TKP_GPU, &c.b, 3, k2, s2);
        CHECK(rc != TKP_OK || memcmp(k1, k2, cells) == 0,
              "two GPU runs (%s) gave different kept masks", i ? "fused, chained" : "fused");
        CHECK(rc != TKP_OK || memcmp(s1, s2, sizeof(int64_t) * drawn) == 0,
              "two GPU runs (%s) gave different samples", i ? "fused, chained" : "fused");
    }
    gpu_options = NULL;
    free(k1), free(k2), free(s1), free(s2);
    free_batch(&c.b);
}

TEST(gpu_cake_refuses_sets_beyond_the_slab)
{
    /* Runs without a GPU too: supports() alone decides. */
    const struct tkp_algo *a = tkp_algo_find("cake");
    REQUIRE(a, "no module cake");
    CHECK(a->max_set == 1024, "cake max_set is %lld, not 1024", (long long)a->max_set);
    if (!(tkp_algo_backends(a) & TKP_GPU)) {
        test_skip("built without CUDA");
        return;
    }
    struct tkp_problem pb = { .batch = 2, .vocab = 4096, .stride = 4096, .backend = TKP_GPU,
                              .ops = TKP_TOPK, .outputs = TKP_OUT_SET, .k_max = 10,
                              .set_max = 4096 };
    const char *why = NULL;
    CHECK(!a->supports(&pb, NULL, &why), "a row with top-k off and V = 4096 accepted on the GPU");
    CHECK(why && strstr(why, "1024"), "the refusal does not name the limit: %s", why ? why : "");
    pb.set_max = 1024;
    pb.k_max = 1024;
    CHECK(a->supports(&pb, NULL, &why), "k = 1024 refused on the GPU: %s", why);
}

/* test_gpu_rejection.c — the rejection sampler's CUDA backend against its CPU reference, bit
 * for bit: the adversarial cases on the round-budget fallback and forced cluster sizes, checked
 * against the oracle too (the defaults and the TV test: tests/test_conformance.c), large
 * gaussian batches at the benchmark shapes (peaked k=50 p=0.9, flat p=0.9, the mixed (k, p)
 * rows, odd V and unaligned rows, batch 1 with many CTAs per row, batch 1024 with 1024- and
 * 256-thread CTAs), bf16 and fp16 batches whose rows start at 16-, 8- and 2-byte boundaries (the 16-byte,
 * 8-byte and scalar loads of the one-CTA kernels) against the CPU on their float32 upcast
 * (docs/SEMANTICS.md, "16-bit logits"), the statistics, run-to-run determinism and CUDA-graph
 * replay, and errors for the experiments' knobs out of range. Every test skips without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/rejection/rejection_impl.h"
#include "gpu.h"
#ifdef TKP_HAVE_CUDA
#include "../algos/rejection/rejection_gpu.h"
#endif
#include "cases.h"
#include "test.h"

/* A rejection statistic's total in a struct tkp_stats (rejection_impl.h, REJ_STATS). */
#define STAT(s, id) ((s).total[REJ_STAT_##id])

static const char *const budget_1[] = { "max_rounds=1", NULL };
static const char *const budget_2[] = { "max_rounds=2", NULL };

static void free_case(struct test_case *c)
{
    free(c->b.logits);
    free(c->b.k);
    free(c->b.p);
    free(c->b.logits16);
}

static int run(enum tkp_backend backend, const struct tkp_batch *b, const char *const *options,
               int32_t draws, uint64_t seed, uint64_t offset, int64_t *out, struct tkp_stats *st)
{
    struct tkp_error err = { "" };
    void *opts = module_options("rejection", options);
    int rc = tkp_apply(tkp_algo_find("rejection"), opts, backend, b, NULL, out, draws, seed,
                       offset, st, &err);
    CHECK(rc == TKP_OK, "rejection %s (B=%lld V=%lld): %s", backend == TKP_GPU ? "GPU" : "CPU",
          (long long)b->batch, (long long)b->vocab, err.msg);
    free(opts);
    return rc;
}

/* CPU and GPU draws of a batch must agree bit for bit; so must the statistics (the GPU's
 * describe its latest run, the CPU's its only run). The CPU runs on the float32 values (the
 * exact upcast of a 16-bit batch), the GPU on the batch's own type. */
static void check_batch(const char *name, const struct tkp_batch *b, const char *const *options,
                        int32_t draws, uint64_t seed)
{
    const size_t n = (size_t)(b->batch * draws);
    int64_t *sc = malloc(sizeof(int64_t) * n), *sg = malloc(sizeof(int64_t) * n);
    struct tkp_stats stc, stg;
    struct tkp_batch up = *b;
    up.dtype = TKP_F32;
    up.logits16 = NULL;
    int rc = run(TKP_CPU, &up, options, draws, seed, 7, sc, &stc);
    if (rc == TKP_OK)
        rc = run(TKP_GPU, b, options, draws, seed, 7, sg, &stg);
    int64_t bad = 0;
    for (int64_t r = 0; rc == TKP_OK && r < b->batch; r++) {
        const int64_t *c = sc + r * draws, *g = sg + r * draws;
        if (memcmp(c, g, sizeof(int64_t) * (size_t)draws) == 0)
            continue;
        int32_t d = 0;
        while (c[d] == g[d])
            d++;
        if (bad++ < 4)
            test_fail(__FILE__, __LINE__,
                      "%s (seed %llu, B=%lld, V=%lld) row %lld k=%d p=%g: draw %d differs "
                      "(CPU %lld, GPU %lld)",
                      name, (unsigned long long)seed, (long long)b->batch, (long long)b->vocab,
                      (long long)r, b->k[r], (double)b->p[r], d, (long long)c[d],
                      (long long)g[d]);
    }
    CHECK(bad == 0, "%s: %lld rows differ in total", name, (long long)bad);
    if (rc == TKP_OK) {
        CHECK(stc.rows == stg.rows, "%s: rows CPU %lld GPU %lld", name, (long long)stc.rows,
              (long long)stg.rows);
        CHECK(STAT(stc, ROUNDS) == STAT(stg, ROUNDS), "%s: rounds CPU %.0f GPU %.0f", name,
              STAT(stc, ROUNDS), STAT(stg, ROUNDS));
        CHECK(STAT(stc, FALLBACKS) == STAT(stg, FALLBACKS), "%s: fallbacks CPU %lld GPU %lld", name,
              (long long)STAT(stc, FALLBACKS), (long long)STAT(stg, FALLBACKS));
        CHECK(STAT(stc, ITERATIONS) == STAT(stg, ITERATIONS), "%s: iterations CPU %.0f GPU %.0f",
              name, STAT(stc, ITERATIONS), STAT(stg, ITERATIONS));
    }
    free(sc);
    free(sg);
}

/* Every row of a gaussian case gets the same (k, p); peaked rows get outliers 12 up. */
static void gaussian(struct test_case *c, uint64_t seed, int64_t batch, int64_t vocab,
                     float scale, int peaked, int32_t k, float p)
{
    case_gaussian(c, seed, batch, vocab, scale);
    for (int64_t r = 0; r < batch; r++) {
        c->b.k[r] = k;
        c->b.p[r] = p;
        if (peaked)
            for (int64_t i = r % 97; i < vocab; i += 97)
                c->b.logits[r * vocab + i] += 12.0f;
    }
}

TEST(gpu_cases_rejection_fallback_matches_cpu)
{
    check_gpu_matches_cpu("rejection", budget_1);
    check_gpu_matches_cpu("rejection", budget_2);
}

/* The cluster variant on every adversarial case (tiny and empty slices, NaN, +-inf, ties,
 * odd V, the round-budget fallback), whatever the vocabulary: TKP_REJ_CLUSTER forces the
 * cluster size the plan takes. */
TEST(gpu_cases_rejection_forced_clusters_match_cpu)
{
    static const char *const sizes[] = { "16", "8", "2" };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        setenv("TKP_REJ_CLUSTER", sizes[i], 1);
        check_gpu_matches_cpu("rejection", NULL);
        check_gpu_matches_cpu("rejection", budget_1);
        unsetenv("TKP_REJ_CLUSTER");
    }
}

/* Gaussian batches (see gaussian()), each checked with check_batch under its own seed; with
 * one_cta, one CTA per row is forced (TKP_REJ_CLUSTER=1). */
struct shape {
    const char *name;
    uint64_t seed;
    int64_t batch, vocab;
    float scale;
    int peaked;
    int32_t k;
    float p;
    int32_t draws;
    int one_cta;
};

/* check_batch on each shape's gaussian batch (one CTA per row forced where one_cta). */
static void check_shapes(const struct shape *shapes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct shape *sh = &shapes[i];
        struct test_case c;
        if (sh->one_cta)
            setenv("TKP_REJ_CLUSTER", "1", 1);
        gaussian(&c, sh->seed, sh->batch, sh->vocab, sh->scale, sh->peaked, sh->k, sh->p);
        check_batch(sh->name, &c.b, NULL, sh->draws, sh->seed);
        free_case(&c);
        unsetenv("TKP_REJ_CLUSTER");
    }
}

/* The benchmark shapes (V = 128256, B = 32, cluster or one CTA per row as the plan takes them);
 * one 1024-thread CTA per row where pass 1 lists the tokens at or above its floor: peaked and
 * flat rows whose list holds the k-th key's bucket (no gathering pass), flat rows of 400000
 * whose list overflows (the gathering pass again), a large k; and 512-thread CTAs (B > SMs),
 * which list too (gpu_rejection_512_threads_list_match_cpu has their overflow). */
TEST(gpu_rejection_benchmark_shapes_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct shape shapes[] = {
        { "peaked k=50 p=0.9", 101, 32, 128256, 3.0f, 1, 50, 0.9f, 4, 0 },
        { "flat k=50 p=0.9", 102, 32, 128256, 1.0f, 0, 50, 0.9f, 4, 0 },
        { "flat p=0.9", 103, 32, 128256, 1.0f, 0, 0, 0.9f, 4, 0 },
        { "flat k=50", 104, 16, 128256, 1.0f, 0, 50, 1.0f, 4, 0 },
        { "one CTA, peaked k=50 p=0.9", 121, 6, 128256, 3.0f, 1, 50, 0.9f, 8, 1 },
        { "one CTA, flat k=50 p=0.9", 122, 6, 128256, 1.0f, 0, 50, 0.9f, 8, 1 },
        { "one CTA, flat V=400000 (list overflows)", 123, 4, 400000, 1.0f, 0, 50, 0.9f, 4, 1 },
        { "one CTA, flat k=700 p=0.95", 124, 6, 128256, 1.0f, 0, 700, 0.95f, 4, 1 },
        { "B=300 flat k=50 p=0.9 (512 threads)", 125, 300, 20000, 1.0f, 0, 50, 0.9f, 1, 0 },
    };
    check_shapes(shapes, sizeof shapes / sizeof shapes[0]);
}

/* The first candidate sets of this module's rules (README, "First candidate sets"): top-k alone
 * from its top-k set, top-p alone from the mass floor (peaked: a handful of tokens in shared
 * memory; flat: the list of pass 2 overflows and a gathering pass runs, or the set is too big
 * for shared memory), and k = 1000, whose k-th key's bucket is crowded on N(0, 1) rows (the
 * radix select over the row, then a gathering pass of the set); each on a cluster per row, one
 * 1024-thread CTA per row and 512-thread CTAs (top-p alone there by TKP_REJ_THREADS); k = 200
 * on V = 40000, whose ~250 gathered tokens a row fall on both sides of kCountedGather. */
TEST(gpu_rejection_first_candidate_sets_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct shape shapes[] = {
        { "top-k 50 alone, flat", 131, 8, 128256, 1.0f, 0, 50, 1.0f, 4, 0 },
        { "one CTA, top-k 50 alone, peaked", 132, 6, 128256, 3.0f, 1, 50, 1.0f, 4, 1 },
        { "top-p 0.9 alone, peaked", 133, 8, 151936, 2.0f, 1, 0, 0.9f, 4, 0 },
        { "one CTA, top-p 0.9 alone, sigma 2", 134, 6, 151936, 2.0f, 0, 0, 0.9f, 4, 1 },
        { "one CTA, top-p 0.5 alone, flat", 135, 6, 128256, 1.0f, 0, 0, 0.5f, 4, 1 },
        { "k=1000 p=0.9, flat", 136, 4, 128256, 1.0f, 0, 1000, 0.9f, 4, 0 },
        { "one CTA, k=1000 alone, flat", 137, 6, 128256, 1.0f, 0, 1000, 1.0f, 4, 1 },
        { "one CTA, k=1000 p=0.9, flat", 138, 6, 262144, 1.0f, 0, 1000, 0.9f, 4, 1 },
        { "B=300 k=1000 p=0.9 (512 threads)", 139, 300, 20000, 1.0f, 0, 1000, 0.9f, 1, 0 },
        { "B=300 top-p 0.9 alone (1024 threads)", 140, 300, 20000, 2.0f, 1, 0, 0.9f, 1, 0 },
        { "B=300 top-k 50 alone (512 threads)", 141, 300, 20000, 1.0f, 0, 50, 1.0f, 1, 0 },
        /* ~248 +- 16 gathered tokens a row, about a third past kCountedGather: rows by counting
         * and rows by the radix select in one batch */
        { "k=200 p=0.9 flat V=40000 (counted and radix rows)", 143, 32, 40000, 1.0f, 0, 200,
          0.9f, 4, 0 },
        { "one CTA, k=200 p=0.9 flat V=40000 (counted and radix rows)", 144, 32, 40000, 1.0f, 0,
          200, 0.9f, 4, 1 },
    };
    check_shapes(shapes, sizeof shapes / sizeof shapes[0]);
    /* top-p alone on 512-thread CTAs, which auto no longer takes (rej_auto_threads) */
    setenv("TKP_REJ_THREADS", "512", 1);
    static const struct shape forced[] = {
        { "B=300 top-p 0.9 alone (512 threads forced)", 142, 300, 20000, 2.0f, 1, 0, 0.9f, 1,
          0 },
    };
    check_shapes(forced, sizeof forced / sizeof forced[0]);
    unsetenv("TKP_REJ_THREADS");
}

TEST(gpu_rejection_mixed_rows_odd_vocab_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    struct test_case c;
    /* The standard (k, p) mix; V odd, so every other row starts off 16-byte alignment. */
    case_gaussian(&c, 105, 34, 32003, 2.0f);
    check_batch("mixed V=32003", &c.b, NULL, 6, 105);
    check_batch("mixed V=32003 budget 2", &c.b, budget_2, 6, 105);
    free_case(&c);
    case_gaussian(&c, 106, 17, 4098, 1.0f); /* V % 4 == 2: scalar tail */
    check_batch("mixed V=4098", &c.b, NULL, 6, 106);
    free_case(&c);
    case_gaussian(&c, 107, 17, 5, 1.0f); /* one partial tile */
    check_batch("mixed V=5", &c.b, NULL, 6, 107);
    free_case(&c);
}

/* 16-bit rows in the one-CTA kernels: V = 128256 (every row at a 16-byte boundary: pass 1's
 * chunk and scan_fast, listed), 128260 (odd rows at 8 bytes), 50001 (odd rows at 2 bytes), a
 * flat row of 400000 whose list overflows, 512-thread CTAs at B = 264 and 256-thread ones at
 * B = 1024 (rej_auto_threads). */
TEST(gpu_rejection_16bit_one_cta_matches_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct {
        int64_t batch, vocab;
        float scale;
        int peaked;
        int32_t k;
        float p;
    } shapes[] = {
        { 32, 128256, 3.0f, 1, 50, 0.9f }, { 16, 128260, 1.0f, 0, 50, 0.9f },
        { 12, 50001, 2.0f, 1, 0, 0.9f },   { 4, 400000, 1.0f, 0, 0, 0.9f },
        { 264, 8192, 1.0f, 0, 50, 0.9f },   { 1024, 8192, 1.0f, 0, 50, 0.9f },
    };
    static const enum tkp_dtype types[] = { TKP_BF16, TKP_F16 };
    setenv("TKP_REJ_CLUSTER", "1", 1);
    for (int ti = 0; ti < 2 && !test_failed(); ti++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !test_failed(); i++) {
            struct test_case c;
            const uint64_t seed = 400 + i;
            gaussian(&c, seed, shapes[i].batch, shapes[i].vocab, shapes[i].scale,
                     shapes[i].peaked, shapes[i].k, shapes[i].p);
            case_to_dtype(&c, types[ti]);
            check_batch(ti ? "f16 one CTA" : "bf16 one CTA", &c.b, NULL, 2, seed);
            free_case(&c);
        }
    unsetenv("TKP_REJ_CLUSTER");
}

TEST(gpu_rejection_batch_1_and_1024_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    struct test_case c;
    /* One row, many draws: several CTAs per row. */
    gaussian(&c, 108, 1, 128256, 3.0f, 1, 50, 0.9f);
    check_batch("B=1 peaked, 300 draws", &c.b, NULL, 300, 108);
    free_case(&c);
    gaussian(&c, 109, 1, 128256, 1.0f, 0, 0, 0.9f);
    check_batch("B=1 flat p=0.9", &c.b, NULL, 1, 109);
    free_case(&c);
    /* Many rows: 1024-thread CTAs (the mixed rows, some with top-p alone), 256 (k = 50). */
    case_gaussian(&c, 110, 1024, 8000, 2.0f);
    check_batch("B=1024 mixed V=8000", &c.b, NULL, 2, 110);
    free_case(&c);
    gaussian(&c, 111, 1024, 8192, 1.0f, 0, 50, 0.9f);
    check_batch("B=1024 flat k=50 p=0.9 V=8192", &c.b, NULL, 1, 111);
    free_case(&c);
}

/* One CTA per row (TKP_REJ_CLUSTER=1) on every adversarial case, and on two flat rows whose
 * pass-1 list (without the big one: TKP_REJ_BIG_LIST=0) overflows while the k-th key's bucket
 * and above fit (k = 1500, V = 40000: the gathering pass after a listed pass 1; with the big
 * list, the same rows from it), small enough for the sanitizers, which run every
 * gpu_cases_ test; the benchmark shapes test has the larger rows). */
TEST(gpu_cases_rejection_one_cta_per_row_match_cpu)
{
    setenv("TKP_REJ_CLUSTER", "1", 1);
    check_gpu_matches_cpu("rejection", NULL);
    if (tkp_gpu_present()) {
        struct test_case c;
        gaussian(&c, 126, 2, 40000, 1.0f, 0, 1500, 0.9f);
        check_batch("one CTA, big list, k=1500 V=40000", &c.b, NULL, 4, 126);
        setenv("TKP_REJ_BIG_LIST", "0", 1); /* the list of kGather tokens overflows */
        check_batch("one CTA, list overflow, k=1500 V=40000", &c.b, NULL, 4, 126);
        unsetenv("TKP_REJ_BIG_LIST");
        free_case(&c);
    }
    unsetenv("TKP_REJ_CLUSTER");
}

/* The 256-thread kernel (option threads=256; TKP_REJ_THREADS=256 here, with one CTA a row:
 * TKP_REJ_CLUSTER=1), four CTAs a SM: every adversarial case with and without the round
 * budget's fallback, in float32 and bfloat16, and flat rows past pass 1's first chunk whose
 * list overflows (k = 1500, V = 40000) at B = 264. */
TEST(gpu_cases_rejection_256_threads_match_cpu)
{
    setenv("TKP_REJ_CLUSTER", "1", 1);
    setenv("TKP_REJ_THREADS", "256", 1);
    check_gpu_matches_cpu("rejection", NULL);
    check_gpu_matches_cpu("rejection", budget_1);
    check_gpu_matches_cpu_dtype("rejection", NULL, TKP_BF16);
    if (tkp_gpu_present()) {
        struct test_case c;
        gaussian(&c, 131, 264, 40000, 1.0f, 0, 1500, 0.9f);
        check_batch("256 threads, list overflow, B=264 k=1500 V=40000", &c.b, NULL, 2, 131);
        free_case(&c);
        gaussian(&c, 132, 264, 20000, 1.0f, 0, 50, 0.9f);
        check_batch("256 threads, listed, B=264 k=50 V=20000", &c.b, NULL, 2, 132);
        free_case(&c);
    }
    unsetenv("TKP_REJ_THREADS");
    unsetenv("TKP_REJ_CLUSTER");
}

/* The 512-thread kernel (B > SMs: 264 rows, two per SM on the H200) with rows longer than
 * pass 1's first chunk (16384 tokens): flat rows whose list holds the k-th key's bucket
 * (k = 50), and rows whose list overflows while the k-th key's bucket and above fit the
 * gathering buffer (k = 1500, V = 40000: the gathering pass after a listed pass 1, the branch
 * of the race fixed in cdb3d99, on ~99% of such rows in a simulation of the rule; at V = 20000
 * most rows take the crowded-bucket radix select instead): that list is the 2048 tokens of the
 * gathering buffer (TKP_REJ_BIG_LIST=0); with k = 1500 the plan gives pass 1 its big list,
 * which holds these rows, so the shapes run both ways. Small enough for the sanitizers
 * (make test-gpu runs them on it). */
TEST(gpu_rejection_512_threads_list_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct shape shapes[] = {
        { "B=264 flat k=50 p=0.9 (listed)", 127, 264, 20000, 1.0f, 0, 50, 0.9f, 1, 0 },
        { "B=264 flat k=1500 p=0.9 V=40000 (list overflows)", 128, 264, 40000, 1.0f, 0, 1500,
          0.9f, 1, 0 },
    };
#ifdef TKP_HAVE_CUDA /* (a GPU is present only in CUDA builds) */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct shape *sh = &shapes[i];
        const struct tkp_problem pb = { .batch = sh->batch, .vocab = sh->vocab,
                                        .stride = sh->vocab, .backend = TKP_GPU,
                                        .ops = TKP_TOPK_TOPP, .outputs = TKP_OUT_SAMPLE,
                                        .k_max = sh->k, .draws = sh->draws, .set_max = sh->k };
        struct rej_gpu_plan plan;
        rej_gpu_plan_for(&pb, 0, 0, &plan);
        REQUIRE(plan.threads == 512 && plan.cluster == 1,
                "%s is planned on %d threads, cluster %d: not the 512-thread kernel this tests "
                "(a device with more than 263 SMs, or fewer than 67?)", sh->name, plan.threads,
                plan.cluster);
    }
#endif
    check_shapes(shapes, sizeof shapes / sizeof shapes[0]);
    /* k = 1500 plans pass 1's big list, which holds these rows' tokens above the bound: the
     * overflow above is the list of kGather tokens, as without the big list */
    setenv("TKP_REJ_BIG_LIST", "0", 1);
    check_shapes(shapes, sizeof shapes / sizeof shapes[0]);
    unsetenv("TKP_REJ_BIG_LIST");
}

/* The k-th key selected from pass 1's big list (README "The k-th key from pass 1's list"), one
 * CTA a row, each shape with and without the big list (TKP_REJ_BIG_LIST=0); the plan must give
 * the list its room and the expected threads (1024 up to B = #SMs, 512 past: a 132-SM card).
 * On flat N(0, 1) rows at k = 1000 the k-th key's bucket and above hold ~2900 tokens (crowded):
 * the select from the list and the first set copied out of it (float32 at 1024 and 512
 * threads, bf16, NaN and -inf tokens); k = 1500 at V = 100003 and integer rows at V = 128256
 * (~8500 ties at K): the select from the list, the rounds over the row (a first set past 1024);
 * integer rows at k = 2000, V = 262144: a crowded bucket whose ~17500 tokens overflow the big
 * list (the radix select over the row, as before). Uncrowded from the big list: peaked k = 600
 * and k = 1000 top-k alone at V = 262144 (a list of several chunks). min-p: 0.15 on k = 1000
 * folds a crowded k into an uncrowded k' (~800; the count over the row, then the list), 0.3 on
 * k = 700 folds k' (~90) from the list itself (prepare_row's listed branch). */
TEST(gpu_rejection_kth_from_big_list_matches_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const struct {
        const char *name;
        int64_t batch, vocab;
        int peaked, dtype16, coarse, holes;
        int32_t k;
        float p, min_p;
        int threads;
    } shapes[] = {
        { "flat k=1000 p=0.9", 8, 128256, 0, 0, 0, 0, 1000, 0.9f, 0, 1024 },
        { "peaked k=600 p=0.9", 8, 128256, 1, 0, 0, 0, 600, 0.9f, 0, 1024 },
        { "flat k=1000 top-k alone V=262144", 4, 262144, 0, 0, 0, 0, 1000, 1.0f, 0, 1024 },
        { "flat k=1500 p=0.95 V=100003", 8, 100003, 0, 0, 0, 0, 1500, 0.95f, 0, 1024 },
        { "flat k=1000 p=0.9, 512 threads", 200, 128256, 0, 0, 0, 0, 1000, 0.9f, 0, 512 },
        { "bf16 flat k=1000 p=0.9", 8, 128256, 0, 1, 0, 0, 1000, 0.9f, 0, 1024 },
        { "flat k=1000 p=0.9 min-p 0.15", 8, 128256, 0, 0, 0, 0, 1000, 0.9f, 0.15f, 1024 },
        { "flat k=700 p=0.9 min-p 0.3", 8, 128256, 0, 0, 0, 0, 700, 0.9f, 0.3f, 1024 },
        { "flat k=1000 p=0.9, NaN and -inf holes", 8, 128256, 0, 0, 0, 1, 1000, 0.9f, 0, 1024 },
        { "integers k=1000 (~8500 ties at K)", 4, 128256, 0, 0, 1, 0, 1000, 0.9f, 0, 1024 },
        { "integers k=2000 V=262144 (the big list overflows)", 4, 262144, 0, 0, 1, 0, 2000, 0.9f,
          0, 1024 },
    };
    setenv("TKP_REJ_CLUSTER", "1", 1);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !test_failed(); i++) {
        struct test_case c;
        const uint64_t seed = 700 + i;
        gaussian(&c, seed, shapes[i].batch, shapes[i].vocab, 1.0f, shapes[i].peaked,
                 shapes[i].k, shapes[i].p);
        for (int64_t j = 0; shapes[i].coarse && j < c.b.batch * c.b.vocab; j++)
            c.b.logits[j] = roundf(c.b.logits[j]);
        for (int64_t j = 0; shapes[i].holes && j < c.b.batch * c.b.vocab; j++)
            if (j % 7 == 0 || j % 11 == 0) /* invalid tokens: order key 0, never listed */
                c.b.logits[j] = j % 7 == 0 ? NAN : -INFINITY;
        float *min_p = NULL;
        if (shapes[i].min_p > 0) {
            min_p = malloc(sizeof(float) * (size_t)c.b.batch);
            for (int64_t r = 0; r < c.b.batch; r++)
                min_p[r] = shapes[i].min_p;
            c.b.min_p = min_p;
        }
        if (shapes[i].dtype16)
            case_to_dtype(&c, TKP_BF16);
#ifdef TKP_HAVE_CUDA /* (a GPU is present only in CUDA builds) */
        const struct tkp_problem pb = { .batch = c.b.batch, .vocab = c.b.vocab,
                                        .stride = c.b.vocab, .backend = TKP_GPU,
                                        .ops = TKP_TOPK_TOPP, .outputs = TKP_OUT_SAMPLE,
                                        .k_max = shapes[i].k, .draws = 2,
                                        .set_max = shapes[i].k, .dtype = c.b.dtype };
        struct rej_gpu_plan plan;
        rej_gpu_plan_for(&pb, 1, 0, &plan);
        CHECK(plan.list_cap == 16 * plan.threads && plan.smem == 8 * (size_t)plan.list_cap &&
                  plan.threads == shapes[i].threads,
              "%s: planned with a list of %d tokens (%zu bytes) on %d threads, want the big list "
              "on %d (a card of other than 132 SMs?)", shapes[i].name, plan.list_cap, plan.smem,
              plan.threads, shapes[i].threads);
#endif
        check_batch(shapes[i].name, &c.b, NULL, 2, seed);
        setenv("TKP_REJ_BIG_LIST", "0", 1);
        check_batch(shapes[i].name, &c.b, NULL, 2, seed);
        unsetenv("TKP_REJ_BIG_LIST");
        free(min_p);
        free_case(&c);
    }
    unsetenv("TKP_REJ_CLUSTER");
}

TEST(gpu_rejection_same_seed_same_draws)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    struct test_case c;
    const int32_t draws = 16;
    case_gaussian(&c, 112, 40, 20000, 1.5f);
    const size_t bytes = sizeof(int64_t) * (size_t)(c.b.batch * draws);
    int64_t *a = malloc(bytes), *b = malloc(bytes), *other = malloc(bytes);
    int rc = run(TKP_GPU, &c.b, NULL, draws, 5, 9, a, NULL);
    if (rc == TKP_OK)
        rc = run(TKP_GPU, &c.b, NULL, draws, 5, 9, b, NULL);
    if (rc == TKP_OK)
        rc = run(TKP_GPU, &c.b, NULL, draws, 5, 10, other, NULL);
    if (rc == TKP_OK) {
        CHECK(memcmp(a, b, bytes) == 0, "seed 5 offset 9 gave different GPU draws on two runs");
        CHECK(memcmp(a, other, bytes) != 0, "offsets 9 and 10 gave the same GPU draws");
    }
    free(a);
    free(b);
    free(other);
    free_case(&c);
}

/* The experiments' environment knobs take only their documented values: any other is an error
 * that names the variable and the value, not a silent default. */
TEST(gpu_rejection_bad_knob_values_are_errors)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const char *const knobs[][2] = {
        { "TKP_REJ_BIG_LIST", "yes" }, { "TKP_REJ_BIG_LIST", "2" }, { "TKP_REJ_THREADS", "300" },
    };
    struct test_case c;
    case_gaussian(&c, 113, 2, 4096, 1.0f);
    int64_t out[2];
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        struct tkp_error err = { "" };
        char want[64];
        snprintf(want, sizeof want, "%s=%s", knobs[i][0], knobs[i][1]);
        setenv(knobs[i][0], knobs[i][1], 1);
        void *opts = module_options("rejection", NULL);
        const int rc = tkp_apply(tkp_algo_find("rejection"), opts, TKP_GPU, &c.b, NULL, out, 1,
                                 1, 0, NULL, &err);
        unsetenv(knobs[i][0]);
        free(opts);
        CHECK(rc == TKP_EINVAL && strstr(err.msg, want),
              "%s: rc %d, message \"%s\" (want TKP_EINVAL naming it)", want, rc, err.msg);
    }
    free_case(&c);
}

/* Capture one run into a CUDA graph, replay it twice over poisoned outputs: the same draws as
 * the CPU each time. */
TEST(gpu_rejection_graph_replay_matches_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    struct test_case c;
    const int32_t draws = 3;
    case_gaussian(&c, 113, 24, 50000, 2.0f);
    const size_t n = (size_t)(c.b.batch * draws);
    int64_t *sc = malloc(sizeof(int64_t) * n), *sg = malloc(sizeof(int64_t) * n);
    int rc = run(TKP_CPU, &c.b, NULL, draws, 3, 4, sc, NULL);
    struct tkp_error err = { "" };
    struct tkp_problem pb = tkp_problem_of(&c.b, TKP_GPU, TKP_OUT_SAMPLE, draws);
    struct tkp_instance in;
    struct tkp_staged st;
    struct tkp_gpu_timer *timer = NULL;
    int opened = 0, staged = 0;
    if (rc == TKP_OK && (rc = tkp_instance_open(&in, tkp_algo_find("rejection"), NULL, &pb,
                                                &err)) == TKP_OK)
        opened = 1;
    if (rc == TKP_OK && (rc = tkp_stage(&st, &c.b, TKP_GPU, NULL, sg, draws, 3, 4, &err)) ==
                            TKP_OK)
        staged = 1;
    if (rc == TKP_OK)
        rc = tkp_gpu_timer_open(&timer, &err);
    struct tkp_instance_call ctx = { &in, &st.io };
    if (rc == TKP_OK)
        rc = tkp_gpu_timer_use_graph(timer, tkp_instance_call_launch, &ctx, &err);
    for (int rep = 0; rc == TKP_OK && rep < 2; rep++) {
        double us, mhz;
        memset(sg, 0, sizeof(int64_t) * n);
        rc = tkp_gpu_fill(st.io.samples, 0xAB, sizeof(int64_t) * n, &err);
        if (rc == TKP_OK)
            rc = tkp_gpu_time(timer, 0, tkp_instance_call_launch, &ctx, &us, &mhz, &err);
        if (rc == TKP_OK)
            rc = tkp_staged_fetch(&st, &err);
        if (rc == TKP_OK)
            CHECK(memcmp(sc, sg, sizeof(int64_t) * n) == 0,
                  "graph replay %d: GPU draws differ from the CPU's", rep);
    }
    CHECK(rc == TKP_OK, "graph replay: %s", err.msg);
    tkp_gpu_timer_close(timer);
    if (staged)
        tkp_staged_release(&st);
    if (opened)
        tkp_instance_close(&in);
    free(sc);
    free(sg);
    free_case(&c);
}

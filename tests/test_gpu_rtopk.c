/* test_gpu_rtopk.c — rtopk on the GPU: kept masks bit for bit equal to the CPU backend's, and
 * the same search iteration count, on the adversarial cases with max_iter=2 (the exact default:
 * tests/test_conformance.c), on hostile values for the midpoint arithmetic, and on shapes that
 * exercise every launch path: many small rows (one CTA per row), large rows split over a
 * cluster (cached in shared memory, ties ranked across CTAs), unaligned rows (odd vocabulary),
 * batch 1, and rows too long for the cluster's shared memory (streamed). Every test skips when
 * no GPU is present. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/rtopk/rtopk_impl.h"
#include "gpu.h"
#include "cases.h"
#include "test.h"

/* A rtopk statistic's total in a struct tkp_stats (rtopk_impl.h, RTOPK_STATS). */
#define STAT(s, id) ((s).total[RTOPK_STAT_##id])

static const char *const early2[] = { "max_iter=2", NULL };
static const char *const early7[] = { "max_iter=7", NULL };

static void free_case(struct test_case *c)
{
    free(c->b.logits);
    free(c->b.k);
    free(c->b.p);
}

/* Run rtopk (options: "name=value" strings, NULL-terminated, or NULL) on both backends over
 * batch b with top-p off, and require identical masks and iteration counts. */
static void gpu_vs_cpu(const char *const *options, struct tkp_batch *b, const char *what,
                       uint64_t seed)
{
    const struct tkp_algo *a = tkp_algo_find("rtopk");
    REQUIRE(a, "no module rtopk");
    struct tkp_error err = { "" };
    void *opts = calloc(1, a->opts_size);
    tkp_options_defaults(a, opts);
    for (int i = 0; options && options[i]; i++)
        REQUIRE(tkp_option_assign(a, opts, options[i], &err) == TKP_OK, "%s", err.msg);
    for (int64_t r = 0; r < b->batch; r++)
        b->p[r] = 1.0f;
    const size_t cells = (size_t)(b->batch * b->vocab);
    uint8_t *kc = malloc(cells), *kg = malloc(cells);
    struct tkp_stats sc, sg;
    int rc = tkp_apply(a, opts, TKP_CPU, b, kc, NULL, 0, seed, 0, &sc, &err);
    CHECK(rc == TKP_OK, "%s: CPU: %s", what, err.msg);
    if (rc == TKP_OK) {
        rc = tkp_apply(a, opts, TKP_GPU, b, kg, NULL, 0, seed, 0, &sg, &err);
        CHECK(rc == TKP_OK, "%s: GPU: %s", what, err.msg);
    }
    int reported = 0;
    for (int64_t r = 0; rc == TKP_OK && r < b->batch && reported < 5; r++)
        if (memcmp(kc + r * b->vocab, kg + r * b->vocab, (size_t)b->vocab)) {
            int64_t i = 0;
            while (kc[r * b->vocab + i] == kg[r * b->vocab + i])
                i++;
            test_fail(__FILE__, __LINE__,
                      "%s (seed %llu%s%s) row %lld k=%d: mask differs first at token %lld "
                      "(CPU %d, GPU %d)",
                      what, (unsigned long long)seed, options ? ", " : "",
                      options ? options[0] : "", (long long)r, b->k[r], (long long)i,
                      kc[r * b->vocab + i], kg[r * b->vocab + i]);
            reported++;
        }
    if (rc == TKP_OK) {
        CHECK(sg.rows == b->batch, "%s: GPU stats count %lld rows, want %lld", what,
              (long long)sg.rows, (long long)b->batch);
        CHECK(STAT(sg, ITERATIONS) == STAT(sc, ITERATIONS),
              "%s (seed %llu): GPU %.0f iterations, CPU %.0f", what, (unsigned long long)seed,
              STAT(sg, ITERATIONS), STAT(sc, ITERATIONS));
    }
    free(kc);
    free(kg);
    free(opts);
}

TEST(gpu_rtopk_early_stop_matches_cpu_on_adversarial_cases)
{
    check_gpu_matches_cpu("rtopk", early2);
}

/* The acceptance shape: B = 64, V = 128256 (a cluster of CTAs per row), k = 50; also
 * k = 1000 and the early stop. */
TEST(gpu_rtopk_large_gaussian_matches_cpu)
{
    REQUIRE_GPU();
    const int32_t ks[3] = { 50, 1000, 50 };
    for (int i = 0; i < 3 && !test_failed(); i++) {
        struct test_case c;
        case_gaussian(&c, 4242 + (uint64_t)i, 64, 128256, 1.0f);
        for (int64_t r = 0; r < c.b.batch; r++)
            c.b.k[r] = ks[i];
        gpu_vs_cpu(i == 2 ? early2 : NULL, &c.b, "gaussian B=64 V=128256", c.seed);
        free_case(&c);
    }
}

/* Row patterns for large rows. */
enum shape_fill { F_GAUSS, F_INTS, F_EQUAL, F_NEGINF99, F_BF16ISH };

static void fill_rows(struct test_case *c, enum shape_fill f, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < c->b.batch * c->b.vocab; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
        float g = c->b.logits[i];
        switch (f) {
        case F_GAUSS: break;
        case F_INTS: c->b.logits[i] = (float)(s % 4); break;
        case F_EQUAL: c->b.logits[i] = 0.25f; break;
        case F_NEGINF99: c->b.logits[i] = s % 100 ? -INFINITY : g; break;
        case F_BF16ISH: c->b.logits[i] = roundf(g * 8.0f) / 8.0f; break;
        }
    }
}

/* Shapes and patterns that take every path of the kernel: batch 1 (the widest cluster),
 * unaligned rows (V odd), ties at the k-th value ranked across the CTAs of a cluster (small
 * integers, all equal: the threshold is the maximum), fewer valid tokens than k, rows too
 * long to cache (streamed), and many short rows. */
TEST(gpu_rtopk_shapes_and_ties_match_cpu)
{
    REQUIRE_GPU();
    static const struct {
        int64_t batch, vocab;
        enum shape_fill fill;
        int32_t k;
    } shapes[] = {
        { 1, 262144, F_GAUSS, 50 },    { 3, 128257, F_GAUSS, 50 },
        { 3, 128257, F_INTS, 50000 },  { 2, 131072, F_EQUAL, 70000 },
        { 5, 100003, F_NEGINF99, 2000 }, { 4, 100003, F_NEGINF99, 500 },
        { 3, 99999, F_BF16ISH, 4321 }, { 2, 600001, F_GAUSS, 777 },
        { 2, 600001, F_INTS, 300000 }, { 1024, 1000, F_GAUSS, 50 },
        { 1, 32768, F_INTS, 9000 },    { 7, 5, F_GAUSS, 2 },
    };
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int i = 0; i < n && !test_failed(); i++) {
        struct test_case c;
        case_gaussian(&c, 500 + (uint64_t)i, shapes[i].batch, shapes[i].vocab, 1.0f);
        fill_rows(&c, shapes[i].fill, c.seed);
        for (int64_t r = 0; r < c.b.batch; r++) /* vary k a little across rows */
            c.b.k[r] = shapes[i].k + (int32_t)(r % 3);
        char what[96];
        snprintf(what, sizeof what, "shape %d: B=%lld V=%lld k=%d", i,
                 (long long)shapes[i].batch, (long long)shapes[i].vocab, shapes[i].k);
        gpu_vs_cpu(NULL, &c.b, what, c.seed);
        gpu_vs_cpu(early2, &c.b, what, c.seed);
        gpu_vs_cpu(early7, &c.b, what, c.seed);
        free_case(&c);
    }
}

/* Hostile values for the midpoint (as in test_rtopk.c): huge, tiny and subnormal magnitudes,
 * signed zeros, +inf, -inf and NaN from a small pool, so that ties are frequent; k spread
 * over 1..V-1. */
TEST(gpu_rtopk_hostile_values_match_cpu)
{
    REQUIRE_GPU();
    static const float pool[] = {
        FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN, 0.0f, -0.0f, FLT_MIN, -FLT_MIN,
        FLT_TRUE_MIN, -FLT_TRUE_MIN, 3 * FLT_TRUE_MIN, 5 * FLT_TRUE_MIN, 1e38f, -1e38f,
        1.0f, 1.0000001f, 0.99999994f, 3.4028233e38f, 1e-30f,
    };
    const int64_t pool_n = (int64_t)(sizeof pool / sizeof pool[0]);
    for (uint64_t seed = 1; seed <= 120 && !test_failed(); seed++) {
        struct test_case c;
        int64_t vocab = seed % 10 == 0 ? 40000 + (int64_t)seed : 1 + (int64_t)(seed * 13 % 200);
        case_gaussian(&c, seed, 12, vocab, 1.0f);
        for (int64_t r = 0; r < c.b.batch; r++)
            if (r % 4 && vocab > 1) {
                float g = c.b.logits[r * vocab];
                c.b.k[r] = 1 + (int32_t)((int64_t)(fabsf(g) * 7919.0f) % (vocab - 1));
            }
        int64_t span = 2 + (int64_t)(seed % (uint64_t)(pool_n - 1));
        for (int64_t i = 0; i < c.b.batch * vocab; i++)
            c.b.logits[i] = pool[(int64_t)(fabsf(c.b.logits[i]) * 1000.0f) % span];
        gpu_vs_cpu(NULL, &c.b, "hostile", seed);
        gpu_vs_cpu(early2, &c.b, "hostile", seed);
        free_case(&c);
    }
}

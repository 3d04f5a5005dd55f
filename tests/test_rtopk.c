/* test_rtopk.c — rtopk on the CPU: the exact default against the oracle and bitwise against
 * naive_sort (adversarial cases with top-p turned off, random and hostile rows, hand-made
 * ties), and the early-stop variant: declared approximate, still exactly min(k, valid) kept. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/rtopk/rtopk_impl.h"
#include "../harness/verify/oracle.h"
#include "cases.h"
#include "test.h"

/* A rtopk statistic's total in a struct tkp_stats (rtopk_impl.h, RTOPK_STATS). */
#define STAT(s, id) ((s).total[RTOPK_STAT_##id])

/* Totals of one checked batch or of several. */
struct tally {
    int64_t rows, exact;
    double iterations;
};

/* Options of module `a` from "name=value" strings (NULL-terminated, or NULL for the
 * defaults), allocated; NULL with a message when one is rejected. */
static void *module_opts(const struct tkp_algo *a, const char *const *options,
                         struct tkp_error *err)
{
    void *opts = calloc(1, a->opts_size);
    tkp_options_defaults(a, opts);
    for (int i = 0; options && options[i]; i++)
        if (tkp_option_assign(a, opts, options[i], err) != TKP_OK) {
            free(opts);
            return NULL;
        }
    return opts;
}

/* Run rtopk (options "name=value", NULL-terminated, or NULL) on batch `b` with top-p turned
 * off on every row. Every row must keep exactly min(k, valid) valid tokens; when `strict`,
 * every row must also be accepted by the oracle and equal naive_sort's mask bit for bit.
 * Adds to *t; failures name `what` and `seed`. */
static void check_topk_batch(const char *const *options, int strict, const char *what,
                             uint64_t seed, struct tkp_batch *b, struct tally *t)
{
    const struct tkp_algo *a = tkp_algo_find("rtopk");
    struct tkp_error err = { "" };
    void *opts = module_opts(a, options, &err);
    REQUIRE(opts, "rtopk options: %s", err.msg);
    for (int64_t r = 0; r < b->batch; r++)
        b->p[r] = 1.0f;

    const size_t cells = (size_t)(b->batch * b->vocab);
    uint8_t *kept = malloc(cells), *ref = malloc(cells);
    struct tkp_stats st;
    int rc = tkp_apply(a, opts, TKP_CPU, b, kept, NULL, 0, seed, 0, &st, &err);
    CHECK(rc == TKP_OK, "rtopk on %s (seed %llu): %s", what, (unsigned long long)seed, err.msg);
    if (rc == TKP_OK && strict) {
        rc = tkp_apply(tkp_algo_find("naive_sort"), NULL, TKP_CPU, b, ref, NULL, 0, seed, 0,
                       NULL, &err);
        CHECK(rc == TKP_OK, "naive_sort on %s (seed %llu): %s", what, (unsigned long long)seed,
              err.msg);
    }
    for (int64_t r = 0; rc == TKP_OK && r < b->batch; r++) {
        const float *x = b->logits + r * b->vocab;
        const uint8_t *row = kept + r * b->vocab;
        struct oracle_row o;
        char why[256];
        case_oracle_row(&o, b, r);
        int64_t n = 0, invalid = 0;
        for (int64_t i = 0; i < b->vocab; i++) {
            n += row[i];
            invalid += row[i] && (isnan(x[i]) || x[i] == -INFINITY);
        }
        CHECK(n == o.set_size && invalid == 0,
              "%s (seed %llu) row %lld k=%d: kept %lld tokens (%lld invalid), want %lld", what,
              (unsigned long long)seed, (long long)r, b->k[r], (long long)n,
              (long long)invalid, (long long)o.set_size);
        int ok = oracle_check_kept(&o, row, why, sizeof why);
        if (strict) {
            CHECK(ok, "%s (seed %llu) row %lld k=%d: %s", what, (unsigned long long)seed,
                  (long long)r, b->k[r], why);
            CHECK(memcmp(row, ref + r * b->vocab, (size_t)b->vocab) == 0,
                  "%s (seed %llu) row %lld k=%d: mask differs from naive_sort", what,
                  (unsigned long long)seed, (long long)r, b->k[r]);
        }
        t->exact += ok;
        oracle_row_free(&o);
    }
    if (rc == TKP_OK) {
        CHECK(st.rows == b->batch, "%s (seed %llu): stats count %lld rows, want %lld", what,
              (unsigned long long)seed, (long long)st.rows, (long long)b->batch);
        t->iterations += STAT(st, ITERATIONS);
    }
    t->rows += b->batch;
    free(kept);
    free(ref);
    free(opts);
}

/* Every adversarial case of cases.c with top-p turned off. */
static struct tally check_topk_cases(const char *const *options, int strict)
{
    struct tally t = { 0, 0, 0 };
    struct test_case *c;
    int n = cases_build(&c);
    cases_fit(tkp_algo_find("rtopk"), c, n); /* min-p off: rtopk refuses it */
    for (int i = 0; i < n; i++)
        check_topk_batch(options, strict, c[i].name, c[i].seed, &c[i].b, &t);
    cases_free(c, n);
    return t;
}

static void free_case(struct test_case *c)
{
    free(c->b.logits);
    free(c->b.k);
    free(c->b.p);
}

/* Give every row a k drawn from the row's own values: 1..V-1 on most rows, so that the
 * search runs on nearly every row. */
static void spread_k(struct test_case *c)
{
    for (int64_t r = 0; r < c->b.batch; r++)
        if (r % 4 && c->b.vocab > 1) {
            float g = c->b.logits[r * c->b.vocab];
            c->b.k[r] = 1 + (int32_t)((int64_t)(fabsf(g) * 7919.0f) % (c->b.vocab - 1));
        }
}

TEST(rtopk_cpu_topk_cases_match_oracle_and_naive_sort)
{
    struct tally t = check_topk_cases(NULL, 1);
    CHECK(t.exact == t.rows, "exact default: %lld of %lld rows equal the oracle",
          (long long)t.exact, (long long)t.rows);
    CHECK(t.iterations > 0, "no search iteration was counted");
}

TEST(rtopk_cpu_random_gaussian_rows_match_oracle)
{
    for (uint64_t seed = 1; seed <= 300 && !test_failed(); seed++) {
        struct test_case c;
        struct tally t = { 0, 0, 0 };
        case_gaussian(&c, seed, 12, 2 + (int64_t)(seed * 37 % 1500), 0.01f + (float)(seed % 9));
        spread_k(&c);
        check_topk_batch(NULL, 1, "gaussian", seed, &c.b, &t);
        free_case(&c);
    }
}

/* Hostile values for the midpoint: huge, tiny and subnormal magnitudes, signed zeros, +inf,
 * -inf, NaN, all drawn from a small pool so that ties are frequent. */
TEST(rtopk_cpu_hostile_values_match_oracle)
{
    static const float pool[] = {
        FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN, 0.0f, -0.0f, FLT_MIN, -FLT_MIN,
        FLT_TRUE_MIN, -FLT_TRUE_MIN, 3 * FLT_TRUE_MIN, 5 * FLT_TRUE_MIN, 1e38f, -1e38f,
        1.0f, nextafterf(1.0f, 2.0f), nextafterf(1.0f, 0.0f), nextafterf(FLT_MAX, 0.0f), 1e-30f,
    };
    const int64_t pool_n = (int64_t)(sizeof pool / sizeof pool[0]);
    for (uint64_t seed = 1; seed <= 200 && !test_failed(); seed++) {
        struct test_case c;
        struct tally t = { 0, 0, 0 };
        case_gaussian(&c, seed, 12, 1 + (int64_t)(seed * 13 % 200), 1.0f);
        spread_k(&c);
        int64_t span = 2 + (int64_t)(seed % (uint64_t)(pool_n - 1)); /* how much of the pool */
        for (int64_t i = 0; i < c.b.batch * c.b.vocab; i++)
            c.b.logits[i] = pool[(int64_t)(fabsf(c.b.logits[i]) * 1000.0f) % span];
        check_topk_batch(NULL, 1, "hostile", seed, &c.b, &t);
        free_case(&c);
    }
}

/* Hand-made rows: a larger token after the ties at the k-th value (RTop-k's single pass A
 * would drop it), +inf next to FLT_MAX, and a threshold between adjacent subnormals. */
TEST(rtopk_cpu_hand_made_ties_and_extremes)
{
    static const struct {
        float x[6];
        int32_t k;
        uint8_t want[6];
    } rows[] = {
        { { 1, 1, 2, 0, 0, 0 }, 2, { 1, 0, 1, 0, 0, 0 } },
        { { 5, 7, 7, 7, 1, 7 }, 3, { 0, 1, 1, 1, 0, 0 } },
        { { FLT_MAX, INFINITY, FLT_MAX, 1, -INFINITY, NAN }, 2, { 1, 1, 0, 0, 0, 0 } },
        { { INFINITY, INFINITY, INFINITY, 1, 2, 3 }, 2, { 1, 1, 0, 0, 0, 0 } },
        { { FLT_TRUE_MIN, 0, 2 * FLT_TRUE_MIN, -0.0f, 2 * FLT_TRUE_MIN, 0 }, 3,
          { 1, 0, 1, 0, 1, 0 } },
        { { -0.0f, 0, -FLT_TRUE_MIN, -0.0f, NAN, 0 }, 2, { 1, 1, 0, 0, 0, 0 } },
    };
    enum { N = sizeof rows / sizeof rows[0] };
    const int64_t n = N;
    float logits[N * 6], p[N];
    int32_t k[N];
    uint8_t kept[N * 6];
    for (int64_t r = 0; r < n; r++) {
        memcpy(logits + r * 6, rows[r].x, sizeof rows[r].x);
        k[r] = rows[r].k;
        p[r] = 1.0f;
    }
    struct tkp_batch b = { n, 6, logits, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("rtopk"), NULL, TKP_CPU, &b, kept, NULL, 0, 0, 0, NULL,
                       &err);
    REQUIRE(rc == TKP_OK, "%s", err.msg);
    for (int64_t r = 0; r < n; r++)
        CHECK(memcmp(kept + r * 6, rows[r].want, 6) == 0,
              "hand-made row %lld: kept %d%d%d%d%d%d", (long long)r, kept[r * 6],
              kept[r * 6 + 1], kept[r * 6 + 2], kept[r * 6 + 3], kept[r * 6 + 4], kept[r * 6 + 5]);
}

TEST(rtopk_early_stop_is_declared_approximate_and_keeps_k)
{
    const struct tkp_algo *a = tkp_algo_find("rtopk");
    REQUIRE(a && a->approximate, "rtopk declares no approximate()");
    static const char *const early[] = { "max_iter=2", NULL };
    static const char *const bad[] = { "max_iter=-1", NULL };
    struct tkp_error err = { "" };
    void *exact = module_opts(a, NULL, &err), *approx = module_opts(a, early, &err);
    REQUIRE(exact && approx, "rtopk options: %s", err.msg);
    CHECK(!a->approximate(exact), "the default must be exact");
    CHECK(a->approximate(approx), "max_iter=2 must declare itself approximate");
    CHECK(module_opts(a, bad, &err) == NULL, "max_iter=-1 was accepted");
    free(exact);
    free(approx);

    struct tally t = check_topk_cases(early, 0);
    double exactness = (double)t.exact / (double)t.rows;
    printf("     rtopk max_iter=2: exactness %.4f (%lld of %lld rows)\n", exactness,
           (long long)t.exact, (long long)t.rows);
    CHECK(exactness < 1.0, "max_iter=2 equals the oracle on every row: the early stop is inert");
    CHECK(exactness > 0.0, "max_iter=2 equals the oracle on no row");
    CHECK(t.iterations > 0 && t.iterations <= 2.0 * (double)t.rows,
          "max_iter=2 ran %.0f iterations over %lld rows", t.iterations, (long long)t.rows);
}

/* Rows that need no search (k-th value = the max, or k >= valid) count no iteration; on
 * [1, 2, 3, 4] with k = 2 the first midpoint 2.5 already counts 2. */
TEST(rtopk_cpu_counts_iterations_only_where_it_searches)
{
    float logits[4 * 4] = {
        INFINITY, 1, INFINITY, 2, /* k = 2: both +inf */
        3, 1, 3, 3,               /* k = 2: ties at the max */
        1, NAN, -INFINITY, 2,     /* k = 3: only 2 valid */
        1, 2, 3, 4,               /* k = 2: one iteration */
    };
    int32_t k[4] = { 2, 2, 3, 2 };
    float p[4] = { 1, 1, 1, 1 };
    uint8_t kept[4 * 4];
    struct tkp_batch b = { 3, 4, logits, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    struct tkp_stats st;
    struct tkp_error err = { "" };
    const struct tkp_algo *a = tkp_algo_find("rtopk");
    REQUIRE(tkp_apply(a, NULL, TKP_CPU, &b, kept, NULL, 0, 0, 0, &st, &err) == TKP_OK, "%s",
            err.msg);
    CHECK(st.rows == 3 && STAT(st, ITERATIONS) == 0,
          "rows needing no search: %lld rows, %.0f iterations", (long long)st.rows,
          STAT(st, ITERATIONS));
    b.batch = 4;
    REQUIRE(tkp_apply(a, NULL, TKP_CPU, &b, kept, NULL, 0, 0, 0, &st, &err) == TKP_OK, "%s",
            err.msg);
    CHECK(st.rows == 4 && STAT(st, ITERATIONS) == 1,
          "with [1, 2, 3, 4], k = 2: %lld rows, %.0f iterations", (long long)st.rows,
          STAT(st, ITERATIONS));
}

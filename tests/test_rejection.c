/* test_rejection.c — the dual-pivot rejection sampler on the CPU: every draw inside the
 * oracle's kept set on the round-budget fallback path, the empirical distribution within the
 * total-variation bound on peaked, flat and tied rows (the defaults on the adversarial suite
 * and the sampler test: tests/test_conformance.c), Philox reproducibility, bounded round
 * counts, and the samplers' cluster-size hook. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/rejection/rejection_impl.h"
#include "../algos/rejection/rejection_rules.h"
#include "../harness/verify/oracle.h"
#include "cases.h"
#include "test.h"

/* A rejection statistic's total in a struct tkp_stats (rejection_impl.h, REJ_STATS). */
#define STAT(s, id) ((s).total[REJ_STAT_##id])

static const char *const budget_1[] = { "max_rounds=1", NULL };
static const char *const budget_2[] = { "max_rounds=2", NULL };

/* A one-row batch; the caller owns `x`. */
static struct tkp_batch one_row(float *x, int64_t vocab, int32_t *k, float *p)
{
    return (struct tkp_batch){ 1, vocab, x, k, p, TKP_F32, NULL, NULL, NULL, NULL };
}

/* Draw `draws` times from row x under (k, p) and compare the histogram with the oracle's
 * renormalised distribution; the row must have an unambiguous kept set. */
static void check_row_tv(const char *what, float *x, int64_t vocab, int32_t k, float p,
                         const char *const *options, int32_t draws, uint64_t seed)
{
    struct oracle_row o;
    REQUIRE(oracle_row_init(&o, x, vocab, k, p) == 0, "%s: oracle out of memory", what);
    int64_t n = o.n_max;
    long double *dist = calloc((size_t)n, sizeof *dist);
    double *count = calloc((size_t)vocab, sizeof *count);
    int64_t *s = malloc(sizeof *s * (size_t)draws);
    void *opts = module_options("rejection", options);
    struct tkp_batch b = one_row(x, vocab, &k, &p);
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("rejection"), opts, TKP_CPU, &b, NULL, s, draws, seed, 0,
                       NULL, &err);
    CHECK(o.n_min == o.n_max, "%s: ambiguous kept set (%lld..%lld)", what, (long long)o.n_min,
          (long long)o.n_max);
    CHECK(rc == TKP_OK, "%s: %s", what, err.msg);
    if (rc == TKP_OK && o.n_min == o.n_max) {
        oracle_distribution(&o, n, dist);
        int64_t outside = 0;
        char why[256];
        for (int32_t d = 0; d < draws; d++) {
            if (oracle_check_draw(&o, s[d], why, sizeof why))
                count[s[d]] += 1.0;
            else
                outside++;
        }
        double tv = (double)outside / draws;
        for (int64_t j = 0; j < n; j++)
            tv += fabs(count[o.order[j]] / draws - (double)dist[j]);
        tv *= 0.5;
        double bound = oracle_tv_bound(n, draws);
        CHECK(outside == 0, "%s (seed %llu): %lld draws outside the kept set", what,
              (unsigned long long)seed, (long long)outside);
        CHECK(tv < bound, "%s (seed %llu): TV %.5f >= bound %.5f (n=%lld, N=%d)", what,
              (unsigned long long)seed, tv, bound, (long long)n, draws);
    }
    free(opts);
    free(s);
    free(count);
    free(dist);
    oracle_row_free(&o);
}

/* A seeded row of N(0, scale) values; free with free(). */
static float *gaussian_row(uint64_t seed, int64_t vocab, float scale)
{
    struct test_case c;
    case_gaussian(&c, seed, 1, vocab, scale);
    free(c.b.k);
    free(c.b.p);
    return c.b.logits;
}

TEST(rejection_cpu_fallback_draws_in_kept_set_on_adversarial_cases)
{
    check_module_cases("rejection", budget_1, TKP_CPU);
    check_module_cases("rejection", budget_2, TKP_CPU);
}

TEST(rejection_cpu_peaked_row_topk_then_topp_tv)
{
    const int64_t vocab = 4096;
    float *x = gaussian_row(11, vocab, 3.0f);
    for (int64_t i = 0; i < vocab; i += 97)
        x[i] += 12.0f;
    check_row_tv("peaked k=50 p=0.9", x, vocab, 50, 0.9f, NULL, 20000, 11);
    free(x);
}

TEST(rejection_cpu_flat_row_topp_tv)
{
    const int64_t vocab = 1000;
    float *x = gaussian_row(12, vocab, 1.0f);
    check_row_tv("flat N(0,1) p=0.9", x, vocab, 0, 0.9f, NULL, 20000, 12);
    free(x);
}

TEST(rejection_cpu_tied_row_topk_then_topp_tv)
{
    const int64_t vocab = 333;
    float *x = gaussian_row(13, vocab, 1.0f);
    for (int64_t i = 0; i < vocab; i++) /* values 0..3: long runs of equal values */
        x[i] = floorf(fabsf(x[i]) * 1.5f);
    check_row_tv("ties k=100 p=0.7", x, vocab, 100, 0.7f, NULL, 20000, 13);
    check_row_tv("ties k=40", x, vocab, 40, 1.0f, NULL, 20000, 13);
    free(x);
}

TEST(rejection_cpu_round_budget_fallback_is_exact)
{
    const int64_t vocab = 300;
    float *x = gaussian_row(14, vocab, 1.0f);
    check_row_tv("budget 1, p=0.9", x, vocab, 0, 0.9f, budget_1, 5000, 14);
    check_row_tv("budget 2, k=30 p=0.8", x, vocab, 30, 0.8f, budget_2, 5000, 14);
    free(x);
}

/* Rows of equal values make the fixed-point mass before a token hit the top-p target
 * exactly, where the oracle's band accepts two kept sets: the draws must follow the shared
 * rule (keep iff the mass before is strictly below the target, top-p within the top-k set). */
TEST(rejection_cpu_exact_topp_boundary_follows_shared_rule)
{
    static const struct {
        int64_t vocab;
        int32_t k;
        float p;
        int64_t kept; /* tokens 0 .. kept-1 */
    } rows[] = {
        { 4, 0, 0.5f, 2 },   /* target 2.0: token 2 has exactly 2.0 before it */
        { 8, 4, 0.5f, 2 },   /* S = 4 tokens, target 2.0 over S, not 4.0 over the row */
        { 8, 4, 0.9f, 4 },   /* target 3.6 over S keeps all of S */
        { 6, 0, 0.25f, 2 },  /* target 1.5 */
    };
    const int32_t draws = 2000;
    int64_t *s = malloc(sizeof *s * (size_t)draws);
    float x[8] = { 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int32_t k = rows[i].k;
        float p = rows[i].p;
        struct tkp_batch b = one_row(x, rows[i].vocab, &k, &p);
        struct tkp_error err = { "" };
        int rc = tkp_apply(tkp_algo_find("rejection"), NULL, TKP_CPU, &b, NULL, s, draws, 3, 0,
                           NULL, &err);
        CHECK(rc == TKP_OK, "%s", err.msg);
        int64_t hits[8] = { 0 };
        for (int32_t d = 0; rc == TKP_OK && d < draws; d++) {
            CHECK(s[d] >= 0 && s[d] < rows[i].kept, "V=%lld k=%d p=%g: draw %lld, kept 0..%lld",
                  (long long)rows[i].vocab, k, (double)p, (long long)s[d],
                  (long long)rows[i].kept - 1);
            hits[s[d] & 7]++;
        }
        for (int64_t t = 0; rc == TKP_OK && t < rows[i].kept; t++)
            CHECK(hits[t] > draws / rows[i].kept / 2, "V=%lld k=%d p=%g: token %lld drawn %lld times",
                  (long long)rows[i].vocab, k, (double)p, (long long)t, (long long)hits[t]);
    }
    free(s);
}

/* Draws of a gaussian batch under one seed and offset. */
static void draw_batch(const struct test_case *c, int32_t draws, uint64_t seed, uint64_t offset,
                       int64_t *out, struct tkp_stats *stats)
{
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("rejection"), NULL, TKP_CPU, &c->b, NULL, out, draws, seed,
                       offset, stats, &err);
    CHECK(rc == TKP_OK, "seed %llu offset %llu: %s", (unsigned long long)seed,
          (unsigned long long)offset, err.msg);
}

TEST(rejection_cpu_same_seed_same_draws_other_offset_other_draws)
{
    struct test_case c;
    const int32_t draws = 64;
    case_gaussian(&c, 21, 17, 500, 1.0f);
    size_t bytes = sizeof(int64_t) * (size_t)(c.b.batch * draws);
    int64_t *a = malloc(bytes), *b = malloc(bytes), *other = malloc(bytes);
    draw_batch(&c, draws, 5, 9, a, NULL);
    draw_batch(&c, draws, 5, 9, b, NULL);
    CHECK(memcmp(a, b, bytes) == 0, "seed 5 offset 9 gave different draws on two runs");
    draw_batch(&c, draws, 5, 10, other, NULL);
    CHECK(memcmp(a, other, bytes) != 0, "offsets 9 and 10 gave the same draws");
    draw_batch(&c, draws, 6, 9, other, NULL);
    CHECK(memcmp(a, other, bytes) != 0, "seeds 5 and 6 gave the same draws");
    free(a);
    free(b);
    free(other);
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

TEST(rejection_cpu_round_statistics_positive_and_bounded)
{
    struct test_case c;
    const int32_t draws = 200;
    case_gaussian(&c, 31, 17, 2000, 1.0f);
    int64_t *out = malloc(sizeof(int64_t) * (size_t)(c.b.batch * draws));
    struct tkp_stats st;
    draw_batch(&c, draws, 7, 0, out, &st);
    double total = (double)(c.b.batch * draws);
    CHECK(st.rows == c.b.batch, "stats count %lld rows, expected %lld", (long long)st.rows,
          (long long)c.b.batch);
    CHECK(STAT(st, ROUNDS) >= total, "%.0f rounds for %.0f draws: every draw takes a round",
          STAT(st, ROUNDS), total);
    CHECK(STAT(st, ROUNDS) <= 32 * total, "%.0f rounds for %.0f draws exceed the budget of 32",
          STAT(st, ROUNDS), total);
    free(out);
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);

    /* k = 1 on a flat row of 20000 tokens: the first candidate set is the top-k set (the
     * largest token), so every draw takes one round. */
    case_gaussian(&c, 32, 1, 20000, 1.0f);
    c.b.k[0] = 1;
    c.b.p[0] = 1.0f;
    out = malloc(sizeof(int64_t) * (size_t)draws);
    draw_batch(&c, draws, 7, 0, out, &st);
    CHECK(STAT(st, ROUNDS) == draws, "%.0f rounds for %d draws of k=1 (one each)", STAT(st, ROUNDS),
          draws);
    /* k = 5000 then p = 0.1 on the same row: the kept set is a small prefix of the top-k set,
     * most first candidates are rejected, and the second pivot keeps the chains short
     * (measured: 2.57 rounds per draw; 3.41 with the second pivot taken at the candidate). */
    c.b.k[0] = 5000;
    c.b.p[0] = 0.1f;
    draw_batch(&c, draws, 7, 0, out, &st);
    printf("     %.2f rounds per draw (k = 5000, p = 0.1, flat row of 20000)\n",
           STAT(st, ROUNDS) / draws);
    CHECK(STAT(st, ROUNDS) / draws < 3.0, "%.2f rounds per draw for k=5000 p=0.1 on a flat row",
          STAT(st, ROUNDS) / draws);
    free(out);
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

TEST(rejection_refuses_more_draws_than_philox_counters)
{
    const struct tkp_algo *a = tkp_algo_find("rejection");
    REQUIRE(a, "no module rejection");
    struct tkp_problem pb = { .batch = 1, .vocab = 10, .stride = 10, .backend = TKP_CPU,
                              .outputs = TKP_OUT_SAMPLE, .draws = 1 << 28 };
    void *opts = module_options("rejection", NULL);
    const char *why = NULL;
    CHECK(!a->supports(&pb, opts, &why), "2^28 draws x 32 rounds accepted");
    CHECK(why && strstr(why, "Philox"), "reason does not name the counters: %s",
          why ? why : "(none)");
    pb.draws = 1 << 27;
    CHECK(a->supports(&pb, opts, &why), "2^27 draws x 32 rounds refused: %s", why);
    free(opts);
}

/* The samplers' cluster-size hooks (TKP_REJ_CLUSTER, TKP_CAKE_CLUSTER) take 1, 2, 4, 8 or 16
 * and refuse anything else with a message naming the variable and its value. */
TEST(env_cluster_hook_takes_powers_of_two_and_refuses_the_rest)
{
    static const char *const name = "TKP_TEST_CLUSTER";
    struct tkp_error err = { { 0 } };
    int size = -1;
    unsetenv(name);
    CHECK(tkp_env_cluster(name, &size, &err) == TKP_OK && size == 0, "unset: size %d", size);
    static const char *const good[] = { "1", "2", "4", "8", "16" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        setenv(name, good[i], 1);
        CHECK(tkp_env_cluster(name, &size, &err) == TKP_OK && size == atoi(good[i]),
              "%s: size %d", good[i], size);
    }
    static const char *const bad[] = { "3", "0", "32", "8x", "-4", "eight" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv(name, bad[i], 1);
        err.msg[0] = 0;
        char want[64];
        snprintf(want, sizeof want, "%s=%s:", name, bad[i]);
        CHECK(tkp_env_cluster(name, &size, &err) == TKP_EINVAL && strstr(err.msg, want),
              "%s accepted or unnamed: \"%s\"", bad[i], err.msg);
    }
    unsetenv(name);
}

/* Top-p alone starts from the mass floor (README, "First candidate set of top-p alone"): the
 * first candidate set is the handful of tokens of the first mass bins that reach the target,
 * so most first candidates are kept. On a peaked row (N(0, 3), p = 0.3) every draw takes one
 * round (measured: 1.000); starting from the whole row, 1.869. The draws stay inside the kept
 * set with the renormalised distribution (the TV test). */
TEST(rejection_cpu_topp_alone_starts_at_mass_floor)
{
    const int64_t vocab = 20000;
    const int32_t draws = 4000;
    float *x = gaussian_row(41, vocab, 3.0f);
    struct test_case c = { 0 };
    int32_t k = 0;
    float p = 0.3f;
    c.b = one_row(x, vocab, &k, &p);
    int64_t *out = malloc(sizeof(int64_t) * (size_t)draws);
    struct tkp_stats st;
    draw_batch(&c, draws, 9, 0, out, &st);
    printf("     %.3f rounds per draw (top-p 0.3 alone, N(0, 3), V = %lld)\n",
           STAT(st, ROUNDS) / draws, (long long)vocab);
    CHECK(STAT(st, ROUNDS) / draws < 1.3, "%.3f rounds per draw: not from the mass floor?",
          STAT(st, ROUNDS) / draws);
    free(out);
    check_row_tv("top-p 0.3 alone, N(0, 3)", x, vocab, 0, 0.3f, NULL, 20000, 43);
    free(x);
}

/* threads=auto where one CTA takes a row (README "GPU", "Launch shape"; measured on the H100 by
 * configs/h100/batch_variants.lua): 1024 up to a row a SM and wherever a row has top-p alone
 * (not a row without any filter, nor one whose k is past the row), 512 past #SMs rows, 256 from
 * four rows a SM when every set is at most 256 tokens. */
TEST(rejection_auto_threads_follow_batch_and_k)
{
    const unsigned K = TKP_TOPK_TOPP, P = TKP_TOPP;
    const struct {
        int64_t batch, vocab, set_max;
        unsigned ops;
        int want;
    } cases[] = {
        { 1, 128256, 50, K, 1024 },        { 132, 128256, 50, K, 1024 },
        { 133, 128256, 50, K, 512 },       { 527, 262144, 50, K, 512 },
        { 528, 262144, 50, K, 256 },       { 1024, 128256, 256, K, 256 },
        { 1024, 128256, 257, K, 512 },     { 1024, 128256, 1000, K, 512 },
        { 133, 128256, 128256, P, 1024 },  { 1024, 262144, 262144, P, 1024 },
        { 4096, 4096, 50, K, 256 },        { 4096, 4096, 4096, P | K, 1024 },
        { 133, 128256, 128256, 0, 512 },   { 1024, 128256, 128256, TKP_TOPK | K, 512 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tkp_problem pb = { .batch = cases[i].batch, .vocab = cases[i].vocab,
                                        .set_max = cases[i].set_max, .ops = cases[i].ops };
        const int got = rej_auto_threads(&pb, 132);
        CHECK(got == cases[i].want, "B %lld, V %lld, largest set %lld, ops %u: %d threads, want %d",
              (long long)pb.batch, (long long)pb.vocab, (long long)pb.set_max, pb.ops, got,
              cases[i].want);
    }
}

/* Pass 1's big list on the GPU (README "The k-th key from pass 1's list"): its room, 16 tokens a
 * thread, only for 512 and 1024 threads, some row's k past 256 and rows longer than the first
 * chunk; the first chunk grows with k (a bound near the row's k-th key keeps the list short)
 * by whole steps, at most four, and stays shorter than the row. */
TEST(rejection_big_list_room_and_first_chunk)
{
    const int step = 16384, gather = 2048;
    const struct {
        int threads;
        int32_t k_max;
        int64_t vocab;
        int want;
    } rooms[] = {
        { 1024, 1000, 128256, 16384 }, { 512, 257, 128256, 8192 }, { 512, 256, 128256, 2048 },
        { 256, 1000, 128256, 2048 },   { 1024, 1000, 16384, 2048 }, { 1024, 0, 128256, 2048 },
    };
    for (size_t i = 0; i < sizeof rooms / sizeof rooms[0]; i++) {
        const struct tkp_problem pb = { .batch = 8, .vocab = rooms[i].vocab,
                                        .k_max = rooms[i].k_max };
        const int got = rej_list_cap(&pb, rooms[i].threads, step, gather);
        CHECK(got == rooms[i].want, "%d threads, k_max %d, V %lld: room %d, want %d",
              rooms[i].threads, rooms[i].k_max, (long long)rooms[i].vocab, got, rooms[i].want);
    }
    const struct {
        int32_t k;
        int64_t vocab;
        int want;
    } chunks[] = {
        { 50, 128256, 16384 },  { 256, 128256, 16384 }, { 257, 128256, 32768 },
        { 1000, 128256, 65536 }, { 5000, 262144, 65536 }, { 1000, 65536, 49152 },
        { 1000, 40000, 32768 },  { 1000, 16385, 16384 },
    };
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        const int got = rej_list_chunk(chunks[i].k, chunks[i].vocab, step);
        CHECK(got == chunks[i].want, "k %d, V %lld: first chunk %d, want %d", chunks[i].k,
              (long long)chunks[i].vocab, got, chunks[i].want);
    }
}

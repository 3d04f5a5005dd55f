/* test_cake.c — cake on the CPU against the oracle and, bit for bit, against naive_sort's
 * kept sets; its determinism across seeds, its 1024-entry slab limit and the radix edge cases
 * (keys sharing their top 11 or 22 bits, negatives, +inf, signed zeros). The sampler test:
 * tests/test_conformance.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/cake/cake_impl.h"
#include "../algos/common/prob.h"
#include "../harness/verify/oracle.h"
#include "cases.h"
#include "test.h"

/* A cake statistic's total in a struct tkp_stats (cake_impl.h, CAKE_STATS). */
#define STAT(s, id) ((s).total[CAKE_STAT_##id])

enum { SLAB = 1024, DRAWS = 16 };

/* Make every row fit the slab: top-k off with V > 1024, or k > 1024, becomes k = 1024. */
static void clamp_k(struct tkp_batch *b)
{
    for (int64_t r = 0; r < b->batch; r++)
        if (b->vocab > SLAB && (!tkp_topk_on(b->k[r], b->vocab) || b->k[r] > SLAB))
            b->k[r] = SLAB;
}

/* Run cake (kept set and draws) and naive_sort (kept set) on a batch; every row must be
 * accepted by the oracle, every draw must lie in the kept set, and the kept masks must be
 * equal. Returns cake's statistics. */
static struct tkp_stats check_batch(const struct tkp_batch *b, const char *name, uint64_t seed)
{
    struct tkp_stats st = { 0 };
    const size_t cells = (size_t)(b->batch * b->vocab);
    uint8_t *kept = malloc(cells), *ref = malloc(cells);
    int64_t *samples = malloc(sizeof(int64_t) * (size_t)(b->batch * DRAWS));
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("cake"), NULL, TKP_CPU, b, kept, samples, DRAWS, seed, 0,
                       &st, &err);
    CHECK(rc == TKP_OK, "cake on %s (seed %llu): %s", name, (unsigned long long)seed, err.msg);
    if (rc == TKP_OK)
        rc = tkp_apply(tkp_algo_find("naive_sort"), NULL, TKP_CPU, b, ref, NULL, 0, 0, 0, NULL,
                       &err);
    CHECK(rc == TKP_OK, "naive_sort on %s: %s", name, err.msg);
    for (int64_t r = 0; rc == TKP_OK && r < b->batch; r++) {
        const uint8_t *row = kept + r * b->vocab;
        struct oracle_row o;
        char why[256];
        case_oracle_row(&o, b, r);
        CHECK(oracle_check_kept(&o, row, why, sizeof why), "%s (seed %llu) row %lld k=%d p=%g: %s",
              name, (unsigned long long)seed, (long long)r, b->k[r], (double)b->p[r], why);
        CHECK(memcmp(row, ref + r * b->vocab, (size_t)b->vocab) == 0,
              "%s (seed %llu) row %lld k=%d p=%g: kept set differs from naive_sort", name,
              (unsigned long long)seed, (long long)r, b->k[r], (double)b->p[r]);
        for (int d = 0; d < DRAWS; d++) {
            int64_t t = samples[r * DRAWS + d];
            CHECK(oracle_check_draw(&o, t, why, sizeof why), "%s row %lld draw %d: %s", name,
                  (long long)r, d, why);
            CHECK(t < 0 || row[t], "%s row %lld draw %d: token %lld is not in the kept set",
                  name, (long long)r, d, (long long)t);
        }
        oracle_row_free(&o);
    }
    CHECK(rc != TKP_OK || st.rows == b->batch, "%s: stats count %lld rows of %lld", name,
          (long long)st.rows, (long long)b->batch);
    free(kept);
    free(ref);
    free(samples);
    return st;
}

static void free_batch(struct tkp_batch *b)
{
    free(b->logits);
    free(b->k);
    free(b->p);
}

TEST(cake_cpu_matches_oracle_and_naive_sort_on_clamped_adversarial_cases)
{
    struct test_case *c;
    int n = cases_build(&c);
    for (int i = 0; i < n; i++) {
        clamp_k(&c[i].b);
        check_batch(&c[i].b, c[i].name, c[i].seed);
    }
    cases_free(c, n);
}

TEST(cake_cpu_random_rows_match_oracle_and_naive_sort)
{
    for (uint64_t seed = 1; seed <= 12 && !test_failed(); seed++) {
        struct test_case c;
        case_gaussian(&c, seed, 17, 40 + (int64_t)(seed * 401 % 3000), (float)seed * 0.4f);
        clamp_k(&c.b);
        check_batch(&c.b, "gaussian", seed);
        free_batch(&c.b);
    }
}

/* Draws of a clamped gaussian batch under `seed`. */
static int64_t *draw_batch(const struct tkp_batch *b, uint64_t seed, int32_t draws)
{
    int64_t *s = malloc(sizeof(int64_t) * (size_t)(b->batch * draws));
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("cake"), NULL, TKP_CPU, b, NULL, s, draws, seed, 9, NULL,
                       &err);
    CHECK(rc == TKP_OK, "cake sampling: %s", err.msg);
    return s;
}

TEST(cake_same_seed_same_samples_different_seed_different_samples)
{
    struct test_case c;
    const int32_t draws = 64;
    case_gaussian(&c, 5, 17, 2000, 1.0f);
    clamp_k(&c.b);
    int64_t *a = draw_batch(&c.b, 11, draws), *again = draw_batch(&c.b, 11, draws);
    int64_t *other = draw_batch(&c.b, 12, draws);
    const size_t bytes = sizeof(int64_t) * (size_t)(c.b.batch * draws);
    CHECK(memcmp(a, again, bytes) == 0, "the same seed gave different samples");
    CHECK(memcmp(a, other, bytes) != 0, "seeds 11 and 12 gave identical samples");
    free(a);
    free(again);
    free(other);
    free_batch(&c.b);
}

TEST(cake_refuses_problems_beyond_the_slab)
{
    const struct tkp_algo *a = tkp_algo_find("cake");
    struct tkp_problem pb = { .batch = 1, .vocab = 4096, .stride = 4096, .backend = TKP_CPU,
                              .ops = TKP_TOPK, .outputs = TKP_OUT_SET, .k_max = 2000 };
    const char *why = NULL;
    CHECK(!a->supports(&pb, NULL, &why), "k = 2000 accepted");
    CHECK(why && strstr(why, "1024"), "the refusal does not name the limit: %s", why ? why : "");
    pb.k_max = 1024;
    CHECK(a->supports(&pb, NULL, &why), "k = 1024 refused: %s", why);
    pb.ops = TKP_TOPP;
    pb.k_max = 0;
    CHECK(!a->supports(&pb, NULL, &why), "top-p-only rows with V = 4096 accepted");
    pb.vocab = pb.stride = SLAB;
    CHECK(a->supports(&pb, NULL, &why), "top-p-only rows with V = 1024 refused: %s", why);

    /* A row with neither filter shows in the problem through set_max (the vocabulary):
     * supports() refuses it on every backend, before any row is read. */
    struct test_case c;
    case_gaussian(&c, 3, 2, 1500, 1.0f);
    c.b.k[0] = 10;
    c.b.p[0] = 0.9f;
    c.b.k[1] = 0;
    c.b.p[1] = 1.0f;
    uint8_t *kept = malloc((size_t)(2 * 1500));
    struct tkp_error err = { "" };
    int rc = tkp_apply(a, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
    CHECK(rc == TKP_EUNSUPPORTED, "an unfiltered row with V = 1500 accepted");
    CHECK(strstr(err.msg, "top-k is off") && strstr(err.msg, "1024"), "unclear refusal: %s",
          err.msg);
    c.b.k[1] = 2000;
    rc = tkp_apply(a, NULL, TKP_CPU, &c.b, kept, NULL, 0, 0, 0, NULL, &err);
    CHECK(rc == TKP_EUNSUPPORTED && strstr(err.msg, "1024"), "k = 2000 accepted: %s", err.msg);
    free(kept);
    free_batch(&c.b);
}

/* The float with bit pattern `bits`. */
static float from_bits(uint32_t bits)
{
    union { uint32_t u; float f; } c = { bits };
    return c.f;
}

enum edge { SHARE_TOP11, SHARE_TOP22, NEGATIVE, POS_INF, SIGNED_ZERO, DISTINCT_TOP, EDGES };

/* One row of an edge pattern; `s` is a small LCG state for the test's own variety. */
static void fill_edge(float *x, int64_t vocab, enum edge e, uint32_t *s)
{
    for (int64_t i = 0; i < vocab; i++) {
        *s = *s * 1664525u + 1013904223u;
        uint32_t r = *s >> 8;
        switch (e) {
        case SHARE_TOP11: /* 1.5f has its low 21 bits clear: same first digit, with repeats */
            x[i] = from_bits(0x3FC00000u + (r % 64) * 0x8000u + (r >> 20) % 3);
            break;
        case SHARE_TOP22: /* same first two digits, repeats in the last one */
            x[i] = from_bits(0x3FC00000u + (r % 16) * 64u + (r >> 12) % 2);
            break;
        case NEGATIVE: /* around -1.5f, whose key shares its top 11 bits, and some positives */
            x[i] = i % 5 == 0 ? from_bits(0x3F000000u + r % 50)
                              : from_bits(0xBFC00000u + (r % 1000) * 0x400u + r % 2);
            break;
        case POS_INF:
            x[i] = i % 41 == 3 ? INFINITY : (i % 13 == 0 ? NAN : (float)(r % 7) - 3.0f);
            break;
        case SIGNED_ZERO:
            x[i] = i % 9 == 8 ? -INFINITY : (i % 2 ? 0.0f : -0.0f);
            if (i % 17 == 5)
                x[i] = (i % 3) ? 1.0f : -1.0f;
            break;
        case DISTINCT_TOP: /* every key alone in its first digit: positives, then negatives */
            x[i] = from_bits(i < 1000 ? (uint32_t)i << 21
                                      : 0x80000000u | (uint32_t)(i - 999) << 21);
            break;
        default:
            break;
        }
    }
}

TEST(cake_radix_edge_cases_match_oracle_and_naive_sort)
{
    static const int32_t ks[] = { 1, 2, 7, 100, 333, 599, 1024 };
    static const float ps[] = { 1.0f, 0.9f, 0.3f, 1.0f, 0.99f, 1.0f, 0.5f };
    const int64_t nk = (int64_t)(sizeof ks / sizeof ks[0]), vocab = 1500;
    uint32_t s = 12345;
    for (int e = 0; e < EDGES && !test_failed(); e++) {
        struct tkp_batch b = { nk, vocab, malloc(sizeof(float) * (size_t)(nk * vocab)),
                               malloc(sizeof(int32_t) * (size_t)nk),
                               malloc(sizeof(float) * (size_t)nk), TKP_F32, NULL, NULL, NULL, NULL };
        for (int64_t r = 0; r < nk; r++) {
            fill_edge(b.logits + r * vocab, vocab, (enum edge)e, &s);
            b.k[r] = ks[r];
            b.p[r] = ps[r];
        }
        char name[32];
        snprintf(name, sizeof name, "edge pattern %d", e);
        struct tkp_stats st = check_batch(&b, name, (uint64_t)e);
        if (e == SHARE_TOP22)
            CHECK(STAT(st, ITERATIONS) == 3.0 * (double)nk && STAT(st, HIT_RATE) == 0,
                  "keys sharing 22 bits took %g passes over %lld rows, not 3 each",
                  STAT(st, ITERATIONS), (long long)nk);
        if (e == DISTINCT_TOP)
            CHECK(STAT(st, ITERATIONS) == (double)nk && STAT(st, HIT_RATE) == nk,
                  "distinct top digits took %g passes over %lld rows, not 1 each",
                  STAT(st, ITERATIONS), (long long)nk);
        free_batch(&b);
    }
}

TEST(cake_signed_zero_ties_go_to_the_lower_index)
{
    float x[6] = { -1.0f, -0.0f, 0.0f, -0.0f, 0.0f, NAN };
    int32_t k[3] = { 1, 2, 3 };
    float p[3] = { 1.0f, 1.0f, 1.0f };
    float rows[18];
    for (int r = 0; r < 3; r++)
        memcpy(rows + 6 * r, x, sizeof x);
    struct tkp_batch b = { 3, 6, rows, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    uint8_t kept[18];
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find("cake"), NULL, TKP_CPU, &b, kept, NULL, 0, 0, 0, NULL, &err);
    REQUIRE(rc == TKP_OK, "%s", err.msg);
    static const uint8_t want[18] = { 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0 };
    CHECK(memcmp(kept, want, sizeof want) == 0, "-0.0 and +0.0 are not one tie broken by index");
}

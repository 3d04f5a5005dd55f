/* test_minp.c — min-p exactly as docs/SEMANTICS.md, "min-p" defines it, on every module that
 * has it (TKP_MINP), its kept set (or, for a sampler alone, its draws) against counts made
 * here from the definition: tokens tied at the boundary are in at min_p = their ratio and out
 * one float above; min_p <= 0 is off; min_p >= 1 keeps the tokens tied with the largest; a
 * tiny min_p drops the tokens of zero fixed mass; min-p goes before top-p (the top-p mass is
 * that of min-p's survivors). A module without it is refused by name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/cpu_row.h"
#include "../algos/common/prob.h"
#include "apply.h"
#include "test.h"

enum { MV = 64, MDRAWS = 400 };

/* The kept set of module a on one row (for a sampler without a set: the tokens drawn in
 * MDRAWS draws); returns the count, or -1 when refused (err says why). */
static int64_t kept_of(const struct tkp_algo *a, const float *x, int32_t k, float p, float min_p,
                       uint8_t *kept, struct tkp_error *err)
{
    struct tkp_batch b = { 1, MV, (float *)x, &k, &p, TKP_F32, NULL, NULL, NULL, &min_p };
    int64_t samples[MDRAWS];
    const int set = (a->outputs & TKP_OUT_SET) != 0;
    int rc = tkp_apply(a, NULL, TKP_CPU, &b, set ? kept : NULL, set ? NULL : samples,
                       set ? 0 : MDRAWS, 3, 0, NULL, err);
    if (rc)
        return -1;
    if (!set) {
        memset(kept, 0, MV);
        for (int d = 0; d < MDRAWS; d++)
            if (samples[d] >= 0)
                kept[samples[d]] = 1;
    }
    int64_t n = 0;
    for (int i = 0; i < MV; i++)
        n += kept[i];
    return n;
}

/* A row: 0 at token 5, -1.5 at tokens 10..19 (the tie), -0.5 at 20..23, the rest -8. */
static void tie_row(float *x)
{
    for (int i = 0; i < MV; i++)
        x[i] = i == 5 ? 0.0f : i >= 10 && i < 20 ? -1.5f : i >= 20 && i < 24 ? -0.5f : -8.0f;
}

/* Expected kept counts of tie_row under min_p (top-k and top-p off). */
static void check_counts(const struct tkp_algo *a, const float *x, float min_p, int64_t want,
                         const char *what)
{
    uint8_t kept[MV];
    struct tkp_error err = { "" };
    int64_t n = kept_of(a, x, 0, 1.0f, min_p, kept, &err);
    const int sampler_only = !(a->outputs & TKP_OUT_SET);
    CHECK(n >= 0, "%s, %s: %s", a->name, what, err.msg);
    /* a sampler's draws reach each of few kept tokens, but cannot show that one is missing */
    CHECK(n < 0 || (sampler_only ? n <= want && (want > 5 || n == want) : n == want),
          "%s, %s (min_p %.9g): kept %lld tokens, the definition keeps %lld", a->name, what,
          (double)min_p, (long long)n, (long long)want);
}

TEST(minp_is_exact_on_the_fixed_point_masses_for_every_module_that_has_it)
{
    float x[MV];
    tie_row(x);
    const float ratio = tkp_expf(-1.5f); /* the tie's weight is ratio * 2^40, a whole number */
    CHECK(tkp_weight(-1.5f, 0.0f) == tkp_minp_threshold(ratio),
          "the tie's weight %llu is not the threshold %llu of its own ratio",
          (unsigned long long)tkp_weight(-1.5f, 0.0f),
          (unsigned long long)tkp_minp_threshold(ratio));
    for (int m = 0; tkp_algos[m]; m++) {
        const struct tkp_algo *a = tkp_algos[m];
        if (!(a->ops & TKP_MINP))
            continue;
        check_counts(a, x, ratio, 15, "the tie at its own ratio");
        check_counts(a, x, nextafterf(ratio, 1.0f), 5, "the tie one float above its ratio");
        check_counts(a, x, 0.0f, MV, "min_p = 0 (off)");
        check_counts(a, x, -3.0f, MV, "min_p < 0 (off)");
        check_counts(a, x, 1.0f, 1, "min_p = 1");
        check_counts(a, x, 7.0f, 1, "min_p > 1 (counts as 1)");
        check_counts(a, x, 1e-30f, MV, "min_p tiny, every mass above 2^-40");
    }
}

TEST(minp_tiny_drops_the_tokens_of_zero_fixed_mass_and_goes_before_top_p)
{
    float x[MV];
    for (int i = 0; i < MV; i++)
        x[i] = i < 8 ? -(float)i * 0.1f : -100.0f; /* exp(-100) is 0 in the fixed point */
    for (int m = 0; tkp_algos[m]; m++) {
        const struct tkp_algo *a = tkp_algos[m];
        if (!(a->ops & TKP_MINP) || !(a->outputs & TKP_OUT_SET))
            continue;
        uint8_t kept[MV];
        struct tkp_error err = { "" };
        CHECK(kept_of(a, x, 0, 1.0f, 1e-30f, kept, &err) == 8, "%s: min_p 1e-30 keeps %lld",
              a->name, (long long)kept_of(a, x, 0, 1.0f, 1e-30f, kept, &err));
        /* weights 1, .905, .819, .741, .670, ...: min-p 0.7 keeps tokens 0..3 (mass 3.465);
           top-p 0.5 over them (target 1.73) keeps 2. The other order, top-p over the whole
           row (mass 5.39, target 2.69) then min-p, would keep 3. */
        CHECK(kept_of(a, x, 0, 0.5f, 0.7f, kept, &err) == 2,
              "%s: min-p 0.7 then top-p 0.5 kept %lld, want 2 (min-p first)", a->name,
              (long long)kept_of(a, x, 0, 0.5f, 0.7f, kept, &err));
    }
}

TEST(minp_is_refused_by_name_where_a_module_lacks_it)
{
    float x[MV];
    tie_row(x);
    for (int m = 0; tkp_algos[m]; m++) {
        const struct tkp_algo *a = tkp_algos[m];
        if (a->ops & TKP_MINP)
            continue;
        uint8_t kept[MV];
        struct tkp_error err = { "" };
        CHECK(kept_of(a, x, 3, 1.0f, 0.5f, kept, &err) < 0 && strstr(err.msg, a->name) &&
                  strstr(err.msg, "min-p"),
              "%s: min-p was not refused by name (%s)", a->name, err.msg);
    }
}

/* Canonical order (value descending, index ascending) of a row's valid tokens, for qsort. */
static const float *sort_row;
static int by_canonical_order(const void *a, const void *b)
{
    const int i = *(const int *)a, j = *(const int *)b;
    if (sort_row[i] != sort_row[j])
        return sort_row[i] > sort_row[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* tkp_minp_fold_part, the fold a GPU module makes from the top of its row (docs/SEMANTICS.md,
 * "min-p"), against the count over the whole row (tkp_minp_fold_k): from every prefix of the
 * canonical order, on random rows crowded at the threshold, with ties and the one-ulp
 * inversion pair (its lower value tied, so that a prefix may split the tie), it either gives
 * the row's fold or declines (-1); it must not decline where the prefix's last value weighs
 * under half the threshold (the certificate's business). */
TEST(minp_fold_from_a_prefix_equals_the_fold_over_the_row)
{
    enum { V = 48 };
    const uint64_t seed = 20261205;
    uint64_t s = seed;
    float x[V];
    int order[V], bad = 0;
    int64_t settled = 0, declined_far = 0;
    for (int row = 0; row < 3000 && bad < 5; row++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const float min_p = row % 5 == 0 ? tkp_weight_float(-0x1.fd029cp-7f, 0.0f)
                                         : (float)(s % 999 + 1) / 1000.0f;
        const float edge = logf(min_p);
        for (int i = 0; i < V; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            const int pick = (int)(s % 8);
            x[i] = pick == 0 ? -INFINITY
                 : pick == 1 ? edge
                 : pick == 2 ? nextafterf(edge, 0.0f)
                 : (float)((int)((s >> 8) % 2000) - 1000) / 250.0f;
        }
        x[row % V] = 0.0f; /* the largest */
        if (row % 5 == 0) { /* the pair x1 < x0, x1 twice (a prefix may split the tie) */
            x[(row + 7) % V] = x[(row + 11) % V] = -0x1.fd029cp-7f;
            x[(row + 3) % V] = nextafterf(-0x1.fd029cp-7f, 0.0f);
        }
        const int32_t k = (int32_t)(s >> 30) % (V + 2);
        const int32_t want = tkp_minp_fold_k(x, V, 0.0f, k, &min_p, 0);
        const uint64_t t = tkp_minp_threshold(min_p);
        int valid = 0;
        for (int i = 0; i < V; i++)
            if (tkp_is_valid(x[i]))
                order[valid++] = i;
        sort_row = x;
        qsort(order, (size_t)valid, sizeof order[0], by_canonical_order);
        int64_t n_part = 0;
        for (int j = 0; j < valid && bad < 5; j++) {
            n_part += tkp_weight(x[order[j]], 0.0f) >= t;
            const int32_t got = tkp_minp_fold_part(k, n_part, V, x[order[j]], 0.0f, t);
            settled += got >= 0;
            declined_far += got < 0 && tkp_weight(x[order[j]], 0.0f) < t / 2;
            if (got >= 0 && got != want) {
                CHECK(0, "seed %llu, row %d, prefix %d: fold from the prefix %d, over the row %d",
                      (unsigned long long)seed, row, j + 1, got, want);
                bad++;
            }
        }
    }
    CHECK(settled > 10000 && declined_far == 0, "%lld prefixes settled, %lld declined far below",
          (long long)settled, (long long)declined_far);
}

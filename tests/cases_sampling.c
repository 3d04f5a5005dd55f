/* cases_sampling.c — the adversarial cases of min-p and of per-row keys (docs/SEMANTICS.md,
 * "min-p" and "Sampling: two keying modes"), appended to the suite by cases_build: ties at
 * the min-p boundary (in at min_p = their ratio, out one float above), min_p tiny, near 1, 1
 * and above, +inf and NaN rows under min-p, a one-ulp inversion of the weight at the
 * boundary, the same on rows long and odd enough that the GPU splits them (unaligned), rows
 * keyed by their own seeds 0 and 2^64 - 1 and offsets at both ends of their range, long rows
 * (V > 16384) under min-p, with and without a crowded bucket, a min-p threshold at the edge of
 * an order-key bucket, and rows whose top-k keeps every valid token under min-p. Each cycles
 * through the standard (k, p) mix. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "cases.h"

/* min_p values the min-p cases cycle through (0 and -1: off; 2: counts as 1). */
static const float minp_mix[] = { 0.05f, 0.0f, 0.5f, 1e-30f, 0.99999994f, 1.0f, 2.0f,
                                  -1.0f, 0.3f, 1e-7f, 0.9f };
#define MINP_MIX ((int64_t)(sizeof minp_mix / sizeof minp_mix[0]))

static void set_minp(struct test_case *c, float (*pick)(int64_t r))
{
    c->b.min_p = malloc(sizeof(float) * (size_t)c->b.batch);
    for (int64_t r = 0; r < c->b.batch; r++)
        c->b.min_p[r] = pick ? pick(r) : minp_mix[r % MINP_MIX];
}

/* The ratio of value -1.5 to a row's largest value 0, as the fixed point sees it (exact: a
 * float of exponent above -17 times 2^40 is a whole number), and one float above it. */
static float tie_ratio(void) { return tkp_expf(-1.5f); }
static float tie_minp(int64_t r)
{
    return r % 2 ? nextafterf(tie_ratio(), 1.0f) : tie_ratio();
}

/* Rows of a largest value 0, 40 tokens tied at -1.5 (the boundary of tie_minp), the rest
 * below or above it at random. */
static void fill_boundary_ties(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = -3.0f * fabsf(case_gauss(&s));
        x[(r * 13) % c->b.vocab] = 0.0f;
        for (int j = 0; j < 40; j++)
            x[(r + 7 * j + 1) % c->b.vocab] = -1.5f;
        x[(r * 13) % c->b.vocab] = 0.0f;
    }
}

/* Rows spanning [-120, 0]: many tokens of zero fixed mass, for tiny min_p. */
static void fill_wide(struct test_case *c, uint64_t s)
{
    for (int64_t i = 0; i < c->b.batch * c->b.vocab; i++)
        c->b.logits[i] = -120.0f * (float)((case_next_u64(&s) >> 11) * 0x1.0p-53);
}

/* Gaussian rows with +inf (even rows, two of them) or NaN (odd rows, one in ten) tokens. */
static void fill_special(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = (r % 2 && case_next_u64(&s) % 10 == 0) ? NAN : case_gauss(&s);
        if (r % 2 == 0) {
            x[2] = INFINITY;
            x[c->b.vocab - 3] = INFINITY;
        }
    }
}

/* A one-ulp inversion of the weight (docs/SEMANTICS.md, "min-p"): x1 is one float below x0,
 * yet tkp_weight(x1, 0) > tkp_weight(x0, 0) (tkp_expf is monotone only to its last unit).
 * At min_p = x1's ratio x1 passes and x0 does not: the count over the row is 2 (0 and x1),
 * over a prefix of the canonical order 1, so a GPU counting a sorted prefix differs from the
 * CPU here. */
static const float inv_x1 = -0x1.fd029cp-7f;
static float inv_minp(int64_t r)
{
    const float ratio = tkp_weight_float(inv_x1, 0.0f);
    return r % 3 == 0 ? ratio : r % 3 == 1 ? nextafterf(ratio, 0.0f) : nextafterf(ratio, 1.0f);
}

/* Rows of a largest value 0 and the pair x0 > x1 above, the rest far below (ratio < 0.4). */
static void fill_inversion(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = -1.0f - fabsf(case_gauss(&s));
        x[(r * 5) % c->b.vocab] = 0.0f;
        x[(r * 5 + 7) % c->b.vocab] = nextafterf(inv_x1, 0.0f);
        x[(r * 5 + 3) % c->b.vocab] = inv_x1;
    }
}

/* Rotate each row r by a row-dependent shift, so that its largest value, its boundary ties and
 * its inversion pair (placed near the row's start by the fills above) land in any of the
 * slices a GPU module splits a long row into (cake's cluster CTAs, rejection's chunks). */
static void rotate_rows(struct test_case *c)
{
    const int64_t v = c->b.vocab;
    float *tmp = malloc(sizeof(float) * (size_t)v);
    for (int64_t r = 0; tmp && r < c->b.batch; r++) {
        float *x = c->b.logits + r * v;
        const int64_t shift = (r * 2999 + 4099) % v;
        for (int64_t i = 0; i < v; i++)
            tmp[(i + shift) % v] = x[i];
        memcpy(x, tmp, sizeof(float) * (size_t)v);
    }
    free(tmp);
}

/* Rows long enough (V > 16384) that the GPU's rejection lists its first chunk's floor and
 * above in pass 1 (algos/rejection/README.md, "Passes") and folds min-p from that list: N(0, 1)
 * rows, the odd ones with every 16th token tied at 2.25 (a crowded bucket: the radix select,
 * no list, so min-p's count over the row). With the min-p mix, top-k off rows included. */
static void fill_long(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = r % 2 && i % 16 == 5 ? 2.25f : case_gauss(&s);
    }
}

/* A min-p threshold at the lower edge of an 11-bit bucket of the order key (the GPU's
 * rejection lists the k-th key's bucket and above, and folds min-p from them only when no
 * token at or below the edge y can pass, tkp_minp_none_at_or_below): a largest value 3, so
 * that fl(x - 3) is -4.25 for y = -1.25 and for edge_x1, the bucket's first value, and the
 * float above (-4.25 + 1 ulp) for edge_x2. At edge_minp(0), the weight of -4.25 + 1 ulp, the
 * edge_x1 tokens (in the bucket) fail while the certificate at y does not hold: at k = 10 the
 * bucket's 8 passing tokens do not settle k' and the row is counted (k' = 8). */
static const float edge_x1 = -0x1.3ffffep+0f, edge_x2 = -0x1.3ffff8p+0f;
static float edge_minp(int64_t r)
{
    const float up = tkp_expf(nextafterf(-4.25f, 0.0f));
    return r % 3 == 0 ? up : r % 3 == 1 ? tkp_expf(-4.25f) : nextafterf(up, 1.0f);
}

/* Rows of a largest value 3, five tokens at 2, two at edge_x2, twenty at edge_x1 and twenty at
 * -1.25, the rest far below (-10 and lower). */
static void fill_edge(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = -10.0f - fabsf(case_gauss(&s));
        for (int j = 0; j < 48; j++)
            x[(r + 11 * j) % c->b.vocab] = j < 1 ? 3.0f : j < 6 ? 2.0f : j < 8 ? edge_x2
                                                          : j < 28 ? edge_x1 : -1.25f;
    }
}

/* A bucket edge on a one-ulp inversion of tkp_expf: the largest value m = 0x1.e814ep-10 puts
 * fl(y - m) on inv_x1 for y = -0x1.cp-7, the largest float below an order-key bucket, and
 * fl(next(y) - m) on the float above it, which weighs less. At min_p = y's ratio the twenty
 * y tokens pass and the twenty next(y) tokens above them (the bucket of the 10th key) do not:
 * the count over the row is 21 (k' = k at k = 10), that bucket's 1. */
static const float einv_max = 0x1.e814ep-10f, einv_y = -0x1.cp-7f;
static float einv_minp(int64_t r)
{
    const float ratio = tkp_weight_float(einv_y, einv_max);
    return r % 2 ? nextafterf(ratio, 0.0f) : ratio;
}

static void fill_edge_inversion(struct test_case *c, uint64_t s)
{
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * c->b.vocab;
        for (int64_t i = 0; i < c->b.vocab; i++)
            x[i] = -10.0f - fabsf(case_gauss(&s));
        for (int j = 0; j < 41; j++)
            x[(r + 13 * j) % c->b.vocab] =
                j < 1 ? einv_max : j < 21 ? nextafterf(einv_y, 0.0f) : einv_y;
    }
}

/* Rows of about half -inf tokens, top-k at 0.7 V on every third row: there top-k keeps every
 * valid token while min-p may cut it (qrita searches such a row whole: algos/qrita/README.md,
 * "min-p"). */
static void fill_half_invalid(struct test_case *c, uint64_t s)
{
    const int64_t v = c->b.vocab;
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * v;
        for (int64_t i = 0; i < v; i++)
            x[i] = case_next_u64(&s) % 2 ? -INFINITY : case_gauss(&s);
        x[(r * 11) % v] = 2.5f;
        if (r % 3 == 0)
            c->b.k[r] = (int32_t)(v * 7 / 10);
    }
}

/* Per-row seeds and offsets at the ends of their ranges. */
static void set_row_keys(struct test_case *c)
{
    static const uint64_t seeds[] = { 0, UINT64_MAX, 1, 0x8000000000000000ull, 0xFFFFFFFFull };
    static const uint64_t offsets[] = { UINT64_MAX, 0, UINT64_MAX - 1, 0xFFFFFFFFull,
                                        0x100000000ull, 7 };
    c->b.seed = malloc(sizeof(uint64_t) * (size_t)c->b.batch);
    c->b.offset = malloc(sizeof(uint64_t) * (size_t)c->b.batch);
    for (int64_t r = 0; r < c->b.batch; r++) {
        c->b.seed[r] = seeds[r % 5];
        c->b.offset[r] = offsets[r % 6];
    }
}

int cases_sampling(struct test_case *c)
{
    int n = 0;
    case_alloc(&c[n], "minp_boundary_ties", 3001, 34, 700);
    fill_boundary_ties(&c[n], 3001);
    set_minp(&c[n++], tie_minp);
    case_alloc(&c[n], "minp_mix_gaussian", 3002, 34, 1000);
    for (int64_t i = 0; i < 34 * 1000; i++)
        c[n].b.logits[i] = 2.0f * case_gauss(&(uint64_t){ 3002 + (uint64_t)i });
    set_minp(&c[n++], NULL);
    case_alloc(&c[n], "minp_wide_zero_mass", 3003, 34, 900);
    fill_wide(&c[n], 3003);
    set_minp(&c[n++], NULL);
    case_alloc(&c[n], "minp_inf_nan_rows", 3004, 34, 300);
    fill_special(&c[n], 3004);
    set_minp(&c[n++], NULL);
    case_alloc(&c[n], "row_keys_extreme", 3005, 34, 500);
    fill_special(&c[n], 3005);
    set_row_keys(&c[n]);
    set_minp(&c[n++], NULL);
    case_alloc(&c[n], "minp_weight_inversion", 3007, 33, 96);
    fill_inversion(&c[n], 3007);
    set_minp(&c[n++], inv_minp);
    /* rows long enough that a GPU module splits them over several CTAs or chunks,
     * of odd lengths, so that rows start unaligned and a row's last chunk ends mid-vector,
     * rotated so that what decides a row lies in any of its chunks */
    case_alloc(&c[n], "minp_split_boundary_ties", 3008, 34, 9999);
    fill_boundary_ties(&c[n], 3008);
    rotate_rows(&c[n]);
    set_minp(&c[n++], tie_minp);
    case_alloc(&c[n], "minp_split_inversion", 3009, 33, 12289);
    fill_inversion(&c[n], 3009);
    rotate_rows(&c[n]);
    set_minp(&c[n++], inv_minp);
    case_alloc(&c[n], "minp_split_inf_nan_rows", 3010, 34, 8195);
    fill_special(&c[n], 3010);
    rotate_rows(&c[n]);
    set_minp(&c[n++], NULL);
    /* the pair's lower value three times: a top-k slab may end inside the tie, whose ratio is
     * min-p's (tkp_minp_none_at_or_below must see that the tie passes) */
    case_alloc(&c[n], "minp_inversion_tied", 3015, 51, 2000);
    fill_inversion(&c[n], 3015);
    for (int64_t r = 0; r < 51; r++)
        c[n].b.logits[r * 2000 + (r * 5 + 11) % 2000] =
            c[n].b.logits[r * 2000 + (r * 5 + 13) % 2000] = inv_x1;
    set_minp(&c[n++], inv_minp);
    case_alloc(&c[n], "row_keys_no_minp", 3006, 17, 256);
    for (int64_t i = 0; i < 17 * 256; i++)
        c[n].b.logits[i] = case_gauss(&(uint64_t){ 3006 + (uint64_t)i });
    set_row_keys(&c[n++]);
    /* rejection's fold of min-p on the GPU (algos/rejection/README.md, "min-p on the GPU") */
    case_alloc(&c[n], "minp_long_rows", 3011, 34, 40001);
    fill_long(&c[n], 3011);
    set_minp(&c[n++], NULL);
    case_alloc(&c[n], "minp_bucket_edge", 3012, 51, 17001);
    fill_edge(&c[n], 3012);
    rotate_rows(&c[n]);
    set_minp(&c[n++], edge_minp);
    case_alloc(&c[n], "minp_bucket_edge_inversion", 3013, 34, 2001);
    fill_edge_inversion(&c[n], 3013);
    set_minp(&c[n++], einv_minp);
    case_alloc(&c[n], "minp_topk_past_valid", 3014, 34, 777);
    fill_half_invalid(&c[n], 3014);
    set_minp(&c[n++], NULL);
    return n;
}

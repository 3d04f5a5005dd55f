/* prob.h — the host-and-device arithmetic every module shares for probabilities and mass.
 *
 * - tkp_is_valid / tkp_canon_before / tkp_order_key: the canonical order of docs/SEMANTICS.md.
 * - tkp_expf: our own exp (explicit fmaf, no libm), so the CPU and the GPU agree bit for bit.
 * - Mass is exact 64-bit fixed point: a token's weight exp(x - m) <= 1 becomes
 *   floor(w * 2^40), so sums of up to 2^23 tokens never overflow and never depend on the
 *   order of addition.
 * - Top-p: token j of the canonical order (within the top-k set when there is one) is kept
 *   iff j == 0 or the fixed mass before it is < tkp_topp_target(p, total). */
#ifndef TKP_PROB_H
#define TKP_PROB_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include "hd.h"

#define TKP_FIX_SHIFT 40
#define TKP_FIX_ONE ((uint64_t)1 << TKP_FIX_SHIFT)
#define TKP_MAX_VOCAB ((int64_t)1 << 23)

/* Finite values and +inf are valid; -inf and NaN never are. */
TKP_HD int tkp_is_valid(float x) { return x == x && x != -INFINITY; }

/* Does (a at index ia) come before (b at index ib) in the canonical order? Both valid. */
TKP_HD int tkp_canon_before(float a, int64_t ia, float b, int64_t ib)
{
    return a > b || (a == b && ia < ib);
}

/* An unsigned key ordered like the floats (-0.0 == +0.0); invalid values map to 0, below
 * every valid key. Branch-free: flip the sign bit of a positive float, every bit of a negative
 * one; the valid keys are then exactly [key(-FLT_MAX), key(+inf)] = [0x00800000, 0xFF800000]
 * (-inf and negative NaNs fall below, positive NaNs above). */
TKP_HD uint32_t tkp_order_key(float x)
{
    union { float f; uint32_t u; } c;
    c.f = x + 0.0f; /* -0.0 becomes +0.0 */
    const uint32_t key = c.u ^ ((uint32_t)((int32_t)c.u >> 31) | 0x80000000u);
    return key - 0x00800000u <= 0xFF000000u ? key : 0u;
}

/* The float whose order key is `key` (the inverse of tkp_order_key for valid keys). */
TKP_HD float tkp_key_value(uint32_t key)
{
    union { float f; uint32_t u; } c;
    c.u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
    return c.f;
}

/* The float f with (x >= f) <=> (x valid and tkp_order_key(x) >= thr), for thr >= 1: the
 * order key is monotone on the valid floats (-0.0 and +0.0 share a key and compare equal), NaN
 * compares false and -inf lies below -FLT_MAX. A thr up to key(-FLT_MAX) = 0x00800000 admits
 * every valid value; above it, thr (rounded to a bucket's first key by the callers) is the key
 * of a valid float up to key(+inf) = 0xFF800000 and of a NaN pattern beyond (then nothing is
 * >= f, and no valid key is >= thr either). Lets a pass test a bucket bound with one float
 * compare per value instead of an order key. */
TKP_HD float tkp_key_floor(uint32_t thr)
{
    return thr <= 0x00800000u ? -FLT_MAX : tkp_key_value(thr);
}

/* exp(x) for x <= 0; 0 below -87 (no subnormals). Cody-Waite reduction, degree-7 Taylor.
 * Written without branches (the cut-off is a select), so that a GPU thread can interleave the
 * weights of several tokens. */
TKP_HD float tkp_expf(float x)
{
    const float log2e = 1.44269504f, ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-6f;
    const int in_range = x >= -87.0f;
    x = in_range ? x : 0.0f;
    float n = floorf(fmaf(x, log2e, 0.5f));
    float r = fmaf(n, -ln2_hi, x);
    r = fmaf(n, -ln2_lo, r);
    float poly = 1.0f / 5040.0f;
    poly = fmaf(poly, r, 1.0f / 720.0f);
    poly = fmaf(poly, r, 1.0f / 120.0f);
    poly = fmaf(poly, r, 1.0f / 24.0f);
    poly = fmaf(poly, r, 1.0f / 6.0f);
    poly = fmaf(poly, r, 0.5f);
    poly = fmaf(poly, r, 1.0f);
    poly = fmaf(poly, r, 1.0f);
    union { float f; uint32_t u; } scale;
    scale.u = (uint32_t)((int)n + 127) << 23;
    return in_range ? poly * scale.f : 0.0f;
}

/* The weight of token value x in a row whose largest valid value is m, as a float in [0, 1]:
 * 0 for an invalid x; in a row holding +inf, 1 for each +inf token and 0 for the rest; else
 * tkp_expf(x - m). */
TKP_HD float tkp_weight_float(float x, float m)
{
    const float in_inf_row = x == INFINITY ? 1.0f : 0.0f;
    const float w = m == INFINITY ? in_inf_row : tkp_expf(x - m);
    return tkp_is_valid(x) ? w : 0.0f;
}

/* floor(f * 2^40) for f in [0, 1] (f = M * 2^(E - 150), M the mantissa with its hidden bit, E
 * the biased exponent; f is 0 or normal): a shift of M, the integer form of
 * (uint64_t)((double)f * 2^40). 1.0f gives TKP_FIX_ONE. */
TKP_HD uint64_t tkp_fix_of(float f)
{
    union { float f; uint32_t u; } c;
    c.f = f;
    const int e = (int)(c.u >> 23);
    const uint64_t mant = e ? (uint64_t)((c.u & 0x7FFFFFu) | 0x800000u) : 0;
    const int sh = e - 110; /* <= 17 for f <= 1 */
    const int down = sh >= 0 ? 0 : (-sh < 63 ? -sh : 63);
    return sh >= 0 ? mant << sh : mant >> down;
}

/* The fixed-point weight of token value x in a row whose largest valid value is m. */
TKP_HD uint64_t tkp_weight(float x, float m) { return tkp_fix_of(tkp_weight_float(x, m)); }

/* The mass target of top-p over a set of fixed total `total`: keep j iff j == 0 or the mass
 * before j is < target. p >= 1 keeps everything, p <= 0 keeps the first token only. */
TKP_HD uint64_t tkp_topp_target(float p, uint64_t total)
{
    if (!(p < 1.0f))
        return total + 1;
    if (!(p > 0.0f))
        return 0;
    return (uint64_t)((double)p * (double)total);
}

/* Is the min-p filter on for this row? (min_p <= 0 or NaN: off) */
TKP_HD int tkp_minp_on(float min_p) { return min_p > 0.0f; }

/* min-p's fixed-point threshold (docs/SEMANTICS.md, "min-p"): a token is kept iff its fixed
 * weight is >= this, i.e. >= min_p * TKP_FIX_ONE, the weight of the row's largest token.
 * min_p * 2^40 is exact in double (a float times a power of two), so the ceiling is exact.
 * Off (<= 0): 0, every token passes; >= 1: TKP_FIX_ONE, the tokens equal to the row's
 * largest pass. */
TKP_HD uint64_t tkp_minp_threshold(float min_p)
{
    if (!(min_p > 0.0f))
        return 0;
    if (min_p >= 1.0f)
        return TKP_FIX_ONE;
    const double t = (double)min_p * (double)TKP_FIX_ONE;
    const uint64_t c = (uint64_t)t;
    return (double)c < t ? c + 1 : c;
}

/* Is the top-k filter on for this row? */
TKP_HD int tkp_topk_on(int32_t k, int64_t vocab) { return k > 0 && (int64_t)k < vocab; }

/* min-p folded into top-k (docs/SEMANTICS.md, "min-p"): the k a row runs with, from its own k
 * and n, the number of its valid tokens whose fixed weight reaches tkp_minp_threshold. k itself
 * when n is 0 (no valid token), n covers the vocabulary, or top-k already keeps at most n;
 * else n. The one rule of tkp_minp_fold_k (cpu_row.c) and of tkp_minp_fold_part below (the
 * GPU modules'). */
TKP_HD int32_t tkp_minp_fold(int32_t k, int64_t n, int64_t vocab)
{
    if (n == 0 || n >= vocab || (tkp_topk_on(k, vocab) && (int64_t)k <= n))
        return k;
    return (int32_t)n;
}
/* How far up tkp_expf's running maximum is reached again (docs/SEMANTICS.md, "min-p"): for
 * every float d in [-87, 0), no d' <= d has tkp_expf(d') above the largest tkp_expf of d and
 * the TKP_EXPF_REACH floats above it. tkp_expf is monotone but at one-ulp inversions;
 * tests/test_prob.c proves the bound over every such float. */
#define TKP_EXPF_REACH 1

/* The certificate that lets a module fold min-p from part of a row: 1 when no valid token of
 * value x <= y reaches the min-p threshold t (>= 1) in a row whose largest valid value is m,
 * ties at y included; 0 when that is not certain. y is a valid value or -inf. Exact by
 * TKP_EXPF_REACH: x <= y gives x - m <= y - m = d (rounding is monotone), and every tkp_expf at
 * or below d is at most the largest of d's and its TKP_EXPF_REACH next floats'. */
TKP_HD int tkp_minp_none_at_or_below(float y, float m, uint64_t t)
{
    if (m == INFINITY) /* only the +inf tokens pass */
        return y < INFINITY;
    const float d = y - m;
    if (!(d >= -87.0f)) /* tkp_expf is 0 there and below */
        return 1;
    if (!(d < 0.0f)) /* y is the row's largest: it passes */
        return 0;
    union { float f; uint32_t u; } up;
    up.f = d;
    float most = tkp_expf(d);
    for (int j = 0; j < TKP_EXPF_REACH && up.u > 0x80000000u; j++) {
        up.u -= 1; /* a negative float's bits fall as it rises toward -0.0 */
        const float e = tkp_expf(up.f);
        most = e > most ? e : most;
    }
    return tkp_fix_of(most) < t;
}

/* min-p folded into top-k from part of a row (docs/SEMANTICS.md, "min-p"): n_part is the
 * number of passing tokens (fixed weight >= t) in a set holding every valid token of value > y,
 * maybe some <= y. Returns tkp_minp_fold's k when that settles it — top-k keeps at most n_part,
 * or no token at or below y passes — and -1 when only a count over the whole row does. */
TKP_HD int32_t tkp_minp_fold_part(int32_t k, int64_t n_part, int64_t vocab, float y, float m,
                                  uint64_t t)
{
    if (tkp_topk_on(k, vocab) && (int64_t)k <= n_part)
        return k;
    if (tkp_minp_none_at_or_below(y, m, t))
        return tkp_minp_fold(k, n_part, vocab);
    return -1;
}

/* Is the top-p filter on for this row? */
TKP_HD int tkp_topp_on(float p) { return p < 1.0f; }

#endif

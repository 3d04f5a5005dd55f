/* mass_floor.h — the mass floor of a top-p row, host-and-device code (TKP_HD) shared by qrita
 * (its second-level truncation, algos/qrita/README.md) and rejection (its first candidate set of
 * top-p alone, algos/rejection/README.md).
 *
 * A row's fixed-point mass is binned by the distance of a token from the row's largest value:
 * bin floor((max - x) * 4) for the tokens within 16 of max (TKP_MASS_BINS bins of a quarter
 * logit), none for the rest. The first bins whose mass reaches the top-p target hold every kept
 * token: the tokens in them are a canonical prefix of mass >= target, so the token after them is
 * not kept. The bin is a monotone (non-increasing) function of the key, so those tokens are
 * exactly the keys from one key up, found by bisection. Float subtraction and a power-of-two
 * scale: the same on every backend. */
#ifndef TKP_MASS_FLOOR_H
#define TKP_MASS_FLOOR_H

#include <math.h>
#include <stdint.h>

#include "hd.h"
#include "prob.h"

#define TKP_MASS_BINS 64

/* The bin of value x in a row of largest value max (TKP_MASS_BINS: beyond the last bin). A
 * +inf row bins its +inf tokens, the only ones with weight. */
TKP_HD int tkp_mass_bin(float x, float max)
{
    if (max == INFINITY)
        return x == INFINITY ? 0 : TKP_MASS_BINS;
    float d = (max - x) * 4.0f;
    return d < (float)TKP_MASS_BINS ? (int)d : TKP_MASS_BINS;
}

/* The first bin whose running mass (`hist`: the mass of each bin) reaches `target`, or
 * TKP_MASS_BINS when the bins do not reach it. */
TKP_HD int tkp_mass_floor_bin(const uint64_t *hist, uint64_t target)
{
    uint64_t acc = 0;
    for (int b = 0; b < TKP_MASS_BINS; b++) {
        acc += hist[b];
        if (acc >= target)
            return b;
    }
    return TKP_MASS_BINS;
}

/* The smallest key in [min_key, max_key] whose bin is <= b (b < TKP_MASS_BINS; bin(max_key) is
 * 0, so max_key qualifies): every token of bin <= b has a key >= it, and no other. */
TKP_HD uint32_t tkp_mass_floor_key(int b, float max, uint32_t min_key, uint32_t max_key)
{
    uint32_t lo = min_key, hi = max_key;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tkp_mass_bin(tkp_key_value(mid), max) <= b)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The mass floor: every kept token of a top-p-alone row has a key > it; min_key - 1 (no
 * tightening) when the bins do not reach the target. min_key/max_key: the row's valid keys. */
TKP_HD uint32_t tkp_mass_floor(const uint64_t *hist, uint64_t target, float max,
                               uint32_t min_key, uint32_t max_key)
{
    const int b = tkp_mass_floor_bin(hist, target);
    if (b >= TKP_MASS_BINS)
        return min_key - 1;
    return tkp_mass_floor_key(b, max, min_key, max_key) - 1;
}

#endif

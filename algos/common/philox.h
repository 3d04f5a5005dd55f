/* philox.h — Philox4x32-10 (Salmon et al., SC'11), host-and-device.
 *
 * The stream of row r under seed s: key = (lo32(s), hi32(s)), counter =
 * (draw, r, lo32(offset), hi32(offset)). One call yields four 32-bit words; a draw uses the
 * first two as one 64-bit uniform integer. The same (seed, row, offset, draw) gives the same
 * number on the CPU and on the GPU. Which (seed, row, offset) a row of a batch uses, the
 * batch's or its own, is tkp_row_key (docs/SEMANTICS.md, "Sampling: two keying modes"). */
#ifndef TKP_PHILOX_H
#define TKP_PHILOX_H

#include <stdint.h>
#include "hd.h"

struct tkp_philox4 {
    uint32_t v[4];
};

TKP_HD uint32_t tkp_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t prod = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(prod >> 32);
    return (uint32_t)prod;
}

TKP_HD struct tkp_philox4 tkp_philox4x32_10(struct tkp_philox4 ctr, uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = tkp_mulhilo32(0xD2511F53u, ctr.v[0], &hi0);
        uint32_t lo1 = tkp_mulhilo32(0xCD9E8D57u, ctr.v[2], &hi1);
        struct tkp_philox4 next;
        next.v[0] = hi1 ^ ctr.v[1] ^ k0;
        next.v[1] = lo1;
        next.v[2] = hi0 ^ ctr.v[3] ^ k1;
        next.v[3] = lo0;
        ctr = next;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

/* The four words of draw `draw` of row `row`. */
TKP_HD struct tkp_philox4 tkp_philox_block(uint64_t seed, uint64_t row, uint64_t offset,
                                           uint32_t draw)
{
    struct tkp_philox4 ctr;
    ctr.v[0] = draw;
    ctr.v[1] = (uint32_t)row;
    ctr.v[2] = (uint32_t)offset;
    ctr.v[3] = (uint32_t)(offset >> 32);
    return tkp_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* The Philox key of one row: its seed, the row slot of the counter and its offset. */
struct tkp_row_key {
    uint64_t seed, row, offset;
};

/* The key of row r of a batch (docs/SEMANTICS.md, "Sampling: two keying modes"). Batch keying,
 * both arrays NULL: (seed, r, offset), the row index in the counter. Per-row keying, either
 * array given: (row_seed[r] or seed, 0, row_offset[r] or offset), nothing of the row's place
 * in the batch, so a row draws the same tokens in any batch. `row_seed` and `row_offset` are
 * the struct tkp_io arrays (device pointers in a kernel). tkp_row_key_from takes the seed and
 * offset already chosen (a kernel that copied them ahead of use) and `per_row`: either array
 * given. */
TKP_HD struct tkp_row_key tkp_row_key_from(int per_row, uint64_t seed, uint64_t offset,
                                           int64_t r)
{
    struct tkp_row_key key;
    key.seed = seed;
    key.offset = offset;
    key.row = per_row ? 0 : (uint64_t)r;
    return key;
}

/* The key of row r from the arrays (NULL: the batch's seed or offset). */
TKP_HD struct tkp_row_key tkp_row_key(const uint64_t *row_seed, const uint64_t *row_offset,
                                      uint64_t seed, uint64_t offset, int64_t r)
{
    return tkp_row_key_from(row_seed || row_offset, row_seed ? row_seed[r] : seed,
                            row_offset ? row_offset[r] : offset, r);
}

/* A uniform 64-bit integer for draw `draw` of row `row`. */
TKP_HD uint64_t tkp_philox_u64(uint64_t seed, uint64_t row, uint64_t offset, uint32_t draw)
{
    struct tkp_philox4 r = tkp_philox_block(seed, row, offset, draw);
    return ((uint64_t)r.v[1] << 32) | r.v[0];
}

/* floor(r * n / 2^64): a uniform integer in [0, n) from a uniform 64-bit r. */
TKP_HD uint64_t tkp_scale_u64(uint64_t r, uint64_t n)
{
#ifdef __CUDA_ARCH__
    return __umul64hi(r, n);
#else
    return (uint64_t)(((unsigned __int128)r * n) >> 64);
#endif
}

/* The inverse-CDF target of draw `draw` of row `row` over a kept mass `total` > 0: a uniform
 * integer in [0, total). The drawn token is the first whose inclusive prefix exceeds it. */
TKP_HD uint64_t tkp_draw_target(uint64_t seed, uint64_t row, uint64_t offset, uint32_t draw,
                                uint64_t total)
{
    return tkp_scale_u64(tkp_philox_u64(seed, row, offset, draw), total);
}

/* The first i in [0, n) with incl[i] > target, for a nondecreasing incl with
 * incl[n - 1] > target (binary search). */
TKP_HD int64_t tkp_first_above(const uint64_t *incl, int64_t n, uint64_t target)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (incl[mid] > target)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

#endif

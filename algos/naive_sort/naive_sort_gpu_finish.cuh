/* naive_sort_gpu_finish.cuh — the steps of naive_finish (step 3 of naive_sort_gpu.cu) on one
 * row's sorted keys, one block per row (README.md, "GPU source layout"): the block-wide helpers
 * (a sum, a partition point), the sorted total, top-p on the sorted prefix, the boundary key and
 * its ties, then per tile of the row in index order the loads, the kept bytes and the draws. */
#ifndef TKP_NAIVE_SORT_GPU_FINISH_CUH
#define TKP_NAIVE_SORT_GPU_FINISH_CUH

#include <stdint.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "naive_sort_gpu_types.cuh"

namespace {

/* A block-wide sum (CUB's BlockReduce `Reduce` over its temporary storage), the result given
 * to every thread through `slot`. The leading barrier protects the temporary storage and the
 * slot from their previous use. */
template <typename Reduce, typename T>
__device__ T block_sum(typename Reduce::TempStorage &tmp, T &slot, T v)
{
    __syncthreads();
    const T s = Reduce(tmp).Sum(v);
    if (threadIdx.x == 0)
        slot = s;
    __syncthreads();
    return slot;
}

/* The first position in [lo, hi) where pred is false, given that pred holds on a prefix of
 * [lo, hi) (hi when it holds everywhere). Every thread of the block must call it with the
 * same lo and hi; each round probes FIN_THREADS evenly spaced positions. */
template <class Pred>
__device__ int64_t block_partition_point(int64_t lo, int64_t hi, Pred pred)
{
    while (lo < hi) {
        const int64_t step = (hi - lo + FIN_THREADS - 1) / FIN_THREADS;
        const int64_t q = lo + (int64_t)threadIdx.x * step;
        const int c = __syncthreads_count(q < hi && pred(q));
        if (c == 0)
            return lo;
        /* probes 0..c-1 hold, probe c (when inside) does not */
        int64_t nlo = lo + (int64_t)(c - 1) * step + 1, nhi = lo + (int64_t)c * step;
        lo = nlo;
        hi = nhi < hi ? nhi : hi;
    }
    return lo;
}

/* The target of draw d of row `row` over a kept mass `total`. The row's key (tkp_row_key) is
 * read from the arrays here, at each use, so that a captured graph replays with whatever they
 * hold and the key takes no registers through the row's pass. */
__device__ __forceinline__ uint64_t draw_target(const FinKeys &keys, int64_t row, int d,
                                                uint64_t total)
{
    const struct tkp_row_key rk =
        tkp_row_key(keys.row_seed, keys.row_offset, keys.seed, keys.offset, row);
    return tkp_draw_target(rk.seed, rk.row, rk.offset, (uint32_t)d, total);
}

/* The total weight of the first n sorted keys of the row (m: the row's largest value). */
__device__ __forceinline__ uint64_t fin_sorted_total(FinShared &sh, const uint32_t *srt,
                                                     int64_t n, float m)
{
    const int tid = threadIdx.x;
    uint64_t mine = 0;
    for (int64_t base = 0; base < n; base += FIN_TILE)
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)j * FIN_THREADS + tid;
            if (idx < n)
                mine += tkp_weight(tkp_key_value(srt[idx]), m);
        }
    return block_sum<RedW>(sh.tmp.rw, sh.bc_u64, mine);
}

/* The row's k with min-p folded in (docs/SEMANTICS.md, "min-p"; tkp_minp_fold_k's on the
 * CPU) from its sorted keys: the tokens reaching threshold thr against the row's largest m,
 * counted a tile at a time from the top until tkp_minp_fold_part settles it — top-k keeps no
 * more than the count, or no token at or below the tile's last passes — at the latest at the
 * last of the `valid` keys, where the count is the row's. */
__device__ int32_t fin_minp_k(FinShared &sh, const uint32_t *srt, int64_t valid, int64_t vocab,
                              float m, int32_t k, uint64_t thr)
{
    const int tid = threadIdx.x;
    int64_t counted = 0;
    for (int64_t base = 0; base < valid; base += FIN_TILE) {
        int mine = 0;
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            const int64_t idx = base + (int64_t)j * FIN_THREADS + tid;
            mine += idx < valid && tkp_weight(tkp_key_value(srt[idx]), m) >= thr;
        }
        counted += block_sum<RedI>(sh.tmp.ri, sh.bc_int, mine);
        const int64_t end = base + FIN_TILE < valid ? base + FIN_TILE : valid;
        const float y = end == valid ? -INFINITY : tkp_key_value(srt[end - 1]);
        const int32_t folded = tkp_minp_fold_part(k, counted, vocab, y, m, thr);
        if (folded >= 0)
            return folded;
    }
    return k; /* no valid token */
}

/* Top-p on the first n sorted keys: nk = #{j < n : j == 0 or (mass before j) < target}, a
 * prefix of the order, and kept_total = their weight. */
__device__ __forceinline__ void fin_topp_prefix(FinShared &sh, const uint32_t *srt, int64_t n,
                                                float m, float p, uint64_t total, int64_t &nk,
                                                uint64_t &kept_total)
{
    const int tid = threadIdx.x;
    const uint64_t target = tkp_topp_target(p, total);
    uint64_t carry = 0, mine_w = 0;
    int mine_n = 0;
    for (int64_t base = 0; base < n; base += FIN_TILE) {
        uint64_t w[FIN_ITEMS], ex[FIN_ITEMS], agg;
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)tid * FIN_ITEMS + j;
            w[j] = idx < n ? tkp_weight(tkp_key_value(srt[idx]), m) : 0;
        }
        __syncthreads();
        tkp_block_excl_scan_items<FIN_WARPS>(w, ex, sh.tmp.sw, agg);
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)tid * FIN_ITEMS + j;
            if (idx < n && (idx == 0 || carry + ex[j] < target)) {
                mine_n++;
                mine_w += w[j];
            }
        }
        carry += agg;
        if (carry >= target) /* every later token has at least this much before it */
            break;
    }
    nk = block_sum<RedI>(sh.tmp.ri, sh.bc_int, mine_n);
    kept_total = block_sum<RedW>(sh.tmp.rw, sh.bc_u64, mine_w);
}

/* The boundary of the kept set: tokens with key > kb are kept, and the first `ties` with
 * key == kb (in index order, ranked only when tie_scan: some ties at kb are dropped). */
struct FinBoundary {
    uint32_t kb;
    int64_t ties;
    bool tie_scan;
};

__device__ __forceinline__ FinBoundary fin_boundary(const uint32_t *srt, int64_t nk,
                                                    int64_t vocab)
{
    FinBoundary bd;
    bd.kb = 0xFFFFFFFFu; /* no valid key equals it (+inf is 0xFF800000) */
    bd.ties = 0;
    bd.tie_scan = false;
    if (nk > 0) {
        bd.kb = srt[nk - 1];
        const uint32_t b = bd.kb;
        const int64_t above =
            block_partition_point(0, nk, [&](int64_t j) { return srt[j] > b; });
        const int64_t upto =
            block_partition_point(nk, vocab, [&](int64_t j) { return srt[j] >= b; });
        bd.ties = nk - above;
        bd.tie_scan = upto - above > bd.ties; /* some ties at kb are dropped: rank them by index */
    }
    return bd;
}

/* The thread's FIN_ITEMS values x[i0 ...] of the tile, as floats (four-element vector loads
 * when the row is vector-aligned, tkp_vec4_ok: i0 is a multiple of FIN_ITEMS; NaN past the
 * row's end). */
template <class E>
__device__ __forceinline__ void fin_load_items(const void *x, bool x_vec, int64_t i0,
                                               int64_t vocab, float (&v)[FIN_ITEMS])
{
    if (x_vec && i0 + FIN_ITEMS <= vocab) {
#pragma unroll
        for (int q = 0; q < FIN_ITEMS / 4; q++) {
            float4 f = tkp_load4<E>(x, i0 + 4 * q);
            v[4 * q] = f.x;
            v[4 * q + 1] = f.y;
            v[4 * q + 2] = f.z;
            v[4 * q + 3] = f.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            v[j] = i0 + j < vocab ? tkp_load1<E>(x, i0 + j)
                                  : __int_as_float(0x7FC00000); /* NaN */
    }
}

/* Whether each of the thread's values is kept: above the boundary, or a tie at it among the
 * first `ties` in index order (tie_carry: the ties of the earlier tiles; a block scan ranks
 * the tile's). */
__device__ __forceinline__ void fin_keep_items(FinShared &sh, const float (&v)[FIN_ITEMS],
                                               int64_t nk, const FinBoundary &bd,
                                               int64_t &tie_carry, bool (&keep)[FIN_ITEMS])
{
    int eq[FIN_ITEMS], rank[FIN_ITEMS];
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++) {
        uint32_t key = tkp_order_key(v[j]);
        eq[j] = nk > 0 && key == bd.kb;
        keep[j] = nk > 0 && key > bd.kb;
    }
    if (bd.tie_scan) {
        int agg;
        __syncthreads();
        tkp_block_excl_scan_items<FIN_WARPS>(eq, rank, sh.tmp.si, agg);
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            keep[j] = keep[j] || (eq[j] && tie_carry + rank[j] < bd.ties);
        tie_carry += agg;
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            keep[j] = keep[j] || eq[j];
    }
}

/* The mask bytes kp[0, FIN_ITEMS) of tokens i0 ... (one 8-byte store when aligned). */
__device__ __forceinline__ void fin_write_mask(uint8_t *kp, int64_t i0, int64_t vocab,
                                               const bool (&keep)[FIN_ITEMS])
{
    if (i0 + FIN_ITEMS <= vocab && ((uintptr_t)kp & 7) == 0) {
        uint2 pk;
        pk.x = (uint32_t)keep[0] | (uint32_t)keep[1] << 8 | (uint32_t)keep[2] << 16 |
               (uint32_t)keep[3] << 24;
        pk.y = (uint32_t)keep[4] | (uint32_t)keep[5] << 8 | (uint32_t)keep[6] << 16 |
               (uint32_t)keep[7] << 24;
        *reinterpret_cast<uint2 *>(kp) = pk;
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            if (i0 + j < vocab)
                kp[j] = keep[j] ? 1 : 0;
    }
}

/* The draws of row `row` that fall in the tile starting at token `base`: the tile's kept
 * weights scanned in index order into sh.cum; a draw whose target t (my_target when
 * draws <= FIN_THREADS) has wcarry <= t < wcarry + the tile's mass is the first position
 * whose inclusive prefix exceeds t - wcarry. Returns the tile's kept mass. */
__device__ __forceinline__ uint64_t fin_draw_tile(FinShared &sh, const float (&v)[FIN_ITEMS],
                                                  const bool (&keep)[FIN_ITEMS], float m,
                                                  int64_t base, uint64_t wcarry,
                                                  int64_t *out, int draws, uint64_t my_target,
                                                  const FinKeys &keys, int64_t row,
                                                  uint64_t kept_total)
{
    const int tid = threadIdx.x;
    uint64_t w[FIN_ITEMS], ex[FIN_ITEMS], agg;
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++)
        w[j] = keep[j] ? tkp_weight(v[j], m) : 0;
    __syncthreads(); /* the previous tile's draws are done with cum[] */
    tkp_block_excl_scan_items<FIN_WARPS>(w, ex, sh.tmp.sw, agg);
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++)
        sh.cum[tid * FIN_ITEMS + j] = ex[j] + w[j];
    __syncthreads();
    if (agg > 0)
        for (int d = tid; d < draws; d += FIN_THREADS) {
            uint64_t t = draws <= FIN_THREADS ? my_target
                                              : draw_target(keys, row, d, kept_total);
            if (t >= wcarry && t - wcarry < agg) {
                const uint64_t local = t - wcarry;
                int lo = 0, hi = FIN_TILE - 1; /* first position with cum > local */
                while (lo < hi) {
                    int mid = (lo + hi) >> 1;
                    if (sh.cum[mid] > local)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                out[d] = base + lo;
            }
        }
    return agg;
}

} // namespace

#endif

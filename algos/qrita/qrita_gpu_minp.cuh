/* qrita_gpu_minp.cuh — min-p folded into qrita's own kernels (README.md, "min-p"), with no
 * launch of its own: a row keeps what the CPU's does, the first min(k, n) tokens of the
 * canonical order, n those passing min-p (docs/SEMANTICS.md, "min-p"), k' = tkp_minp_fold(k, n).
 *
 * - Top-k off: k' may switch top-k on, and the threshold (qr_prep) depends on it, so qr_prep
 *   counts the row first, by the row's own block (its largest value, then its count:
 *   prep_minp_fold), and the row runs on k' throughout (the row's k_trunc).
 * - Top-k on: the truncation (threshold, gather, hit) runs on k; the search folds (search_minp_k)
 *   before it runs on k' <= k. The buffer gathered for k holds every key above gather_key when
 *   it is complete, so the count over it settles k' (tkp_minp_fold_part, prob.h: top-k keeps at
 *   most the buffer's passing tokens, or no token at or below gather_key passes); else, or with
 *   TKP_MINP_FORCE_COUNT (tkp_minp_force_count, gpu_minp.cuh), a count over the row by the
 *   search's block (a warp hands the row to qr_search_heavy).
 * min_p is read from device memory by the kernels, so a CUDA graph replays with new values. */
#ifndef QRITA_GPU_MINP_CUH
#define QRITA_GPU_MINP_CUH

#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_minp.cuh"
#include "../common/prob.h"
#include "qrita_gpu_group.cuh"
#include "qrita_gpu_slot.cuh"
#include "qrita_gpu_stream.cuh"
#include "qrita_gpu_types.cuh"

/* Row r's min_p (r < batch; 0, off, without min-p). */
__device__ __forceinline__ float qr_min_p(const qr_args &a, int64_t r)
{
    return a.io.min_p ? a.io.min_p[r] : 0.0f;
}

/* Does qr_prep fold min-p into row r's k (min-p on, top-k off)? Then the kernels after it read
 * the row's k from its k_trunc. */
__device__ __forceinline__ bool qr_minp_first(const qr_args &a, int64_t r, int32_t k)
{
    return tkp_minp_on(qr_min_p(a, r)) && !tkp_topk_on(k, a.vocab);
}

/* qr_prep's fold of a row of top-k off (the whole block of NT threads): k' from the count over
 * the row x of its tokens passing min_p against its largest value (k when no token is
 * valid). */
template <class E>
__device__ int32_t prep_minp_fold(const void *x, int64_t V, int32_t k, float min_p)
{
    __shared__ unsigned scratch[2][NT / 32];
    unsigned none = 0, kmax = 0;
    auto top = [&](const float4 (&v)[4], const int (&)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                kmax = max(kmax, key[u][c]);
    };
    stream_batches_of<E>(x, V, V, 0, top);
    tkp_block_sum_max<NT / 32>(none, kmax, scratch);
    if (kmax == 0) /* the same in every thread */
        return k;
    const float m = tkp_key_value(kmax);
    const uint64_t t = tkp_minp_threshold(min_p);
    unsigned n[1] = { 0 };
    auto count = [&](const float4 (&v)[4], const int (&)[4], const bool (&)[4], int) {
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                n[0] += (unsigned)tkp_minp_counts(batch_elem(v, u, c), m, t);
    };
    stream_batches_of<E>(x, V, V, 0, count);
    tkp_block_sums<NT / 32>(n, scratch);
    return tkp_minp_fold(k, (int64_t)n[0], V);
}

/* The search's fold of row r, whose top-k is on (k) and min-p on (min_p), by its group of G
 * threads: k'. -1 when a warp (G = 32) would have to count the row (or a buffer of more than
 * a.heavy_n keys): the caller lists the row for qr_search_heavy. */
template <int G, class E>
__device__ __forceinline__ int32_t search_minp_k(const qr_args &a, int64_t r, const qr_row *row,
                                                 int32_t k, float min_p, int tid, SearchSmem &sm)
{
    const int64_t V = a.vocab, valid = row->valid;
    if (valid == 0) /* n = 0: tkp_minp_fold keeps k */
        return k;
    const float m = tkp_key_value(row->max_key);
    const uint64_t t = tkp_minp_threshold(min_p);
    const int64_t pooled = a.tight ? row->pooled : row->gathered;
    int32_t folded = -1;
    /* k < valid: the buffer is qr_scan's, complete (row_plan), not qr_gather2's */
    if (!a.minp_force && (row->flags & 1) && pooled <= a.cap_gpu && k < valid) {
        if (G == 32 && pooled > a.heavy_n)
            return -1;
        const uint32_t *pk = pool_keys(a, r, false);
        uint32_t n = 0;
        for (int64_t i = tid; i < pooled; i += G)
            n += (uint32_t)tkp_minp_counts(tkp_key_value(pk[i]), m, t);
        n = group_sum<G>(n, sm.wcnt);
        const uint32_t y = row->gather_key; /* 0: the buffer holds every valid key */
        folded = tkp_minp_fold_part(k, n, V, y ? tkp_key_value(y) : -INFINITY, m, t);
    }
    if (folded >= 0 || G == 32)
        return folded;
    /* one element a thread at a time: the search is at its register bound (README, "min-p") */
    const uint32_t n = (uint32_t)tkp_minp_share_of<E>(tkp_row_ptr<E>(a.io.logits, a.stride, r),
                                                      V, m, t, (uint32_t)tid, G);
    return tkp_minp_fold(k, group_sum<G>(n, sm.wcnt), V);
}

#endif

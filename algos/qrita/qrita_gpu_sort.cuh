/* qrita_gpu_sort.cuh — search=sort on the GPU (README.md, "GPU"): the candidates of each row
 * that lie above the query's lower end are compacted into a segment of their own (qr_sort_keys,
 * qrita_gpu.cu), sorted in descending order by CUB's segmented radix sort (qrita_gpu.cu, the
 * host), then walked by the search (sorted_boundary) as the CPU walks its sorted pool
 * (qrita_sorted_boundary). */
#ifndef QRITA_GPU_SORT_CUH
#define QRITA_GPU_SORT_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_warp.cuh"
#include "qrita.h"
#include "qrita_gpu_types.cuh"

/* Inclusive prefix sum of one 64-bit value per thread over a group of G threads (a warp, or a
 * block of G / 32 warps: the block scan of algos/common/gpu_block.cuh); `total` gets the
 * group's sum. Integer sums: order-free. */
template <int G>
__device__ __forceinline__ u64 group_scan_u64(u64 v, u64 &total)
{
    if (G == 32) {
        v = tkp_warp_incl_scan(v);
        total = __shfl_sync(FULL, v, 31);
        return v;
    }
    __shared__ u64 warp_total[G / 32];
    return tkp_block_excl_scan<G / 32>(v, warp_total, total) + v;
}

/* The smallest thread index of the group whose flag is set (G when none). */
template <int G>
__device__ __forceinline__ int group_first(bool flag)
{
    const unsigned m = __ballot_sync(FULL, flag);
    const int first = m ? __ffs((int)m) - 1 : G;
    if (G == 32)
        return first;
    __shared__ int warp_first[G / 32];
    const int w = (int)(threadIdx.x >> 5);
    if ((threadIdx.x & 31) == 0)
        warp_first[w] = m ? w * 32 + first : G;
    __syncthreads();
    int best = G;
    for (int j = 0; j < G / 32; j++)
        best = min(best, warp_first[j]);
    __syncthreads();
    return best;
}

/* The CPU's walk of its sorted pool (qrita_sorted_boundary): the first m >= 1 keys of `sorted`
 * (n keys, descending) whose measure reaches q.target, at most q.set_size; with dedup, the
 * boundary keeps the copies of its key among those m. Called by the G threads of the group
 * (tid: the thread's index in it); every thread returns the boundary. */
template <int G>
__device__ struct qrita_boundary sorted_boundary(const uint32_t *sorted, int64_t n,
                                                 const struct qrita_query &q, int dedup, int tid)
{
    const int64_t size = n < q.set_size ? n : q.set_size;
    if (size <= 0)
        return qrita_all_valid();
    int64_t kept = size;
    if (q.measure.unit) {
        const int64_t want = q.target > 1 ? (int64_t)q.target : 1;
        kept = want < size ? want : size;
    } else {
        u64 before = 0;
        for (int64_t base = 0; base < size; base += G) {
            const int64_t i = base + tid;
            const u64 w = i < size ? qrita_measure_of(q.measure, sorted[i]) : 0;
            u64 tile;
            const u64 incl = group_scan_u64<G>(w, tile);
            const int first = group_first<G>(i < size && before + incl >= q.target);
            if (first < G) {
                kept = base + first + 1;
                break;
            }
            before += tile;
        }
    }
    struct qrita_boundary b = { sorted[kept - 1], QRITA_KEEP_ALL };
    if (dedup) { /* the copies of b.key among the first kept: from its first position on */
        int64_t lo = 0, hi = kept - 1;
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (sorted[mid] <= b.key)
                hi = mid;
            else
                lo = mid + 1;
        }
        b.keep = kept - lo;
    }
    return b;
}

#endif

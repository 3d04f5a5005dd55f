/* qrita_gpu_group.cuh — integer sums over a group of G threads, the unit qrita's search works
 * in (a warp, G = 32, or a block of G / 32 warps). The warp-level primitives shared by every
 * module are in ../common/gpu_warp.cuh; the two sums here are qrita's own variants on purpose
 * (see each). All are exact on integers: their results do not depend on the order of the
 * additions (docs/SEMANTICS.md, "Determinism"). */
#ifndef QRITA_GPU_GROUP_CUH
#define QRITA_GPU_GROUP_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "qrita_gpu_types.cuh"

/* The barrier of a group: the warp's, or the block's. */
template <int G>
__device__ __forceinline__ void gsync()
{
    if (G == 32)
        __syncwarp();
    else
        __syncthreads();
}

/* The sum of one count per thread over a group of G threads (a warp, or a block of G / 32
 * warps with `part` holding G / 32 words of shared scratch). Every thread gets the sum. The
 * warp's sum is one redux.sync (__reduce_add_sync), not tkp_warp_sum's five shuffle rounds. */
template <int G>
__device__ __forceinline__ uint32_t group_sum(uint32_t v, unsigned *part)
{
    v = __reduce_add_sync(FULL, v);
    if (G > 32) {
        if ((threadIdx.x & 31) == 0)
            part[threadIdx.x >> 5] = v;
        __syncthreads();
        v = 0;
        for (int i = 0; i < G / 32; i++)
            v += part[i];
        __syncthreads();
    }
    return v;
}

/* The exact 64-bit sum over the warp from three redux.sync sums of 24-, 24- and 16-bit fields
 * (each field sum stays below 2^32): three instructions where tkp_warp_sum<u64> takes five
 * rounds of two 32-bit shuffles and a 64-bit add; the search folds five of these per pass. */
__device__ __forceinline__ u64 warp_sum_u64(u64 m)
{
    const u64 lo = __reduce_add_sync(FULL, (unsigned)(m & 0xFFFFFFu));
    const u64 mid = __reduce_add_sync(FULL, (unsigned)((m >> 24) & 0xFFFFFFu));
    const u64 hi = __reduce_add_sync(FULL, (unsigned)(m >> 48));
    return lo + (mid << 24) + (hi << 48);
}

#endif

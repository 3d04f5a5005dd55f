/* qrita_gpu_prep.cuh — the pieces of qr_prep (qrita_gpu.cu), the sample statistics of a row: its
 * first values read PU per thread at a time, the CPU's fold of the 256 statistics lanes, and the
 * count of sample keys above a key (the tight gather's search, README.md, "Buffer bound and
 * workspace"). Called by the whole block (NT = QRITA_STAT_LANES threads). */
#ifndef QRITA_GPU_PREP_CUH
#define QRITA_GPU_PREP_CUH

#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_logits.cuh"
#include "../common/mass_floor.h"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu_group.cuh"
#include "qrita_gpu_types.cuh"

/* The CPU's fold of the 256 lanes (qrita_passes.c: lane[j] += lane[j + half], half = 128 .. 1):
 * the first three levels in shared memory, the last five (pairs inside one warp) by shuffles,
 * which add the same pairs in the same order. Every thread gets the total. (Not tkp_warp_sum: a
 * double sum, whose pairs must be the CPU's.) */
__device__ double fold_lanes(double v, double *lane)
{
    const int t = threadIdx.x;
    lane[t] = v;
    __syncthreads();
    for (int half = QRITA_STAT_LANES / 2; half >= 32; half /= 2) {
        if (t < half)
            lane[t] += lane[t + half];
        __syncthreads();
    }
    if (t < 32) {
        double r = lane[t];
        for (int half = 16; half > 0; half /= 2)
            r += __shfl_down_sync(FULL, r, half);
        if (t == 0)
            lane[0] = r;
    }
    __syncthreads();
    const double total = lane[0];
    __syncthreads();
    return total;
}

/* v[u] = sample base + u * 256 + t of the row x of element type E (NaN past the sample's n
 * values). */
template <class E, int PU>
__device__ __forceinline__ void load_samples(float (&v)[PU], const void *x, int64_t n,
                                             int64_t base, int t)
{
#pragma unroll
    for (int u = 0; u < PU; u++) {
        const int64_t i = base + u * QRITA_STAT_LANES + t;
        v[u] = i < n ? qr_elem<E>(x, i) : NAN;
    }
}

/* How many of the n sample keys are >= key, block-wide (`one`: v already holds every sample). */
template <class E, int PU>
__device__ __forceinline__ unsigned samples_at_least(uint32_t key, float (&v)[PU], const void *x,
                                                     int64_t n, bool one, int t, unsigned *part)
{
    unsigned c = 0;
    for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
        if (!one)
            load_samples<E>(v, x, n, base, t);
#pragma unroll
        for (int u = 0; u < PU; u++)
            c += tkp_order_key(v[u]) >= key;
    }
    return group_sum<NT>(c, part);
}

#endif

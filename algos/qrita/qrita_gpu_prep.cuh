/* qrita_gpu_prep.cuh — the pieces of qr_prep (qrita_gpu.cu), the sample statistics of a row: its
 * first values read PU per thread at a time, the CPU's fold of the 256 statistics lanes, the
 * count of sample keys above a key (the tight gather's search, README.md, "Buffer bound and workspace"), and the
 * thresholds they give (sample_thresholds). Called by the whole block (NT = QRITA_STAT_LANES
 * threads). */
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

/* The standard normal quantiles of the CPU's delta (qrita_rules.h), in constant memory. */
__constant__ double qr_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;

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

/* The tight gather's key (README, "Workspace"), for a top-k row whose threshold key is thr:
 * only where the sample predicts that the CPU's buffer would fill more than half of the GPU's;
 * then above the key that the sample predicts half of the GPU's buffer above: its m-th largest
 * key, found bit by bit (integer counts: order-free). UINT32_MAX: no tight gather. */
template <class E, int PU>
__device__ __forceinline__ uint32_t tight_gather_key(const qr_args &a, uint32_t thr,
                                                     float (&v)[PU], const void *x, int64_t n,
                                                     bool one, unsigned *part)
{
    const int t = threadIdx.x;
    const double per_sample = (double)a.vocab / (double)n;
    const double half = 0.5 * (double)a.cap_gpu;
    if (thr < UINT32_MAX &&
        samples_at_least<E>(thr + 1, v, x, n, one, t, part) * per_sample > half) {
        const unsigned m = half / per_sample > 1.0 ? (unsigned)(half / per_sample) : 1u;
        uint32_t sel = 0;
        for (int bit = 31; bit >= 0; bit--)
            if (samples_at_least<E>(sel | (1u << bit), v, x, n, one, t, part) >= m)
                sel |= 1u << bit;
        return sel > thr + 1 ? sel - 1 : thr;
    }
    return UINT32_MAX;
}

/* qr_prep's sample statistics of a row that truncates (filters k and p, its logits x): the mean
 * and standard deviation of its first sample_block values, the CPU's delta and threshold key
 * thr, and the tight gather's key gthr (left alone where there is none). Returns 1 when the
 * row has a threshold (delta finite). lane, part: the block's shared scratch. */
template <class E>
__device__ __forceinline__ int sample_thresholds(const qr_args &a, const void *x, int32_t k,
                                                 float p, double *lane, unsigned *part,
                                                 uint32_t &thr, uint32_t &gthr)
{
    const int64_t V = a.vocab;
    const int t = threadIdx.x;
    const int64_t n = a.sample_block < V ? a.sample_block : V;
    /* lane t adds i = t, t + 256, ... in order (the CPU's lanes); 32 loads in flight. With
     * n <= 32 x 256 (sample_block 8192, the default) one batch holds every sample, and the
     * variance pass reuses the registers instead of reading the samples again. */
    constexpr int PU = 32;
    const bool one = n <= (int64_t)PU * QRITA_STAT_LANES;
    float v[PU];
    double s = 0.0;
    unsigned c = 0;
    for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
        load_samples<E>(v, x, n, base, t);
#pragma unroll
        for (int u = 0; u < PU; u++)
            if (isfinite(v[u])) {
                s += (double)v[u];
                c++;
            }
    }
    const unsigned count = group_sum<NT>(c, part);
    const double sum = fold_lanes(s, lane);
    if (!count)
        return 0;
    const double mean = sum / (double)count;
    double s2 = 0.0;
    for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
        if (!one)
            load_samples<E>(v, x, n, base, t);
#pragma unroll
        for (int u = 0; u < PU; u++)
            if (isfinite(v[u])) {
                double d = (double)v[u] - mean;
                s2 += d * d;
            }
    }
    const double sd = sqrt(fold_lanes(s2, lane) / (double)count);
    double delta = tkp_topk_on(k, V) ? qrita_delta_topk(k, V, qr_quantile)
                                     : qrita_delta_topp(p, sd, qr_quantile);
    if (delta == -INFINITY)
        return 0;
    thr = qrita_threshold_key(mean, sd, delta, a.margin);
    if (a.tight && tkp_topk_on(k, V))
        gthr = tight_gather_key<E>(a, thr, v, x, n, one, part);
    return 1;
}

#endif

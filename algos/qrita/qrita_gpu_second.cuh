/* qrita_gpu_second.cuh — the second-level truncation of the rows searched as top-p alone
 * (truncation=auto): qr_gather2's work (qrita_gpu.cu), which the fused search does itself
 * (fused_second_level). The search of such a row starts at lo2 = the CPU's q.lo raised to the
 * mass floor (tkp_mass_floor); every key > lo2 (with its index) goes to the row's buffer,
 * replacing the sigma outliers (which qr_scan only counted), unless qr_mass's window already
 * holds them. */
#ifndef QRITA_GPU_SECOND_CUH
#define QRITA_GPU_SECOND_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_warp.cuh"
#include "../common/mass_floor.h"
#include "../common/prob.h"
#include "qrita_gpu_stream.cuh"
#include "qrita_gpu_types.cuh"

/* A row truncated (and searched) as top-p alone: top-p on, and top-k off or at least its valid
 * count (the second form needs the row's valid count; the first is the row's filters alone).
 * k: the truncation's (the row's k_trunc; a whole row of min-p, qrita_minp_whole_row, is
 * searched otherwise, over the row). */
__device__ __forceinline__ bool qr_topp_alone(const qr_row *row, int32_t k, float p, int64_t V)
{
    const int64_t valid = row->valid;
    return valid > 0 && !(tkp_topk_on(k, V) && k < valid) && tkp_topp_on(p);
}

/* tkp_mass_floor by one warp (every lane gets the result): the first bin whose running mass
 * reaches the target by a warp scan (two bins per lane), then the smallest key of bin <= b by a
 * 33-way search (7 rounds instead of 32 bisection steps). The bin is non-increasing in the key,
 * so any exact search for that key returns the CPU's. `bin` gets b (TKP_MASS_BINS: none). */
__device__ uint32_t warp_mass_floor(const u64 *hist, u64 target, float max, uint32_t min_key,
                                    uint32_t max_key, int &bin)
{
    static_assert(TKP_MASS_BINS == 64, "two bins per lane");
    const unsigned lane = threadIdx.x & 31;
    const u64 h0 = hist[2 * lane], h1 = hist[2 * lane + 1];
    const u64 acc = tkp_warp_incl_scan(h0 + h1);
    const u64 before = acc - h0 - h1; /* the mass of bins < 2 lane */
    const unsigned reach0 = __ballot_sync(FULL, before + h0 >= target);
    const unsigned reach1 = __ballot_sync(FULL, acc >= target);
    bin = TKP_MASS_BINS;
    if (!reach1)
        return min_key - 1;
    const int l0 = __ffs(reach0) - 1, l1 = __ffs(reach1) - 1;
    const int b = reach0 && l0 <= l1 ? 2 * l0 : 2 * l1 + 1;
    bin = b;
    /* the first key in [lo, hi] with bin <= b; hi always qualifies (bin(max_key) = 0) */
    uint32_t lo = min_key, hi = max_key;
    while (lo < hi) {
        const uint64_t width = (uint64_t)hi - lo;
        const uint32_t probe = lo + (uint32_t)(width * (lane + 1) / 33); /* < hi */
        const unsigned ok = __ballot_sync(FULL, tkp_mass_bin(tkp_key_value(probe), max) <= b);
        /* the lowest qualifying probe bounds hi; the probe below it (or lo) bounds lo */
        const int first = ok ? __ffs(ok) - 1 : 32;
        const uint32_t below = first == 0 ? lo : __shfl_sync(FULL, probe, (first + 31) & 31) + 1;
        const uint32_t above = first < 32 ? __shfl_sync(FULL, probe, first & 31) : hi;
        lo = first == 0 ? lo : below;
        hi = above;
    }
    return lo - 1;
}

/* The second level of a top-p-alone row, by one warp (every lane gets it): lo, the CPU's q.lo
 * (qrita_row: hit ? trunc_key : min_key - 1) raised to the mass floor, and whether qr_mass's
 * window holds every key > lo: the floor's bin is inside it (keys > floor have bin <= its bin)
 * and no CTA overflowed it. */
struct Second {
    uint32_t lo;
    bool window;
};

__device__ Second second_level(const qr_args &a, int64_t r, const qr_row *row, float p)
{
    const unsigned flags = row->flags;
    const int64_t gathered = row->gathered;
    const u64 total = row->total, target = tkp_topp_target(p, total);
    const uint32_t max_key = row->max_key, min_key = ~row->inv_min;
    const unsigned win_n = row->win_n;
    const int hit = (flags & 2) && (flags & 1) && gathered <= a.cap_cpu && gathered >= 1 &&
                    row->above >= target;
    const uint32_t lo = hit ? row->trunc_key : min_key - 1;
    int bin;
    const uint32_t mf = warp_mass_floor(a.hist + r * TKP_MASS_BINS, target,
                                        tkp_key_value(max_key), min_key, max_key, bin);
    Second s;
    s.lo = mf > lo ? mf : lo;
    s.window = bin < WIN_BINS && win_n <= WIN_ROW;
    return s;
}

/* A CTA's share of the second-level gather (threads [0, NT) of the CTA): every key > lo of its
 * chunk into the row's buffer. */
template <class E>
__device__ __forceinline__ void gather_above(const qr_args &a, int64_t r, qr_row *row,
                                             uint32_t lo)
{
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
        append_above(key, e, lo, &row->gathered2, keys, idx, a.cap_gpu, true);
    };
    stream_batches<E>(tkp_row_ptr<E>(a.io.logits, a.stride, r), a.vocab, a.vpc, f);
}

/* Fused (a.fuse): the cpr CTAs of row r do qr_gather2's work for it. The window holds the
 * candidates: CTA 0 searches, the others leave. Otherwise each CTA gathers its chunk and the
 * last one to finish (a ticket after a fence: it sees every append) searches. Returns whether
 * this CTA searches row r. Called by the whole block. */
template <class E>
__device__ bool fused_second_level(const qr_args &a, int64_t r)
{
    qr_row *row = a.rows + r;
    const float p = a.io.p[r];
    __shared__ Second sec;
    __shared__ bool last;
    if (!qr_topp_alone(row, row->k_trunc, p, a.vocab))
        return blockIdx.x == 0;
    if (threadIdx.x < 32) {
        const Second s = second_level(a, r, row, p);
        if (threadIdx.x == 0)
            sec = s;
    }
    __syncthreads();
    const Second s = sec;
    if (s.window) {
        if (blockIdx.x != 0)
            return false;
    } else {
        if (threadIdx.x < NT)
            gather_above<E>(a, r, row, s.lo);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(&row->ticket, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (!last)
            return false;
        __threadfence();
    }
    if (threadIdx.x == 0) {
        row->lo2 = s.lo;
        row->pool_win = s.window;
    }
    __syncthreads();
    return true;
}

#endif

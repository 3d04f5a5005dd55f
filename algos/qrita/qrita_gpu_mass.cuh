/* qrita_gpu_mass.cuh — the pieces of qr_mass (qrita_gpu.cu), the mass pass of the rows searched
 * as top-p alone: the fold of qr_scan's per-CTA partials, qr_scan's work done inside qr_mass
 * for the fused batches, and per CTA the fixed-point mass of its chunk and of its outliers
 * (integer sums: order independent), its part of the row's 64-bin mass histogram and of the
 * row's window (its keys of mass bin < WIN_BINS); qr_mass folds them into the row. */
#ifndef QRITA_GPU_MASS_CUH
#define QRITA_GPU_MASS_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_launch.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/mass_floor.h"
#include "../common/prob.h"
#include "qrita_gpu_scan.cuh"
#include "qrita_gpu_types.cuh"

/* The row fields qr_scan leaves in per-CTA partials for a top-p-alone row: every CTA of qr_mass
 * folds them (warp 0), and CTA 0 stores them in the row for the kernels after. */
__device__ __forceinline__ void fold_parts(const qr_args &a, int64_t r, qr_row *row,
                                           qr_part &folded)
{
    if (threadIdx.x < 32) {
        unsigned kmax = 0, inv_min = 0, valid = 0;
        /* two partials per lane per step, both loads in flight */
#pragma unroll 1
        for (int64_t c0 = threadIdx.x; c0 < a.cpr; c0 += 64) {
            qr_part pt[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const qr_part none = { 0u, 0u, 0u, 0u };
                pt[h] = c0 + 32 * h < a.cpr ? a.part[r * a.cpr + c0 + 32 * h] : none;
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                kmax = max(kmax, pt[h].max_key);
                inv_min = max(inv_min, pt[h].inv_min);
                valid += pt[h].valid;
            }
        }
        kmax = __reduce_max_sync(FULL, kmax);
        inv_min = __reduce_max_sync(FULL, inv_min);
        valid = __reduce_add_sync(FULL, valid);
        if (threadIdx.x == 0) {
            const qr_part f = { kmax, inv_min, valid, 0u }; /* inv_min 0: no valid key */
            folded = f;
            if (blockIdx.x == 0) {
                row->max_key = f.max_key;
                row->inv_min = f.inv_min;
                row->valid = f.valid;
            }
        }
    }
    __syncthreads();
}

/* qr_scan's work inside qr_mass (a.scan_in_mass: small top-p batches, whose (cpr, B) grid the
 * plan found resident at once): every CTA scans its chunk (no row of such a batch gathers in
 * qr_scan), waits for qr_prep (which zeroes the row), folds its part into the row, and meets
 * the other CTAs of its row (a ticket after a fence; spinning is safe since they all run). The
 * row's fold lands in `whole`; the chunk is then read a second time from L1. */
template <class E>
__device__ void scan_and_meet(const qr_args &a, int64_t r, qr_row *row, qr_part &whole)
{
    const qr_part pt = scan_chunk<E>(a, r, UINT32_MAX, UINT32_MAX);
    tkp_wait_prerequisite();
    if (threadIdx.x == 0) {
        publish_part(row, pt);
        __threadfence();
        atomicAdd(&row->met, 1u);
        while (*(volatile unsigned *)&row->met < (unsigned)a.cpr)
            __nanosleep(32);
        __threadfence();
        const qr_part f = { __ldcg(&row->max_key), __ldcg(&row->inv_min), __ldcg(&row->valid),
                            0u };
        whole = f;
    }
    __syncthreads();
}

/* One batch of stream_batches (v, e, ok) into the CTA's sums: tot of every weight (max m), ab of
 * those of the keys above thr and n_above their number; the tokens near max into the shared histogram hs, and with `window` the
 * keys of bin < WIN_BINS into the CTA's window (win_key, win_idx; *win_cnt counts them all). */
__device__ __forceinline__ void mass_of_batch(const float4 (&v)[4], const int (&e)[4],
                                              const bool (&ok)[4], float m, uint32_t thr,
                                              bool window, u64 &tot, u64 &ab, unsigned &n_above, u64 *hs,
                                              uint32_t *win_key, uint32_t *win_idx,
                                              unsigned *win_cnt)
{
    const int e0 = e[0]; /* v[u].x is token e0 + 4 NT u (head or tail step: only u = 0) */
    /* padding is NaN: weight 0, key 0. A float4 at a time, its four weights interleaved:
     * a CTA runs this once per row chunk, so it is bound by fetching its instructions, and
     * a rolled loop fetches a quarter of them (README, "Where the time goes") */
    float4 q[4] = { v[0], v[1], v[2], v[3] };
    /* the float4 slots some lane of the warp holds (ok[u] falls with u): a small chunk
     * (many CTAs per row at small batch) skips the padding */
    const unsigned mine = (unsigned)ok[0] | (unsigned)ok[1] << 1 | (unsigned)ok[2] << 2 |
                          (unsigned)ok[3] << 3;
    const unsigned live = __reduce_or_sync(FULL, mine);
    const int slots = 32 - __clz(live);
#pragma unroll 1
    for (int u = 0; u < slots; u++) {
        const float x[4] = { q[0].x, q[0].y, q[0].z, q[0].w };
        q[0] = q[1]; /* the next float4 to the front: static indices stay in registers */
        q[1] = q[2];
        q[2] = q[3];
        u64 w[4];
#pragma unroll
        for (int c = 0; c < 4; c++)
            w[c] = tkp_weight(x[c], m);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const bool up = tkp_order_key(x[c]) > thr;
            tot += w[c];
            ab += up ? w[c] : 0u;
            n_above += up;
        }
#pragma unroll
        for (int c = 0; c < 4; c++) /* only the tokens near max: few shared atomics */
            if (w[c]) {
                const int bin = tkp_mass_bin(x[c], m);
                if (bin < TKP_MASS_BINS)
                    tkp_shared_add_u64(&hs[bin], w[c]);
                if (window && bin < WIN_BINS) {
                    const unsigned pos = atomicAdd(win_cnt, 1u);
                    if (pos < WIN_CTA) {
                        win_key[pos] = tkp_order_key(x[c]);
                        win_idx[pos] = (uint32_t)(e0 + 4 * NT * u + c);
                    }
                }
            }
    }
}

/* Warp 1: the CTA's window (n = its count of keys) appended to row r's, unless the CTA's
 * overflowed (then the row's count goes past WIN_ROW: the window is not used). */
__device__ __forceinline__ void publish_window(const qr_args &a, int64_t r, qr_row *row,
                                               const uint32_t *win_key, const uint32_t *win_idx,
                                               unsigned n)
{
    const unsigned lane = threadIdx.x & 31;
    if (n) {
        unsigned base = 0;
        if (lane == 0) /* an overflowing CTA pushes the row's count past WIN_ROW */
            base = atomicAdd(&row->win_n, n <= WIN_CTA ? n : WIN_ROW + 1u);
        base = __shfl_sync(FULL, base, 0);
        for (unsigned i = lane; n <= WIN_CTA && i < n && base + i < WIN_ROW; i += 32) {
            a.wkeys[r * WIN_ROW + base + i] = win_key[i];
            a.widx[r * WIN_ROW + base + i] = win_idx[i];
        }
    }
}

/* The CTA's sums of qr_mass added into its row (whole block): the total and above-window
 * masses, and the outliers of a top-p-alone row. sh, shn: NT / 32 words of shared scratch
 * each. */
__device__ __forceinline__ void add_row_mass(qr_row *row, u64 tot, u64 ab, unsigned n_above,
                                             bool topp_alone, u64 (*sh)[NT / 32], unsigned *shn)
{
    /* the two 64-bit sums interleaved, as tkp_warp_sum does each: two calls give the same
     * sums but another order of the shuffles (measured: other SASS) */
    for (int o = 16; o > 0; o >>= 1) {
        tot += __shfl_xor_sync(FULL, tot, o);
        ab += __shfl_xor_sync(FULL, ab, o);
    }
    n_above = __reduce_add_sync(FULL, n_above);
    if ((threadIdx.x & 31) == 0) {
        sh[0][threadIdx.x >> 5] = tot;
        sh[1][threadIdx.x >> 5] = ab;
        shn[threadIdx.x >> 5] = n_above;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < NT / 32; i++) {
            tot += sh[0][i];
            ab += sh[1][i];
            n_above += shn[i];
        }
        if (tot)
            atomicAdd(&row->total, tot);
        if (ab)
            atomicAdd(&row->above, ab);
        if (n_above && topp_alone)
            atomicAdd(&row->gathered, n_above);
    }
}

#endif

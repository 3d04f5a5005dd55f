/* qrita_gpu_scan.cuh — the scan of qr_scan (qrita_gpu.cu), which qr_mass also runs for the
 * fused batches (qrita_gpu_mass.cuh, scan_and_meet): one CTA's pass over its chunk of a row (its
 * max and min key, valid count and outlier count; every key above the gather threshold appended
 * to the row's buffer; the chunk's mask bytes zeroed) and the fold of its result into the row. */
#ifndef QRITA_GPU_SCAN_CUH
#define QRITA_GPU_SCAN_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "qrita_gpu_stream.cuh"
#include "qrita_gpu_types.cuh"

/* One CTA's scan of its chunk of row r (element type E): the chunk's mask bytes zeroed, every
 * key > thr appended to the row's buffer (thr = UINT32_MAX: none), and the chunk's max key,
 * ~(min key), valid count and number of keys > count_thr (`pad`; count_thr <= thr), which
 * thread 0 returns (inv_min 0: no valid key). */
template <class E, bool TIGHT = false>
__device__ qr_part scan_chunk(const qr_args &a, int64_t r, uint32_t thr, uint32_t count_thr)
{
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    qr_row *row = a.rows + r;
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    const int64_t cap = a.cap_gpu;
    /* min over valid keys as min(key - 1): an invalid key (0) wraps to UINT32_MAX */
    unsigned kmax = 0, kmin1 = UINT32_MAX, valid = 0, above = 0;
    /* the count is not the buffer's (only in a tight plan, whose buffer has its own counter) */
    const bool apart = TIGHT && count_thr != thr;
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                valid += key[u][c] != 0;
                kmax = max(kmax, key[u][c]);
                kmin1 = min(kmin1, key[u][c] - 1u);
                if (apart)
                    above += key[u][c] > count_thr;
            }
        if (thr != UINT32_MAX) {
            const unsigned hits = append_above(key, e, thr, TIGHT ? &row->pooled : &row->gathered,
                                               keys, idx, cap, true);
            if (TIGHT && !apart)
                above += hits;
        }
    };
    /* qr_mask (or the fused search) writes only the kept tokens of a row searched on its buffer */
    zero_chunk<E>(a.io.kept + r * a.vocab, x, a.vocab, a.vpc);
    stream_batches<E>(x, a.vocab, a.vpc, f);
    kmax = __reduce_max_sync(FULL, kmax);
    kmin1 = __reduce_min_sync(FULL, kmin1);
    valid = __reduce_add_sync(FULL, valid);
    if (TIGHT)
        above = __reduce_add_sync(FULL, above);
    __shared__ unsigned sh[4][NT / 32];
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        sh[0][w] = kmax;
        sh[1][w] = kmin1;
        sh[2][w] = valid;
        if (TIGHT)
            sh[3][w] = above;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int i = 1; i < NT / 32; i++) {
            kmax = max(kmax, sh[0][i]);
            kmin1 = min(kmin1, sh[1][i]);
            valid += sh[2][i];
            if (TIGHT)
                above += sh[3][i];
        }
    const qr_part pt = { kmax, valid ? ~(kmin1 + 1u) : 0u, valid, above };
    return pt;
}

/* Fold a CTA's part into its row (after qr_prep has zeroed the row; thread 0). */
__device__ __forceinline__ void publish_part(qr_row *row, const qr_part &pt)
{
    if (pt.valid) {
        atomicMax(&row->max_key, pt.max_key);
        atomicMax(&row->inv_min, pt.inv_min);
        atomicAdd(&row->valid, pt.valid);
    }
    if (pt.above)
        atomicAdd(&row->gathered, pt.above);
}

#endif

/* qrita_gpu_mask.cuh — the final mask writing (qr_mask in qrita_gpu.cu, and the fused search):
 * the kept entries of a row searched on its buffer (scan_chunk zeroed the rest), or every byte of
 * the row from its boundary. */
#ifndef QRITA_GPU_MASK_CUH
#define QRITA_GPU_MASK_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/prob.h"
#include "qrita_gpu_stream.cuh"
#include "qrita_gpu_types.cuh"

/* The mask of a row searched on a buffer (scan_chunk zeroed it): its kept entries, taken by the
 * threads first, first + step, ... (`fresh` as for pool_word). */
__device__ __forceinline__ void mask_from_pool(const qr_args &a, int64_t r, const qr_row *row,
                                               int64_t first, int64_t step, bool fresh)
{
    const int64_t n = min((int64_t)row->pool_n, a.cap_gpu);
    const bool win = row->pool_ok == 2;
    const uint32_t *pk = pool_keys(a, r, win), *pi = pool_idx(a, r, win);
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    uint8_t *kept = a.io.kept + r * a.vocab;
    for (int64_t i = first; i < n; i += step) {
        const uint32_t key = pool_word(pk + i, fresh);
        const int64_t e = pool_word(pi + i, fresh);
        if (key > bkey || (key == bkey && e <= cut))
            kept[e] = 1;
    }
}

/* The mask byte of token e of value v, given the row's boundary: keys above bkey, and the copies
 * of bkey up to index cut. */
__device__ __forceinline__ uint8_t kept_byte(float v, int64_t e, uint32_t bkey, int64_t cut)
{
    const uint32_t key = tkp_order_key(v);
    return (uint8_t)(key > bkey || (key == bkey && e <= cut));
}

/* Fused: qr_mask's work for row r, by the CTA that searched it: the kept entries of its buffer,
 * or (a row searched in full, or without a filter) every byte of the row (element type E). */
template <class E>
__device__ void fused_mask(const qr_args &a, int64_t r)
{
    const qr_row *row = a.rows + r;
    if (row->pool_ok) {
        mask_from_pool(a, r, row, threadIdx.x, blockDim.x, row->pool_ok == 1); /* gathered here */
        return;
    }
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    uint8_t *kept = a.io.kept + r * a.vocab;
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    int64_t h, nvec;
    row_geom<E>(x, a.vocab, h, nvec);
    const int64_t tail = h + 4 * nvec, extra = h + (a.vocab - tail);
    for (int64_t q = threadIdx.x; q < extra; q += blockDim.x) { /* the scalar head and tail */
        const int64_t i = q < h ? q : tail + (q - h);
        kept[i] = kept_byte(qr_elem<E>(x, i), i, bkey, cut);
    }
    /* the vector body, 4 loads in flight per thread */
    const void *body = static_cast<const typename E::storage *>(x) + h;
    for (int64_t base = threadIdx.x; base < nvec; base += 4 * (int64_t)blockDim.x) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t j = base + u * (int64_t)blockDim.x;
            v[u] = j < nvec ? qr_load_vec<E>(body, j) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t j = base + u * (int64_t)blockDim.x;
            if (j < nvec) {
                const int64_t e = h + 4 * j;
                kept[e] = kept_byte(v[u].x, e, bkey, cut);
                kept[e + 1] = kept_byte(v[u].y, e + 1, bkey, cut);
                kept[e + 2] = kept_byte(v[u].z, e + 2, bkey, cut);
                kept[e + 3] = kept_byte(v[u].w, e + 3, bkey, cut);
            }
        }
    }
}

#endif

/* qrita_gpu_stream.cuh — the streaming layer of qrita's CUDA kernels: a CTA's chunk of a row
 * (float32, bf16 or fp16: gpu_logits.cuh) in batches of 4 four-element vectors per thread, the
 * append of the keys above a threshold to the row's buffer, and the zeroing of the CTA's share
 * of the mask. */
#ifndef QRITA_GPU_STREAM_CUH
#define QRITA_GPU_STREAM_CUH

#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_logits.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/prob.h"
#include "qrita_gpu_types.cuh"

/* ---- streaming over one CTA's chunk of a row ----
 * The row (of element type E, gpu_logits.cuh) is split at the alignment of a four-element
 * vector (16 bytes for float32, 8 for 16-bit types): h scalar head elements, nvec vectors, a
 * scalar tail. CTA c of the row takes vectors [c vpc, (c + 1) vpc); CTA 0 also takes head and
 * tail. stream_batches calls f(a, e, ok, width) with a batch of 4 vectors per thread (converted
 * to float4: exact, docs/SEMANTICS.md "16-bit logits"): a[u] holds the elements e[u] ..
 * e[u] + width - 1 when ok[u]; width is 4 in the body and 1 in the head/tail step. Every other
 * slot holds NaN (order key 0, weight 0). Every thread of the CTA calls f the same number of
 * times, so f may use warp votes. stream_chunk adapts it to f(value, index, ok) per element. */
template <class E>
__device__ __forceinline__ void row_geom(const void *x, int64_t V, int64_t &h, int64_t &nvec)
{
    /* today's float32 arithmetic, in bytes of E's vector (tkp_vec4_head's value) */
    constexpr unsigned VB = 4 * sizeof(typename E::storage);
    h = (int64_t)(((VB - ((uintptr_t)x & (VB - 1))) & (VB - 1)) / sizeof(typename E::storage));
    if (h > V)
        h = V;
    nvec = (V - h) >> 2;
}

/* Batches of 4 vectors loaded before the first is handed to f: a 16-bit vector is half the
 * bytes of a float32 one, so its loop keeps two batches (the same bytes) in flight. */
template <class E> __host__ __device__ constexpr int stream_depth(void)
{
    return tkp_elem_bytes<E>() == 4 ? 1 : 2;
}

/* Indices inside a row fit in 32 bits (V <= TKP_MAX_VOCAB = 2^23). stream_batches_of reads
 * chunk `chunk` (chunk 0 with vpc >= V: the whole row, as qr_prep's min-p count does). */
template <class E, typename F>
__device__ __forceinline__ void stream_batches_of(const void *__restrict__ x, int64_t V,
                                                  int64_t vpc, int chunk, F &f)
{
    constexpr int D = stream_depth<E>();
    int64_t h64, nvec64;
    row_geom<E>(x, V, h64, nvec64);
    const int h = (int)h64, nvec = (int)nvec64;
    const int v0 = chunk * (int)vpc, v1 = min(nvec, v0 + (int)vpc);
    const void *body = static_cast<const typename E::storage *>(x) + h;
    const int t = threadIdx.x;
    const float4 pad = make_float4(NAN, NAN, NAN, NAN);
    for (int base = v0; base < v1; base += D * 4 * NT) {
        float4 a[D][4];
        int e[D][4];
        bool ok[D][4];
#pragma unroll
        for (int d = 0; d < D; d++)
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int j = base + (4 * d + u) * NT + t;
                ok[d][u] = j < v1;
                e[d][u] = h + 4 * j;
                a[d][u] = ok[d][u] ? qr_load_vec<E>(body, j) : pad;
            }
#pragma unroll
        for (int d = 0; d < D; d++)
            if (d == 0 || base + 4 * d * NT < v1) /* CTA-uniform: every thread calls f alike */
                f(a[d], e[d], ok[d], 4);
    }
    if (chunk == 0) {
        const int tail = h + 4 * nvec, extra = h + ((int)V - tail); /* at most 6 */
        for (int base = 0; base < extra; base += NT) {
            const int q = base + t;
            float4 a[4] = { pad, pad, pad, pad };
            int e[4] = { q < h ? q : tail + (q - h), 0, 0, 0 };
            bool ok[4] = { q < extra, false, false, false };
            if (ok[0])
                a[0].x = qr_elem<E>(x, e[0]);
            f(a, e, ok, 1);
        }
    }
}

template <class E, typename F>
__device__ __forceinline__ void stream_batches(const void *__restrict__ x, int64_t V, int64_t vpc,
                                               F &f)
{
    stream_batches_of<E>(x, V, vpc, (int)blockIdx.x, f);
}

__device__ __forceinline__ float batch_elem(const float4 (&a)[4], int u, int c)
{
    return c == 0 ? a[u].x : c == 1 ? a[u].y : c == 2 ? a[u].z : a[u].w;
}

template <class E, typename F>
__device__ __forceinline__ void stream_chunk(const void *__restrict__ x, int64_t V, int64_t vpc,
                                             F &f)
{
    auto each = [&](const float4 (&a)[4], const int (&e)[4], const bool (&ok)[4], int width) {
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                f(batch_elem(a, u, c), e[u] + c, ok[u] && c < width);
    };
    stream_batches<E>(x, V, vpc, each);
}

/* Append every element of the batch whose key is > thr to the row's buffer (keys, idx; at most
 * cap entries) at positions taken from *counter: one atomic per warp, the positions by a warp
 * scan of the per-lane counts; predicated stores, no branch per element. keys[u][c] are the
 * batch's order keys (0 for padding). Returns the lane's count. Called by whole warps. */
__device__ __forceinline__ unsigned append_above(const uint32_t (&key)[4][4], const int (&e)[4],
                                                 uint32_t thr, unsigned *counter, uint32_t *keys,
                                                 uint32_t *idx, int64_t cap, bool write)
{
    unsigned hits = 0;
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            hits += key[u][c] > thr;
    if (!write || !__any_sync(FULL, hits))
        return hits;
    /* tkp_warp_reserve's scan and atomic, with the warp's base kept apart: the stores need the
     * room left in the buffer past it */
    const unsigned lane = threadIdx.x & 31;
    const unsigned incl = tkp_warp_incl_scan(hits);
    unsigned base = 0;
    if (lane == 31)
        base = atomicAdd(counter, incl);
    base = __shfl_sync(FULL, base, 31);
    if (hits) {
        const unsigned capu = (unsigned)cap; /* cap <= V <= 2^23 */
        const unsigned room = base < capu ? capu - base : 0u;
        unsigned pos = incl - hits; /* relative to base */
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const bool h = key[u][c] > thr;
                if (h && pos < room) {
                    keys[base + pos] = key[u][c];
                    idx[base + pos] = (uint32_t)(e[u] + c);
                }
                pos += h;
            }
    }
    return hits;
}

/* The order keys of a batch (0 for padding: NaN). */
__device__ __forceinline__ void batch_keys(const float4 (&a)[4], uint32_t (&key)[4][4])
{
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            key[u][c] = tkp_order_key(batch_elem(a, u, c));
}

/* Zero bytes [lo, hi) of a mask row with 16-byte stores where aligned. */
__device__ __forceinline__ void zero_bytes(uint8_t *m, int lo, int hi)
{
    if (lo >= hi)
        return;
    const int t = threadIdx.x;
    const int body = min(hi, lo + (int)((16u - ((uintptr_t)(m + lo) & 15u)) & 15u));
    for (int i = lo + t; i < body; i += NT)
        m[i] = 0;
    uint4 *v = reinterpret_cast<uint4 *>(m + body);
    const int nv = (hi - body) >> 4;
    for (int j = t; j < nv; j += NT)
        v[j] = make_uint4(0u, 0u, 0u, 0u);
    for (int i = body + 16 * nv + t; i < hi; i += NT)
        m[i] = 0;
}

/* Zero the CTA's share of a mask row: the bytes of its vectors of the row x (and, for CTA 0,
 * the scalar head and tail). */
template <class E>
__device__ __forceinline__ void zero_chunk(uint8_t *kept, const void *x, int64_t V, int64_t vpc)
{
    int64_t h64, nvec64;
    row_geom<E>(x, V, h64, nvec64);
    const int h = (int)h64, nvec = (int)nvec64;
    const int v0 = min(nvec, (int)blockIdx.x * (int)vpc), v1 = min(nvec, v0 + (int)vpc);
    zero_bytes(kept, h + 4 * v0, h + 4 * v1);
    if (blockIdx.x == 0) {
        zero_bytes(kept, 0, h);
        zero_bytes(kept, h + 4 * nvec, (int)V);
    }
}

#endif

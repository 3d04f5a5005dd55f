/* cake_gpu_pass1.cuh — cake's streaming first pass: the slice read in four-element vector
 * steps (ck_stream, and ck_pass1 with its sampled, tightening bound), the top-digit histogram,
 * the candidate list, and the kept mask zeroed on the way.
 *
 * Every read of the row is typed by the element type E of algos/common/gpu_logits.cuh: a
 * vector is one float4 (float32) or one uint2 (bf16, fp16), aligned to its own size, and every
 * value is converted exactly to float32 in registers, so the keys and decisions on a 16-bit row
 * are those on its float32 upcast (docs/SEMANTICS.md, "16-bit logits"). Indices and counts are
 * in elements. */
#ifndef TKP_CAKE_GPU_PASS1_CUH
#define TKP_CAKE_GPU_PASS1_CUH

#include <float.h>

#include "../common/gpu_logits.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/prob.h"
#include "cake_gpu_bucket.cuh"
#include "cake_gpu_types.cuh"

/* Element i of a row of elements of type E (an untyped pointer, as the row itself). */
template <class E> __device__ __forceinline__ const void *ck_elem(const void *row, int64_t i)
{
    return static_cast<const typename E::storage *>(row) + i;
}

/* f(key, index, ok) over row[lo, hi): a scalar head up to the first vector-aligned element
 * (tkp_vec4_head: 16-byte alignment for float32, 8-byte for 16-bit types), the vector body
 * (CK_UNROLL loads in flight per thread), a scalar tail. Every loop is block-uniform, so f is
 * called by all 32 lanes of every warp together (warp collectives inside f are allowed); a
 * slot past the range calls f with ok = false and key 0. Order of visits is unspecified. */
template <class E, typename F>
__device__ __forceinline__ void ck_stream(const void *__restrict__ row, uint32_t lo,
                                          uint32_t hi, F f)
{
    if (lo >= hi)
        return;
    const uint32_t t = threadIdx.x;
    const uint32_t mis = (uint32_t)tkp_vec4_head<E>(ck_elem<E>(row, lo));
    const uint32_t body = min(hi, lo + mis);
    if (lo < body) { /* fewer than 4 tokens: one block-wide step */
        const uint32_t i = lo + t;
        const bool ok = i < body;
        f(ok ? tkp_order_key(tkp_load1<E>(row, i)) : 0u, i, ok);
    }
    const uint32_t nvec = (hi - body) >> 2;
    const void *__restrict__ v = ck_elem<E>(row, body); /* vector j: elements 4j .. 4j+3 */
    for (uint32_t base = 0; base < nvec; base += CK_UNROLL * CK_THREADS) {
        float4 x[CK_UNROLL];
        const void *mine = ck_elem<E>(v, 4 * (int64_t)(base + t)); /* vector u = 0 */
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            const uint32_t j = base + t + (uint32_t)u * CK_THREADS;
            x[u] = j < nvec ? tkp_load4<E>(mine, 4 * u * CK_THREADS)
                            : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            const uint32_t j = base + t + (uint32_t)u * CK_THREADS;
            const bool ok = j < nvec;
            const uint32_t i = body + 4 * j;
            f(ok ? tkp_order_key(x[u].x) : 0u, i, ok);
            f(ok ? tkp_order_key(x[u].y) : 0u, i + 1, ok);
            f(ok ? tkp_order_key(x[u].z) : 0u, i + 2, ok);
            f(ok ? tkp_order_key(x[u].w) : 0u, i + 3, ok);
        }
    }
    const uint32_t tail = body + 4 * nvec;
    if (tail < hi) { /* fewer than 4 tokens */
        const uint32_t i = tail + t;
        const bool ok = i < hi;
        f(ok ? tkp_order_key(tkp_load1<E>(row, i)) : 0u, i, ok);
    }
}

/* f(key, index, ok) over the CTA's keys that a pass needs: the shared-memory candidate list
 * when it holds them all (use_cand), else the slice row[lo, hi) streamed again. */
template <class E, typename F>
__device__ __forceinline__ void ck_each_candidate(const ck_smem *sm, bool use_cand,
                                                  const void *__restrict__ row, uint32_t lo,
                                                  uint32_t hi, F f)
{
    if (use_cand) {
        const uint32_t n = sm->cand_n;
        for (uint32_t i = threadIdx.x; i < n; i += CK_THREADS)
            f(sm->cand_key[i], sm->cand_idx[i], true);
    } else {
        ck_stream<E>(row, lo, hi, f);
    }
}

/* Zero mask[lo, hi) with 16-byte stores where aligned. */
__device__ __forceinline__ void ck_zero(uint8_t *mask, uint32_t lo, uint32_t hi)
{
    if (lo >= hi)
        return;
    const uint32_t t = threadIdx.x;
    const uint32_t mis = (uint32_t)((16u - ((uintptr_t)(mask + lo) & 15u)) & 15u);
    const uint32_t body = min(hi, lo + mis);
    for (uint32_t i = lo + t; i < body; i += CK_THREADS)
        mask[i] = 0;
    const uint32_t nvec = (hi - body) >> 4;
    uint4 *v = reinterpret_cast<uint4 *>(mask + body);
    for (uint32_t j = t; j < nvec; j += CK_THREADS)
        v[j] = make_uint4(0, 0, 0, 0);
    for (uint32_t i = body + 16 * nvec + t; i < hi; i += CK_THREADS)
        mask[i] = 0;
}


/* One candidate (x valid, key >= thr) at row index i: counted in hist, stored at slot pos. */
__device__ __forceinline__ void ck_put_cand(ck_smem *sm, uint32_t *hist, float x, uint32_t i,
                                            uint32_t &pos)
{
    const uint32_t key = tkp_order_key(x);
    atomicAdd(&hist[key >> 21], 1u);
    if (pos < CK_CAP) {
        sm->cand_key[pos] = key;
        sm->cand_idx[pos] = i;
    }
    pos++;
}

/* Load one block-wide step of the vector body v (elements of type E): x[u] = vector
 * base + t + u * CK_THREADS for u < CK_UNROLL, as float32; a slot at or past nvec reads NaN
 * (never a candidate, never sampled) and its 4 invalid counts are taken back from ninv in
 * advance. */
template <class E>
__device__ __forceinline__ void ck_load(float4 (&x)[CK_UNROLL], const void *__restrict__ v,
                                        uint32_t nvec, uint32_t base, uint32_t &ninv)
{
    const float nan = __int_as_float(0x7FC00000);
    const void *mine = ck_elem<E>(v, 4 * (int64_t)(base + threadIdx.x)); /* vector u = 0 */
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        const uint32_t j = base + threadIdx.x + (uint32_t)u * CK_THREADS;
        if (j < nvec) {
            x[u] = tkp_load4<E>(mine, 4 * u * CK_THREADS);
        } else {
            x[u] = make_float4(nan, nan, nan, nan);
            ninv -= 4;
        }
    }
}

/* The sample: the valid values of x[u], u < us, counted in S by top digit. */
__device__ __forceinline__ void ck_sample(const float4 (&x)[CK_UNROLL], uint32_t us, uint32_t *S)
{
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        if ((uint32_t)u < us) {
            const float e[4] = {x[u].x, x[u].y, x[u].z, x[u].w};
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (e[c] >= -FLT_MAX)
                    atomicAdd(&S[tkp_order_key(e[c]) >> 21], 1u);
        }
    }
}

/* Pass 1 on one loaded step x (the values at body + 4 * (base + t + u * CK_THREADS)). Per
 * value: a float compare, a select-add and a float add; one vote per step; the candidates
 * (a few per cent) are re-tested and appended after one tkp_warp_reserve per warp. */
__device__ __forceinline__ void ck_pass1_proc(const float4 (&x)[CK_UNROLL], uint32_t base,
                                              uint32_t body, float fthr, uint32_t &ninv,
                                              uint32_t *hist, ck_smem *sm)
{
    const uint32_t t = threadIdx.x;
    uint32_t c = 0;
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        c += (uint32_t)(x[u].x >= fthr) + (uint32_t)(x[u].y >= fthr) +
             (uint32_t)(x[u].z >= fthr) + (uint32_t)(x[u].w >= fthr);
        sum += (x[u].x + x[u].y) + (x[u].z + x[u].w);
    }
    /* A sum with a NaN or -inf term is NaN or -inf whatever the order (NaN propagates,
     * -inf + y is -inf or NaN), so a sum >= -FLT_MAX proves every value valid; otherwise
     * (an invalid value, a NaN fill past the end, or finite values overflowing to -inf)
     * count exactly (the fills were taken back at load time). */
    if (!(sum >= -FLT_MAX)) {
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++)
            ninv += (uint32_t)!(x[u].x >= -FLT_MAX) + (uint32_t)!(x[u].y >= -FLT_MAX) +
                    (uint32_t)!(x[u].z >= -FLT_MAX) + (uint32_t)!(x[u].w >= -FLT_MAX);
    }
    if (__any_sync(kTkpFullWarp, c != 0)) {
        uint32_t pos = tkp_warp_reserve(c, &sm->cand_n);
        if (c) {
#pragma unroll
            for (int u = 0; u < CK_UNROLL; u++) {
                const uint32_t i = body + 4 * (base + t + (uint32_t)u * CK_THREADS);
                if (x[u].x >= fthr)
                    ck_put_cand(sm, hist, x[u].x, i, pos);
                if (x[u].y >= fthr)
                    ck_put_cand(sm, hist, x[u].y, i + 1, pos);
                if (x[u].z >= fthr)
                    ck_put_cand(sm, hist, x[u].z, i + 2, pos);
                if (x[u].w >= fthr)
                    ck_put_cand(sm, hist, x[u].w, i + 3, pos);
            }
        }
    }
}

/* Pass 1 on row[i] for the i = (first + t) < end (a scalar head or tail, block-uniform). */
template <class E>
__device__ __forceinline__ void ck_pass1_one(const void *__restrict__ row, uint32_t first,
                                             uint32_t end, float fthr, uint32_t &ninv,
                                             uint32_t *hist, ck_smem *sm)
{
    const uint32_t i = first + threadIdx.x;
    const float x = i < end ? tkp_load1<E>(row, i) : __int_as_float(0x7FC00000);
    ninv += (uint32_t)(i < end && !(x >= -FLT_MAX));
    const uint32_t c = x >= fthr;
    if (__any_sync(kTkpFullWarp, c != 0)) {
        uint32_t pos = tkp_warp_reserve(c, &sm->cand_n);
        if (c)
            ck_put_cand(sm, hist, x, i, pos);
    }
}

/* Pass 1 over row[lo, hi) with a bound that tightens as it goes; returns the final bound T
 * (block-uniform), a lower bound of the row's pivot bucket. With `mask`, mask[lo, hi) is
 * zeroed on the way, each step's bytes while the next step's loads are in flight.
 *
 * The vector body is streamed in steps of CK_UNROLL * CK_THREADS vectors, the next step's
 * loads issued before the current step is processed. The first step, already in registers,
 * gives the sample: its first us * 2048 values (us = clamp(ceil(64 keff / 2048), 2,
 * CK_SAMPLE_MAX)) are counted by top digit in S = sm->hist[1] and T = the bucket of the sample's
 * keff-th largest key (0 when the sample holds fewer). Each step then counts in hist, and
 * appends to the candidate list, its keys with top digit >= the current T (x >= fthr); after
 * 1, 2, 4, 8, ... steps hist is walked again: the bucket b of the keff-th largest key seen so
 * far replaces T when b > T (hist is exact on the buckets > T, which are all the walk reads
 * before stopping in such a b). The scalar head and tail (< 4 tokens each) go last, against
 * the final T.
 *
 * Why the result is exact where it matters: (a) every T is the bucket of the keff-th largest
 * of a subset of the row's valid keys, so T <= the bucket of the row's keff-th largest
 * <= the pivot bucket P (k <= keff); (b) T only grows, so a key with top digit >= the final T
 * was >= the T in force when it was read: hist[b] is the slice's exact count for every
 * b >= final T; (c) hist[0] += the slice's invalid count. The buckets in (0, final T) hold
 * partial counts and the list holds some keys below the final T; neither is ever read as
 * exact (the reductions start at T, the later filters all require top digit >= P). */
template <class E>
static __device__ uint32_t ck_pass1(const void *__restrict__ row, uint32_t lo, uint32_t hi,
                                    uint32_t keff, uint32_t *hist, ck_smem *sm, uint8_t *mask)
{
    uint32_t ninv = 0, T = 0;
    float fthr = tkp_key_floor(1u);
    if (lo < hi) {
        const uint32_t mis = (uint32_t)tkp_vec4_head<E>(ck_elem<E>(row, lo));
        const uint32_t body = min(hi, lo + mis);
        const uint32_t nvec = (hi - body) >> 2;
        const void *__restrict__ v = ck_elem<E>(row, body); /* vector j: elements 4j .. */
        const uint32_t step = CK_UNROLL * CK_THREADS;
        if (nvec > 0) {
            const uint32_t us =
                min((uint32_t)CK_SAMPLE_MAX,
                    max(2u, (CK_SAMPLE_PER_K * keff + 4 * CK_THREADS - 1) / (4 * CK_THREADS)));
            float4 x[CK_UNROLL], y[CK_UNROLL];
            ck_load<E>(x, v, nvec, 0, ninv);
            uint32_t done = 0;
            for (uint32_t base = 0; base < nvec; base += step) { /* block-uniform */
                const bool more = nvec - base > step;
                if (more)
                    ck_load<E>(y, v, nvec, base + step, ninv);
                { /* the step after it into L2: one 128-byte line per thread for float32, 64 bytes
                   * of one for 16-bit (measured for float32: B = 1024 268 -> 260 us,
                   * V = 262144 k = 1000 B = 128 89 -> 86) */
                    const uint32_t pf = base + 2 * step + CK_UNROLL * threadIdx.x;
                    const void *line = ck_elem<E>(v, 4 * (int64_t)pf); /* a generic address */
                    if (pf < nvec)
                        asm volatile("prefetch.L2 [%0];" ::"l"(line));
                }
                if (mask) /* this step's mask bytes, while the next step's loads fly */
                    ck_zero(mask, body + 4 * base, body + 4 * min(nvec, base + step));
                if (base == 0) {
                    ck_sample(x, us, sm->hist[1]);
                    __syncthreads();
                    ck_find_bucket(sm->hist[1], CK_BUCKETS, keff, sm);
                    T = sm->bucket == 0xFFFFFFFFu ? 0u : sm->bucket;
                    fthr = tkp_key_floor(max(T << 21, 1u));
                }
                ck_pass1_proc(x, base, body, fthr, ninv, hist, sm);
                done++;
                if (more) {
                    if ((done & (done - 1)) == 0) { /* after 1, 2, 4, 8, ... steps */
                        __syncthreads(); /* every count of the steps so far is in hist */
                        ck_find_bucket(hist, CK_BUCKETS, keff, sm);
                        const uint32_t b = sm->bucket;
                        if (b != 0xFFFFFFFFu && b > T) {
                            T = b;
                            fthr = tkp_key_floor(T << 21);
                        }
                    }
#pragma unroll
                    for (int u = 0; u < CK_UNROLL; u++)
                        x[u] = y[u];
                }
            }
        }
        if (lo < body)
            ck_pass1_one<E>(row, lo, body, fthr, ninv, hist, sm);
        const uint32_t tail = body + 4 * nvec;
        if (tail < hi)
            ck_pass1_one<E>(row, tail, hi, fthr, ninv, hist, sm);
        if (mask) {
            ck_zero(mask, lo, body);
            ck_zero(mask, tail, hi);
        }
    }
    ninv = __reduce_add_sync(kTkpFullWarp, ninv);
    if (tkp_lane() == 0 && ninv)
        atomicAdd(&hist[0], ninv);
    return T;
}

#endif

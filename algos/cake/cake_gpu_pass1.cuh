/* cake_gpu_pass1.cuh — cake's streaming first pass: the slice read in steps of 16-byte
 * vectors (ck_stream, and ck_pass1 with its sampled, tightening bound), the top-digit
 * histogram, the candidate list, and the kept mask zeroed on the way.
 *
 * Every read of the row is typed by the element type E of algos/common/gpu_logits.cuh: a
 * vector is one 16-byte load (tkp_load16), W = tkp_vec16_elems<E>() elements: a float4 of 4
 * float32 values, or a uint4 of 8 bf16 / fp16 values kept raw in registers until each value is
 * converted exactly to float32 (tkp_vec16_get), so the keys and decisions on a 16-bit row are
 * those on its float32 upcast (docs/SEMANTICS.md, "16-bit logits") and a 16-bit row has as
 * many bytes in flight per thread as a float32 one. Indices and counts are in elements. */
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

/* Whether slot u of the step at `base` holds a vector of the body for some thread
 * (block-uniform). A slice of one step (the register-resident variant, B <= 66 on the H200:
 * at B = 1 and 16 bits a quarter-full step) skips the slots that hold none, so it costs what
 * it holds. A streamed slice processes every slot as loaded: the test on each of its steps,
 * or a second copy of the step code run for its last, partial step, cost 2-10 % at B >= 128
 * on bf16 (algos/cake/README.md, "Short slices"). The template flag FULL of ck_load and
 * ck_pass1_proc is that choice: true for a streamed slice. */
__device__ __forceinline__ bool ck_slot_live(uint32_t base, int u, uint32_t nvec)
{
    return base + (uint32_t)u * CK_THREADS < nvec;
}

/* f(key, index, ok) over row[lo, hi): a scalar head up to the first 16-byte-aligned element
 * (tkp_vec16_head: fewer than W tokens), the vector body (CK_UNROLL 16-byte loads in flight per
 * thread), a scalar tail (fewer than W tokens). Every loop is block-uniform, so f is called by
 * all 32 lanes of every warp together (warp collectives inside f are allowed); a slot past the
 * range calls f with ok = false and key 0. Order of visits is unspecified. */
template <class E, typename F>
__device__ __forceinline__ void ck_stream(const void *__restrict__ row, uint32_t lo,
                                          uint32_t hi, F f)
{
    constexpr uint32_t W = (uint32_t)tkp_vec16_elems<E>();
    if (lo >= hi)
        return;
    const uint32_t t = threadIdx.x;
    const uint32_t mis = (uint32_t)tkp_vec16_head<E>(ck_elem<E>(row, lo));
    const uint32_t body = min(hi, lo + mis);
    if (lo < body) { /* fewer than W tokens: one block-wide step */
        const uint32_t i = lo + t;
        const bool ok = i < body;
        f(ok ? tkp_order_key(tkp_load1<E>(row, i)) : 0u, i, ok);
    }
    const uint32_t nvec = (hi - body) / W;
    const void *__restrict__ v = ck_elem<E>(row, body); /* vector j: elements W j .. W j + W-1 */
    for (uint32_t base = 0; base < nvec; base += CK_UNROLL * CK_THREADS) {
        typename E::vec16 x[CK_UNROLL];
        const void *mine = ck_elem<E>(v, W * (int64_t)(base + t)); /* vector u = 0 */
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            const uint32_t j = base + t + (uint32_t)u * CK_THREADS;
            x[u] = j < nvec ? tkp_load16<E>(mine, W * u * CK_THREADS) : tkp_vec16_zero<E>();
        }
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            const uint32_t j = base + t + (uint32_t)u * CK_THREADS;
            const bool ok = j < nvec;
            const uint32_t i = body + W * j;
#pragma unroll
            for (int q = 0; q < (int)W; q += 4) {
                const typename E::vec16 &xu = x[u];
                f(ok ? tkp_order_key(tkp_vec16_get<E>(xu, q)) : 0u, i + q, ok);
                f(ok ? tkp_order_key(tkp_vec16_get<E>(xu, q + 1)) : 0u, i + q + 1, ok);
                f(ok ? tkp_order_key(tkp_vec16_get<E>(xu, q + 2)) : 0u, i + q + 2, ok);
                f(ok ? tkp_order_key(tkp_vec16_get<E>(xu, q + 3)) : 0u, i + q + 3, ok);
            }
        }
    }
    const uint32_t tail = body + W * nvec;
    if (tail < hi) { /* fewer than W tokens */
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

/* Load one block-wide step of the vector body v (elements of type E): x[u] = raw vector
 * base + t + u * CK_THREADS for u < CK_UNROLL (W elements each); a slot at or past nvec reads
 * NaN (never a candidate, never sampled) and, when ck_pass1_proc will count it (FULL, or its
 * slot is live), its W invalid counts are taken back from ninv in advance. A step wholly
 * inside the row (all but a streamed slice's last) loads without a test a slot. */
template <class E, bool FULL>
__device__ __forceinline__ void ck_load(typename E::vec16 (&x)[CK_UNROLL],
                                        const void *__restrict__ v, uint32_t nvec,
                                        uint32_t base, uint32_t &ninv)
{
    constexpr uint32_t W = (uint32_t)tkp_vec16_elems<E>();
    const void *mine = ck_elem<E>(v, W * (int64_t)(base + threadIdx.x)); /* vector u = 0 */
    if (nvec - base >= CK_UNROLL * CK_THREADS) { /* block-uniform: every slot in the row */
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++)
            x[u] = tkp_load16<E>(mine, W * u * CK_THREADS);
        return;
    }
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        const uint32_t j = base + threadIdx.x + (uint32_t)u * CK_THREADS;
        if (j < nvec) {
            x[u] = tkp_load16<E>(mine, W * u * CK_THREADS);
        } else {
            x[u] = tkp_vec16_nan<E>();
            if (FULL || ck_slot_live(base, u, nvec))
                ninv -= W;
        }
    }
}

/* The sample: the valid values of x[u], u < us, counted in S by top digit. */
template <class E>
__device__ __forceinline__ void ck_sample(const typename E::vec16 (&x)[CK_UNROLL], uint32_t us,
                                          uint32_t *S)
{
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        if ((uint32_t)u < us) {
#pragma unroll
            for (int c = 0; c < tkp_vec16_elems<E>(); c++) {
                const float e = tkp_vec16_get<E>(x[u], c);
                if (e >= -FLT_MAX)
                    atomicAdd(&S[tkp_order_key(e) >> 21], 1u);
            }
        }
    }
}

/* Pass 1 on one loaded step x (the values at body + W * (base + t + u * CK_THREADS) + c).
 * Per vector: its maximum and its sum (tkp_vec16_max_sum: packed pairs for 16-bit types), and
 * one bit of `hot` when the maximum reaches fthr; one vote per step. Only the vectors of a hot
 * bit are compared value by value: their candidates (a few per cent of the values, fewer as
 * the bound tightens) are counted, one tkp_warp_reserve per warp places them, and they are
 * appended. A vector whose maximum is below fthr (or NaN: all of it NaN) holds no value >=
 * fthr, so the candidates are those of a compare of every value. Unless FULL (a one-step
 * slice: every live vector compared), the slots that hold no vector are skipped
 * (ck_slot_live). */
template <class E, bool FULL>
__device__ __forceinline__ void ck_pass1_proc(const typename E::vec16 (&x)[CK_UNROLL],
                                              uint32_t base, uint32_t body, uint32_t nvec,
                                              float fthr, uint32_t &ninv, uint32_t *hist,
                                              ck_smem *sm)
{
    constexpr int W = tkp_vec16_elems<E>();
    const uint32_t t = threadIdx.x;
    uint32_t hot = 0;
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        if (!FULL && !ck_slot_live(base, u, nvec))
            break;
        float max;
        tkp_vec16_max_sum<E>(x[u], max, sum);
        /* a one-step slice marks every live vector hot: its bound is the sample's alone, so
         * nearly every warp holds a hot vector and the maxima only add work (B = 1 and 16 bits
         * at B = 16 were 3-4 % slower with them; README "Fewer instructions a logit") */
        hot |= (uint32_t)(!FULL || max >= fthr) << u;
    }
    /* A sum with a NaN or -inf term is NaN or -inf whatever the order (NaN propagates,
     * -inf + y is -inf or NaN), so a sum >= -FLT_MAX proves every value valid; otherwise
     * (an invalid value, a NaN fill past the end, or a sum overflowing to -inf) count
     * exactly (the fills were taken back at load time). */
    if (!(sum >= -FLT_MAX)) {
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            if (!FULL && !ck_slot_live(base, u, nvec))
                break;
#pragma unroll
            for (int q = 0; q < W; q += 4)
                ninv += (uint32_t)!(tkp_vec16_get_cold<E>(x[u], q) >= -FLT_MAX) +
                        (uint32_t)!(tkp_vec16_get_cold<E>(x[u], q + 1) >= -FLT_MAX) +
                        (uint32_t)!(tkp_vec16_get_cold<E>(x[u], q + 2) >= -FLT_MAX) +
                        (uint32_t)!(tkp_vec16_get_cold<E>(x[u], q + 3) >= -FLT_MAX);
        }
    }
    if (__any_sync(kTkpFullWarp, hot != 0)) {
        uint32_t c = 0;
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++)
            if (hot & (1u << u))
#pragma unroll
                for (int e = 0; e < W; e++)
                    c += (uint32_t)(tkp_vec16_get_cold<E>(x[u], e) >= fthr);
        uint32_t pos = tkp_warp_reserve(c, &sm->cand_n);
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            if (!(hot & (1u << u)))
                continue;
            const uint32_t i = body + W * (base + t + (uint32_t)u * CK_THREADS);
#pragma unroll
            for (int e = 0; e < W; e++) {
                const float xe = tkp_vec16_get_cold<E>(x[u], e);
                if (xe >= fthr)
                    ck_put_cand(sm, hist, xe, i + e, pos);
            }
        }
    }
}

/* Pass 1 on row[i] for the i = (first + t) < end (a scalar head or tail of fewer than W
 * tokens, block-uniform). */
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

/* The step of vectors from `first` into L2: one 128-byte line (CK_UNROLL vectors) per thread
 * (measured for float32: B = 1024 268 -> 260 us, V = 262144 k = 1000 B = 128 89 -> 86). */
template <class E>
__device__ __forceinline__ void ck_prefetch_step(const void *__restrict__ v, uint32_t first,
                                                 uint32_t nvec)
{
    constexpr uint32_t W = (uint32_t)tkp_vec16_elems<E>();
    const uint32_t pf = first + CK_UNROLL * threadIdx.x;
    const void *line = ck_elem<E>(v, W * (int64_t)pf); /* a generic address */
    if (pf < nvec)
        asm volatile("prefetch.L2 [%0];" ::"l"(line));
}

/* The bound tightened on the counts so far (block-uniform): the bucket b of the keff-th largest
 * key counted in hist replaces T when b > T, and fthr follows. */
__device__ __forceinline__ void ck_tighten(const uint32_t *hist, uint32_t keff, ck_smem *sm,
                                           uint32_t &T, float &fthr)
{
    __syncthreads(); /* every count of the steps so far is in hist */
    ck_find_bucket(hist, CK_BUCKETS, keff, sm);
    const uint32_t b = sm->bucket;
    if (b != 0xFFFFFFFFu && b > T) {
        T = b;
        fthr = tkp_key_floor(T << 21);
    }
}

/* Pass 1 over row[lo, hi) with a bound that tightens as it goes; returns the final bound T
 * (block-uniform), a lower bound of the row's pivot bucket. With `mask`, mask[lo, hi) is
 * zeroed on the way, each step's bytes while the next step's loads are in flight.
 *
 * The vector body is streamed in steps of CK_UNROLL * CK_THREADS vectors (W * that tokens),
 * the next step's loads issued before the current step is processed. The first step, already
 * in registers, gives the sample: its first us4 * 4N values, N = CK_THREADS (us4 =
 * clamp(ceil(64 keff / 4N), 2, CK_SAMPLE_MAX); for 16-bit types rounded up to whole 8-value
 * vectors, us4 * 4N or 4N more) are counted by top digit in S = sm->hist[1] and T = the
 * bucket of the sample's keff-th largest key (0 when the sample holds fewer). Each step then counts in hist, and
 * appends to the candidate list, its keys with top digit >= the current T (x >= fthr); after
 * 1, 2, 4, 8, ... steps hist is walked again: the bucket b of the keff-th largest key seen so
 * far replaces T when b > T (hist is exact on the buckets > T, which are all the walk reads
 * before stopping in such a b). The scalar head and tail (< W tokens each) go last, against
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
    constexpr uint32_t W = (uint32_t)tkp_vec16_elems<E>(), W4 = W / 4;
    uint32_t ninv = 0, T = 0;
    float fthr = tkp_key_floor(1u);
    if (lo < hi) {
        const uint32_t mis = (uint32_t)tkp_vec16_head<E>(ck_elem<E>(row, lo));
        const uint32_t body = min(hi, lo + mis);
        const uint32_t nvec = (hi - body) / W;
        const void *__restrict__ v = ck_elem<E>(row, body); /* vector j: elements W j .. */
        const uint32_t step = CK_UNROLL * CK_THREADS;
        if (nvec > 0) {
            /* us4 4-element vectors per thread (the float32 sample), rounded up to W-element
             * ones: at least the same values for 16-bit types */
            const uint32_t us4 =
                min((uint32_t)CK_SAMPLE_MAX,
                    max(2u, (CK_SAMPLE_PER_K * keff + 4 * CK_THREADS - 1) / (4 * CK_THREADS)));
            const uint32_t us = (us4 + W4 - 1) / W4;
            typename E::vec16 x[CK_UNROLL], y[CK_UNROLL];
            /* one-step slice (the register-resident variant): its empty slots skipped;
             * a streamed slice: every slot as loaded (see ck_slot_live) */
            const bool streams = nvec > step;
            if (streams)
                ck_load<E, true>(x, v, nvec, 0, ninv);
            else
                ck_load<E, false>(x, v, nvec, 0, ninv);
            uint32_t done = 0;
            for (uint32_t base = 0; base < nvec; base += step) { /* block-uniform */
                const bool more = nvec - base > step;
                if (more) /* only a streamed slice has a next step */
                    ck_load<E, true>(y, v, nvec, base + step, ninv);
                ck_prefetch_step<E>(v, base + 2 * step, nvec);
                if (mask) /* this step's mask bytes, while the next step's loads fly */
                    ck_zero(mask, body + W * base, body + W * min(nvec, base + step));
                if (base == 0) {
                    ck_sample<E>(x, us, sm->hist[1]);
                    __syncthreads();
                    ck_find_bucket(sm->hist[1], CK_BUCKETS, keff, sm);
                    T = sm->bucket == 0xFFFFFFFFu ? 0u : sm->bucket;
                    fthr = tkp_key_floor(max(T << 21, 1u));
                }
                if (streams)
                    ck_pass1_proc<E, true>(x, base, body, nvec, fthr, ninv, hist, sm);
                else
                    ck_pass1_proc<E, false>(x, base, body, nvec, fthr, ninv, hist, sm);
                done++;
                if (more) {
                    if ((done & (done - 1)) == 0) /* after 1, 2, 4, 8, ... steps */
                        ck_tighten(hist, keff, sm, T, fthr);
#pragma unroll
                    for (int u = 0; u < CK_UNROLL; u++)
                        x[u] = y[u];
                }
            }
        }
        if (lo < body)
            ck_pass1_one<E>(row, lo, body, fthr, ninv, hist, sm);
        const uint32_t tail = body + W * nvec;
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

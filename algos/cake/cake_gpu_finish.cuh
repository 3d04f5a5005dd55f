/* cake_gpu_finish.cuh — step 5 on rank 0's slab: top-p on exact uint64 prefix sums, the mass
 * tail (only the entries the kept set can reach are sorted), the kept mask and the inverse-CDF
 * draws. */
#ifndef TKP_CAKE_GPU_FINISH_CUH
#define TKP_CAKE_GPU_FINISH_CUH

#include "../common/gpu_async.cuh"
#include "../common/gpu_block.cuh"
#include "../common/gpu_minp.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "cake_gpu_bucket.cuh"
#include "cake_gpu_sort.cuh"
#include "cake_gpu_types.cuh"


/* The fixed-point weight of slab entry c (a composite) in a row whose largest value is top. */
__device__ __forceinline__ u64 ck_weight_of(u64 c, float top)
{
    return tkp_weight(tkp_key_value((uint32_t)(c >> 32)), top);
}

/* The logits' element type, from ck_args.mode. */
__device__ __forceinline__ enum tkp_dtype ck_dtype(const ck_args &a)
{
    return (enum tkp_dtype)(a.mode >> CK_DTYPE_SHIFT);
}

/* Row r's inputs of step 5 (ck_row_in), read from global memory (cake_topp_kernel). */
__device__ __forceinline__ ck_row_in ck_row_in_load(const ck_args &a, int64_t r)
{
    ck_row_in in;
    in.k = a.io.k[r];
    in.p = a.io.p[r];
    in.min_p = a.io.min_p ? a.io.min_p[r] : 0.0f;
    in.seed = a.io.row_seed ? a.io.row_seed[r] : a.io.seed;
    in.offset = a.io.row_offset ? a.io.row_offset[r] : a.io.offset;
    in.per_row = a.io.row_seed || a.io.row_offset;
    return in;
}

/* The same copied into shared memory `in` by one thread, asynchronously (gpu_async.cuh); k was
 * read already. That thread waits for the copies (tkp_copy_async_wait_all) before the cluster
 * barrier that precedes every read (cake_kernel, cake_gpu_kernels.cuh). */
__device__ __forceinline__ void ck_row_in_fetch(const ck_args &a, int64_t r, int32_t k,
                                                ck_row_in *in)
{
    in->k = k;
    in->per_row = a.io.row_seed || a.io.row_offset;
    tkp_copy_async<4>(&in->p, a.io.p + r);
    if (a.io.min_p)
        tkp_copy_async<4>(&in->min_p, a.io.min_p + r);
    else
        in->min_p = 0.0f;
    if (a.io.row_seed)
        tkp_copy_async<8>(&in->seed, a.io.row_seed + r);
    else
        in->seed = a.io.seed;
    if (a.io.row_offset)
        tkp_copy_async<8>(&in->offset, a.io.row_offset + r);
    else
        in->offset = a.io.offset;
    tkp_copy_async_commit();
}

/* Row r's min-p threshold (docs/SEMANTICS.md, "min-p"): 0 when its min-p is off. */
__device__ __forceinline__ uint64_t ck_minp_threshold(const ck_row_in &in)
{
    return tkp_minp_threshold(in.min_p);
}

/* The entries of row r's sorted slab that stay before top-p once min-p is folded into its k
 * (docs/SEMANTICS.md, "min-p"; the same k' as cake.c's tkp_minp_fold_k): the slab's first n
 * entries are the row's top n in the canonical order, every valid token of the row when n is
 * below its k; n_part of them reach the threshold thr (against top, the row's largest); y is
 * the value of entry n - 1. min(n, k'), with k' from the slab (tkp_minp_fold_part) or, when
 * that does not settle it, from row_count(): the count over the whole row, which every thread
 * calls (its barriers) since everything it depends on is the same in each. */
template <class Count>
__device__ __forceinline__ uint32_t ck_minp_cut(const ck_args &a, const ck_row_in &in, uint32_t n,
                                                uint32_t n_part, float y, float top, uint64_t thr,
                                                Count &&row_count)
{
    const int32_t k = in.k;
    const bool whole = !tkp_topk_on(k, a.vocab) || n < (uint32_t)k;
    int32_t folded = (a.mode & CK_MINP_FORCE)
                         ? -1
                         : tkp_minp_fold_part(k, n_part, a.vocab, whole ? -INFINITY : y, top, thr);
    if (folded < 0)
        folded = tkp_minp_fold(k, (int64_t)row_count(), a.vocab);
    return tkp_topk_on(folded, a.vocab) ? min(n, (uint32_t)folded) : n;
}

/* The count over row r that ck_minp_cut falls back on, by the CTA's NTH threads (out of
 * line, as ck_minp_warp_count; the arguments by value, so that no copy of ck_args goes to the
 * stack). */
template <int NTH>
__device__ __noinline__ uint32_t ck_minp_block_count(enum tkp_dtype dtype, const void *logits,
                                                     int64_t stride, int64_t vocab, int64_t r,
                                                     float top, uint64_t thr)
{
    __shared__ uint32_t total;
    if (threadIdx.x == 0)
        total = 0;
    __syncthreads();
    const uint32_t mine = (uint32_t)tkp_minp_row_share(dtype, logits, stride, r, vocab, top, thr,
                                                       threadIdx.x, NTH);
    if (mine)
        atomicAdd(&total, mine);
    __syncthreads();
    return total;
}

/* The kept mask's ones and the draws of row r from its sorted slab and the inclusive prefix
 * incl of its weights, by threads t, t + nth, ...: draw d is the kept entry j with
 * incl[j-1] <= u < incl[j], u its Philox value scaled to the kept mass (cake.c's search). */
__device__ __forceinline__ void ck_mark_and_draw(const ck_args &a, int64_t r, const ck_row_in &in,
                                                 const u64 *slab, const u64 *incl, uint32_t kept,
                                                 uint32_t t, uint32_t nth)
{
    if (a.io.kept) {
        uint8_t *mrow = a.io.kept + r * a.vocab;
        for (uint32_t j = t; j < kept; j += nth)
            mrow[(uint32_t)~(uint32_t)slab[j]] = 1;
    }
    if (a.io.samples) {
        int64_t *out = a.io.samples + r * (int64_t)a.draws;
        const uint64_t kept_total = incl[kept - 1];
        /* the row's key (docs/SEMANTICS.md, "Sampling: two keying modes"), from `in` */
        const struct tkp_row_key rk = tkp_row_key_from(in.per_row, in.seed, in.offset, r);
        for (int32_t dr = (int32_t)t; dr < a.draws; dr += (int32_t)nth) {
            const uint64_t u = tkp_draw_target(rk.seed, rk.row, rk.offset, (uint32_t)dr, kept_total);
            uint32_t l = 0, h = kept - 1;
            while (l < h) {
                const uint32_t mid = l + (h - l) / 2;
                if (incl[mid] > u)
                    h = mid;
                else
                    l = mid + 1;
            }
            out[dr] = (int64_t)(uint32_t)~(uint32_t)slab[l];
        }
    }
}

/* Row r's top-p (fraction p), kept-mask ones and draws, by a CTA of NTH threads
 * (EPT NTH >= n, EPT = CK_SLAB / NTH entries a thread): slab holds the n slab entries sorted
 * descending; incl (n words), wsum (NTH / 32) and *cnt (zero) are shared scratch. The
 * arithmetic of cake.c: exact uint64 prefix sums of tkp_weight, tkp_topp_target, and per draw
 * the binary search of its Philox value. */
template <int NTH>
__device__ void ck_finish(const ck_args &a, int64_t r, const ck_row_in &in, const u64 *slab,
                          uint32_t n, u64 *incl, u64 *wsum, uint32_t *cnt)
{
    constexpr int EPT = CK_SLAB / NTH > 2 ? CK_SLAB / NTH : 2;
    const uint32_t t = threadIdx.x, j0 = EPT * t;
    /* Inclusive fixed-point prefix of the slab: thread t owns entries EPT t .. EPT t + EPT - 1. */
    const float top = tkp_key_value((uint32_t)(slab[0] >> 32));
    u64 w[EPT], sum = 0;
#pragma unroll
    for (int e = 0; e < EPT; e++) {
        w[e] = j0 + e < n ? ck_weight_of(slab[j0 + e], top) : 0;
        sum += w[e];
    }
    u64 total;
    u64 run = tkp_block_excl_scan<NTH / 32>(sum, wsum, total);
#pragma unroll
    for (int e = 0; e < EPT; e++) {
        run += w[e];
        if (j0 + e < n)
            incl[j0 + e] = run;
    }
    __syncthreads();
    const uint64_t thr = ck_minp_threshold(in);
    if (thr) { /* the same in every thread: min-p cuts the slab to its first n entries */
        uint32_t mine = 0;
#pragma unroll
        for (int e = 0; e < EPT; e++)
            mine += j0 + e < n && w[e] >= thr;
        uint32_t n_part = 0; /* the sum of mine over the block: #threads with mine >= e, e = 1.. */
#pragma unroll
        for (int e = 1; e <= EPT; e++)
            n_part += __syncthreads_count(mine >= (uint32_t)e);
        const float y = tkp_key_value((uint32_t)(slab[n - 1] >> 32));
        n = ck_minp_cut(a, in, n, n_part, y, top, thr,
                        [&] {
                            return ck_minp_block_count<NTH>(ck_dtype(a), a.io.logits, a.stride,
                                                            a.vocab, r, top, thr);
                        });
    }
    const uint64_t target = tkp_topp_target(in.p, incl[n - 1]);
    /* kept = 1 + #{j in [1, n): incl[j-1] < target}; incl is non-decreasing, so this is the
     * CPU's walk. */
    uint32_t c = 0;
#pragma unroll
    for (int e = 0; e < EPT; e++)
        c += j0 + e >= 1 && j0 + e < n && incl[j0 + e - 1] < target;
    if (c)
        atomicAdd(cnt, c);
    __syncthreads();
    const uint32_t kept = 1 + *cnt;
    ck_mark_and_draw(a, r, in, slab, incl, kept, t, NTH);
}

/* The count over row r that ck_minp_cut falls back on, by warp 0 (out of line: it runs on
 * rare rows, and inlined it costs the 16-bit kernels registers). */
static __device__ __noinline__ uint32_t ck_minp_warp_count(enum tkp_dtype dtype,
                                                           const void *logits, int64_t stride,
                                                           int64_t vocab, int64_t r, float top,
                                                           uint64_t thr)
{
    const uint32_t share = (uint32_t)tkp_minp_row_share(dtype, logits, stride, r, vocab, top, thr,
                                                        threadIdx.x, 32);
    return __reduce_add_sync(kTkpFullWarp, share);
}

/* ck_minp_cut for ck_finish_warp's lanes, which hold slab entries 4 lane .. 4 lane + 3 sorted
 * in v and their weights in w (0 from entry n on). */
static __device__ uint32_t ck_finish_warp_minp(const ck_args &a, int64_t r, const ck_row_in &in,
                                               const u64 v[4], const u64 w[4], uint32_t n,
                                               float top, uint64_t thr)
{
    const uint32_t lane = threadIdx.x;
    uint32_t mine = 0;
    u64 last = 0; /* entry n - 1, from the lane that holds it */
#pragma unroll
    for (int e = 0; e < 4; e++) {
        mine += w[e] >= thr && 4 * lane + e < n;
        last = 4 * lane + e == n - 1 ? v[e] : last;
    }
    const uint32_t n_part = __reduce_add_sync(kTkpFullWarp, mine);
    last = __shfl_sync(kTkpFullWarp, last, (n - 1) / 4);
    return ck_minp_cut(a, in, n, n_part, tkp_key_value((uint32_t)(last >> 32)), top, thr,
                       [&] {
                           return ck_minp_warp_count(ck_dtype(a), a.io.logits, a.stride,
                                                     a.vocab, r, top, thr);
                       });
}

/* Step 5 when rank 0 gathered at most 128 entries (k <= 128 on the usual rows) and the row
 * asks for at most 32 draws: warp 0 alone, no block barrier. The bitonic network of
 * ck_sort_desc on the 4 entries per lane it holds in registers, the weights' inclusive prefix by
 * a warp scan, the kept count by a warp sum; the sorted slab and incl go to shared memory for
 * the draws' searches. The same integers as ck_finish, hence the same mask and draws. `total`:
 * the slab's mass when the m entries are only its first ones (ck_mass_tail), 0 when they are
 * the whole slab (then it is their sum). */
static __device__ void ck_finish_warp(const ck_args &a, int64_t r, const ck_row_in &in, u64 *slab,
                                      uint32_t m,
                               uint32_t n, u64 *incl, u64 total)
{
    const uint32_t lane = threadIdx.x;
    u64 v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const uint32_t j = 4 * lane + e;
        v[e] = j < m ? slab[j] : 0; /* 0: below every composite */
    }
    ck_sort_warp(v, ck_sort_size(m));
    const float top = tkp_key_value((uint32_t)(__shfl_sync(kTkpFullWarp, v[0], 0) >> 32));
    u64 w[4], sum = 0;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const uint32_t j = 4 * lane + e;
        w[e] = j < n ? ck_weight_of(v[e], top) : 0;
    }
    const uint64_t thr = ck_minp_threshold(in); /* 0 on the mass tail's call (min-p off) */
    if (thr) /* the same in every lane: min-p cuts the slab to its first n entries */
        n = ck_finish_warp_minp(a, r, in, v, w, n, top, thr);
#pragma unroll
    for (int e = 0; e < 4; e++) {
        w[e] = 4 * lane + e < n ? w[e] : 0;
        sum += w[e];
    }
    /* The lane's inclusive prefix: tkp_warp_incl_scan's scan, with the lane taken as threadIdx.x
     * (only warp 0 calls this). Kept local: tkp_warp_incl_scan's lane is threadIdx.x & 31, and
     * with it the kernel is 16 instructions longer (the same integers and registers; also with
     * the caller's t < 32 assumed). */
    u64 x = sum;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const u64 y = __shfl_up_sync(kTkpFullWarp, x, d);
        if (lane >= (uint32_t)d)
            x += y;
    }
    const uint64_t target = tkp_topp_target(in.p, total ? total : __shfl_sync(kTkpFullWarp, x, 31));
    u64 before = x - sum; /* incl[j - 1] for the lane's first entry j */
    uint32_t c = 0;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const uint32_t j = 4 * lane + e;
        c += j >= 1 && j < n && before < target;
        before += w[e];
        if (j < n) {
            incl[j] = before;
            slab[j] = v[e];
        }
    }
    const uint32_t kept = 1 + __reduce_add_sync(kTkpFullWarp, c);
    __syncwarp();
    ck_mark_and_draw(a, r, in, slab, incl, kept, lane, 32);
}

/* The n-th largest of the m distinct composites e[0, m) (1 <= n <= m): a radix select over
 * the 64 bits in digits of 11, 11, 10, 11, 11 and 10 bits (the key, then ~index), histograms
 * in sm->tot, stopping as soon as the bucket holding it is taken whole. Returns the smallest
 * composite c with exactly n entries >= c. Called by every thread of rank 0. */
static __device__ uint64_t ck_select_cut(const u64 *e, uint32_t m, uint32_t n, ck_smem *sm)
{
    u64 prefix = 0, mask = 0;
    uint32_t take = n;
    int shift = 64;
    for (int d = 0; d < 6; d++) {
        const int bits = d % 3 == 2 ? 10 : 11;
        shift -= bits;
        const uint32_t nb = 1u << bits;
        for (uint32_t b = threadIdx.x; b < nb; b += CK_THREADS)
            sm->tot[b] = 0;
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < m; i += CK_THREADS)
            if ((e[i] & mask) == prefix)
                atomicAdd(&sm->tot[(uint32_t)(e[i] >> shift) & (nb - 1)], 1u);
        __syncthreads();
        ck_find_bucket(sm->tot, nb, take, sm);
        const uint32_t b = sm->bucket;
        take -= sm->above;
        prefix |= (u64)b << shift;
        mask |= (u64)(nb - 1) << shift;
        const bool whole = sm->tot[b] == take;
        __syncthreads(); /* everyone has read tot, bucket and above before they are rewritten */
        if (whole)
            break;
    }
    return prefix;
}

/* Step 5 for more than 1024 gathered entries (the slab is their n largest, n <= m) and at
 * most 32 draws, when the kept set is short: top-p keeps a prefix of the sorted slab, so only the
 * entries that can be in it are sorted. The slab's mass is summed with the weight of each
 * top-digit bucket; the kept set lies in the buckets >= B*, the highest non-empty bucket whose
 * suffix mass reaches the target (an entry below B* has at least that mass before it). When
 * those "heavy" entries are at most 128, warp 0 sorts them and finishes with the slab's total
 * (ck_finish_warp): the same kept set, prefix sums and draws as sorting all n. Returns false
 * (nothing written, the slab untouched) when they are more: the caller sorts the whole slab.
 * Shared scratch: tot, mine (bucket masses, then the heavy entries), the entry array slab. */
static __device__ bool ck_mass_tail(const ck_args &a, int64_t r, const ck_row_in &in, u64 *slab,
                                    uint32_t m,
                             uint32_t n, ck_smem *sm)
{
    const uint32_t t = threadIdx.x;
    const u64 cut = n < m ? ck_select_cut(slab, m, n, sm) : 0;
    u64 top = 0;
    for (uint32_t i = t; i < m; i += CK_THREADS)
        top = slab[i] > top ? slab[i] : top;
    top = __reduce_max_sync(kTkpFullWarp, (uint32_t)(top >> 32)); /* the key is enough for top */
    u64 *mass = sm->mine;
    for (uint32_t b = t; b < CK_BUCKETS; b += CK_THREADS) {
        mass[b] = 0;
        sm->tot[b] = 0;
    }
    if (t < CK_WARPS)
        sm->wsum[t] = 0;
    if (t == 0)
        sm->heavy_n = sm->heavy_low = 0;
    __syncthreads();
    if (tkp_lane() == 0)
        atomicMax(reinterpret_cast<unsigned long long *>(&sm->wsum[0]), top);
    __syncthreads();
    const float topv = tkp_key_value((uint32_t)sm->wsum[0]);
    for (uint32_t i = t; i < m; i += CK_THREADS)
        if (slab[i] >= cut) {
            const uint32_t b = (uint32_t)(slab[i] >> 53);
            tkp_shared_add_u64(&mass[b], ck_weight_of(slab[i], topv));
            atomicAdd(&sm->tot[b], 1u);
        }
    __syncthreads();
    /* Thread t owns buckets BPT t .. BPT t + BPT - 1: suffix masses from the block's prefix
     * scan. */
    constexpr uint32_t BPT = CK_BUCKETS / CK_THREADS;
    u64 own[BPT], sum = 0;
#pragma unroll
    for (uint32_t j = 0; j < BPT; j++) {
        own[j] = mass[BPT * t + j];
        sum += own[j];
    }
    u64 total;
    const u64 before = tkp_block_excl_scan<CK_WARPS>(sum, sm->wsum, total);
    const uint64_t target = tkp_topp_target(in.p, total);
    u64 suffix = total - before - sum; /* the mass of the buckets above this thread's */
#pragma unroll
    for (int j = (int)BPT - 1; j >= 0; j--) {
        suffix += own[j];
        if (sm->tot[BPT * t + j] > 0 && suffix >= target)
            atomicMax(&sm->heavy_low, BPT * t + (uint32_t)j + 1);
    }
    __syncthreads();
    const uint32_t low = sm->heavy_low; /* B* + 1; 0: none (top-p off keeps all n) */
    __syncthreads(); /* the bucket masses are read: mine takes the heavy entries */
    if (low == 0)
        return false;
    for (uint32_t i = t; i < m; i += CK_THREADS)
        if (slab[i] >= cut && (uint32_t)(slab[i] >> 53) >= low - 1) {
            const uint32_t at = atomicAdd(&sm->heavy_n, 1u);
            if (at < 128)
                sm->mine[at] = slab[i];
        }
    __syncthreads();
    const uint32_t h = sm->heavy_n;
    if (h > 128)
        return false; /* the slab is intact (only mine and tot were used) */
    if (t < 32)
        ck_finish_warp(a, r, in, sm->mine, h, h, slab, total);
    return true;
}

/* A row without a valid token: its draws are -1 (its mask stays zero). */
template <int NTH>
__device__ __forceinline__ void ck_no_draws(const ck_args &a, int64_t r)
{
    if (a.io.samples)
        for (int32_t dr = (int32_t)threadIdx.x; dr < a.draws; dr += NTH)
            a.io.samples[r * (int64_t)a.draws + dr] = -1;
}

/* 5'. (topp_launch=chained) The m gathered entries, unsorted, and (m, n) into the workspace
 * for cake_topp_kernel. */
__device__ __forceinline__ void ck_hand_to_topp_kernel(const ck_args &a, int64_t r,
                                                       const ck_smem *sm, uint32_t m,
                                                       uint32_t n)
{
    const uint32_t t = threadIdx.x;
    u64 *dst = a.ws_slab + r * CK_GATHER;
    for (uint32_t i = t; i < m; i += CK_THREADS)
        dst[i] = sm->slab[i];
    if (t == 0)
        a.ws_count[r] = make_uint2(m, n);
}

/* 5. Rank 0 of row r's cluster, once its slab array holds every gathered entry: sort (the slab
 * is the first n entries), top-p, kept mask, samples; k is the row's min(k_eff, #valid). m is k
 * on path 4b and `gathered` (>= k) on path 4a. Called by every thread of rank 0. */
__device__ __forceinline__ void ck_finish_rank0(const ck_args &a, int64_t r, ck_smem *sm,
                                                uint32_t k)
{
    const uint32_t t = threadIdx.x;
    const uint32_t m = min(sm->slab_n, (uint32_t)CK_GATHER), n = min(m, k);
    if (a.mode & CK_CHAINED) { /* 5'. hand the unsorted entries to cake_topp_kernel */
        ck_hand_to_topp_kernel(a, r, sm, m, n);
        return;
    }
    if (n == 0) {
        ck_no_draws<CK_THREADS>(a, r);
        return;
    }
    const ck_row_in &in = sm->in; /* copied at the kernel's start (ck_row_in_fetch) */
    u64 *slab = sm->slab;
    if (m <= 128 && a.draws <= 32) {
        if (t < 32)
            ck_finish_warp(a, r, in, slab, m, n, sm->mine, 0);
        return;
    }
    /* Measured (H200 trace, 1764 entries): the mass tail 9.4 us against 13 us for sorting 2048
     * and finishing; taken for every m > 128, it made flat rows (k = 50, B = 1, V = 128256,
     * fewer than 1024 entries) 15.8 -> 18.8 us. The sort's cost grows as m log^2 m, so below
     * 1024 entries it is taken to be the cheaper one (inferred, not measured). */
    const bool minp = tkp_minp_on(in.min_p);
    if (m > 1024 && a.draws <= 32 && tkp_topp_on(in.p) && !minp &&
        ck_mass_tail(a, r, in, slab, m, n, sm)) /* min-p needs the sorted slab's weights */
        return;
    const uint32_t size = ck_sort_size(m);
    for (uint32_t i = m + t; i < max(size, 128u); i += CK_THREADS)
        slab[i] = 0; /* below every valid composite (and the rest of warp 0's 128 entries) */
    ck_sort_desc(slab, size);

    ck_finish<CK_THREADS>(a, r, in, slab, n, sm->mine, sm->wsum, &sm->cnt);
}

#endif

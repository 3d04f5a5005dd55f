/* cake_gpu.cu — cake on sm_90a: one thread-block cluster (1, 2, 4, 8 or 16 CTAs of 512 threads)
 * per row, the 11/11/10-bit radix select of cake.c with the per-CTA histograms reduced through
 * distributed shared memory, the exact top-k slab gathered into rank 0's shared memory, then
 * (fused, in rank 0) the sort, top-p on exact uint64 prefix sums, the kept mask and the
 * inverse-CDF draws. Every decision is the CPU's (same counts, same arithmetic from prob.h /
 * philox.h), so slab, kept set and samples match cake.c bit for bit.
 *
 * Per CTA (slice [lo, hi) of the row, contiguous, in rank order):
 *  0. zero the CTA's slice of the kept mask, a step's share at a time inside pass 1 (the stores
 *     overlap the loads; rank 0 writes the ones after the last cluster barrier, so the
 *     barriers order the two);
 *  1. sample: the first step of pass 1 (already in registers) histograms the top digit of its
 *     first max(4096, 64 k_eff) values (at most the whole step); the bucket holding the
 *     k_eff-th largest sampled key is a lower bound T of the row's pivot bucket P (the k-th
 *     largest of a subset never exceeds the k-th largest of the row, k <= k_eff);
 *  2. pass 1 over the whole slice (the next step's loads in flight while one is processed),
 *     compared as floats against the value of T's smallest key (no order key, no shared
 *     memory for the ~99 % of keys below it): the count of invalid keys, and every key whose
 *     top digit is >= T counted in the top-digit histogram and appended to a shared-memory
 *     candidate list (capacity CK_CAP, one atomic per warp); after 1, 2, 4, 8, ... steps T is
 *     raised to the bucket of the k_eff-th largest key read so far (same argument);
 *  3. cluster barrier; every CTA sums the buckets >= its own T (exact from P up, since T <= P)
 *     and bucket 0 over the cluster, and walks them: k, P, and G = #keys with top digit >= P;
 *  4a. G <= CK_GATHER (the usual case): every CTA sends its keys with top digit >= P to rank 0,
 *     which sorts the G composites; the slab is the first k (the top k of the row);
 *  4b. otherwise passes 2 and 3 of cake.c on the candidate list (or, where it overflowed, on
 *     the slice streamed again), and the keys above the pivot plus this CTA's share of the
 *     pivot ties (the ties of lower ranks come first: index order) go to rank 0;
 *  5. rank 0: sort, top-p, kept mask, draws; or (topp_launch=chained) rank 0 leaves the
 *     gathered entries in the workspace and cake_topp_kernel, chained by programmatic
 *     dependent launch, does step 5 with the same code. */
#include <cooperative_groups.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "cake_gpu.h"

namespace cg = cooperative_groups;

#define CK_THREADS 512
#define CK_WARPS (CK_THREADS / 32)
#define CK_BUCKETS 2048
#define CK_SLAB 1024
#define CK_GATHER 2048    /* entries rank 0 gathers and sorts (4 per thread in ck_sort_desc) */
#define CK_CAP 16384      /* candidate list entries per CTA */
#define CK_SAMPLE_PER_K 64 /* sampled keys per CTA: 2048 * clamp(ceil(64 k / 2048), 2, 4) */
#define CK_SAMPLE_MAX 4    /* (8192 keys at most: measured a little faster than 16384) */
#define CK_MIN_SLICE 2048 /* a cluster is not split finer than this many tokens per CTA */
#define CK_MIN_SLICE16 4096 /* ... and a 16-CTA (non-portable) cluster not finer than this */
#define CK_MAXC 16        /* largest cluster (16 needs the non-portable cluster size) */
#define CK_UNROLL 8       /* float4 loads in flight per thread in ck_stream and pass 1 */
#define CK_STEP (CK_UNROLL * 4 * CK_THREADS) /* tokens of one step of pass 1 (16384) */
#define CK_FULL 0xFFFFFFFFu

typedef unsigned long long u64;

struct ck_smem {
    uint32_t hist[2][CK_BUCKETS]; /* per-pass local histograms, read by the other CTAs */
    uint32_t tot[CK_BUCKETS];     /* the cluster-wide histogram of the current pass */
    u64 mine[CK_GATHER];          /* this CTA's entries for rank 0; rank 0 reuses it for incl */
    u64 slab[CK_GATHER];          /* rank 0: the gathered entries (the slab after the sort) */
    uint32_t cand_key[CK_CAP], cand_idx[CK_CAP];
    u64 wsum[CK_WARPS];
    uint32_t cand_n, mine_n, slab_n, slab_off, cnt;
    uint32_t bucket, above, tie_before, tie_mine;
    uint32_t heavy_n, heavy_low; /* rank 0's mass tail: its candidates, their lowest bucket + 1 */
};

struct ck_args {
    const float *logits;
    const int32_t *k;
    const float *p;
    uint8_t *kept;
    int64_t *samples;
    uint64_t seed, offset;
    int64_t vocab, stride;
    int32_t draws;
    uint32_t slice;
    int chained;     /* cake_topp_kernel does step 5 from ws_slab / ws_count */
    u64 *ws_slab;    /* chained: CK_GATHER gathered entries per row (unsorted) */
    uint2 *ws_count; /* chained: (m gathered, n slab entries) per row */
};

/* f(key, index, ok) over row[lo, hi): a scalar head up to 16-byte alignment, the float4 body
 * (CK_UNROLL loads in flight per thread), a scalar tail. Every loop is block-uniform, so f is
 * called by all 32 lanes of every warp together (warp collectives inside f are allowed); a
 * slot past the range calls f with ok = false and key 0. Order of visits is unspecified. */
template <typename F>
__device__ __forceinline__ void ck_stream(const float *__restrict__ row, uint32_t lo,
                                          uint32_t hi, F f)
{
    if (lo >= hi)
        return;
    const uint32_t t = threadIdx.x;
    const uint32_t mis = (uint32_t)(((16u - ((uintptr_t)(row + lo) & 15u)) & 15u) >> 2);
    const uint32_t body = min(hi, lo + mis);
    if (lo < body) { /* fewer than 4 tokens: one block-wide step */
        const uint32_t i = lo + t;
        const bool ok = i < body;
        f(ok ? tkp_order_key(row[i]) : 0u, i, ok);
    }
    const uint32_t nvec = (hi - body) >> 2;
    const float4 *__restrict__ v = reinterpret_cast<const float4 *>(row + body);
    for (uint32_t base = 0; base < nvec; base += CK_UNROLL * CK_THREADS) {
        float4 x[CK_UNROLL];
#pragma unroll
        for (int u = 0; u < CK_UNROLL; u++) {
            const uint32_t j = base + t + (uint32_t)u * CK_THREADS;
            x[u] = j < nvec ? __ldg(v + j) : make_float4(0.f, 0.f, 0.f, 0.f);
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
        f(ok ? tkp_order_key(row[i]) : 0u, i, ok);
    }
}

/* f(key, index, ok) over the CTA's keys that a pass needs: the shared-memory candidate list
 * when it holds them all (use_cand), else the slice row[lo, hi) streamed again. */
template <typename F>
__device__ __forceinline__ void ck_each_candidate(const ck_smem *sm, bool use_cand,
                                                  const float *__restrict__ row, uint32_t lo,
                                                  uint32_t hi, F f)
{
    if (use_cand) {
        const uint32_t n = sm->cand_n;
        for (uint32_t i = threadIdx.x; i < n; i += CK_THREADS)
            f(sm->cand_key[i], sm->cand_idx[i], true);
    } else {
        ck_stream(row, lo, hi, f);
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

/* ---- pass 1 ---- */

__device__ void ck_find_bucket(const uint32_t *h, uint32_t nb, uint32_t take, ck_smem *sm);

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

/* Load one block-wide step of the float4 body: x[u] = v[base + t + u * CK_THREADS] for
 * u < CK_UNROLL; a slot at or past nvec reads NaN (never a candidate, never sampled) and its 4
 * invalid counts are taken back from ninv in advance. */
__device__ __forceinline__ void ck_load(float4 (&x)[CK_UNROLL], const float4 *__restrict__ v,
                                        uint32_t nvec, uint32_t base, uint32_t &ninv)
{
    const float nan = __int_as_float(0x7FC00000);
#pragma unroll
    for (int u = 0; u < CK_UNROLL; u++) {
        const uint32_t j = base + threadIdx.x + (uint32_t)u * CK_THREADS;
        if (j < nvec) {
            x[u] = __ldg(v + j);
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
    if (__any_sync(CK_FULL, c != 0)) {
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
__device__ __forceinline__ void ck_pass1_one(const float *__restrict__ row, uint32_t first,
                                             uint32_t end, float fthr, uint32_t &ninv,
                                             uint32_t *hist, ck_smem *sm)
{
    const uint32_t i = first + threadIdx.x;
    const float x = i < end ? row[i] : __int_as_float(0x7FC00000);
    ninv += (uint32_t)(i < end && !(x >= -FLT_MAX));
    const uint32_t c = x >= fthr;
    if (__any_sync(CK_FULL, c != 0)) {
        uint32_t pos = tkp_warp_reserve(c, &sm->cand_n);
        if (c)
            ck_put_cand(sm, hist, x, i, pos);
    }
}

/* Pass 1 over row[lo, hi) with a bound that tightens as it goes; returns the final bound T
 * (block-uniform), a lower bound of the row's pivot bucket. With `mask`, mask[lo, hi) is
 * zeroed on the way, each step's bytes while the next step's loads are in flight.
 *
 * The float4 body is streamed in steps of CK_UNROLL * CK_THREADS vectors, the next step's
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
__device__ uint32_t ck_pass1(const float *__restrict__ row, uint32_t lo, uint32_t hi,
                             uint32_t keff, uint32_t *hist, ck_smem *sm, uint8_t *mask)
{
    uint32_t ninv = 0, T = 0;
    float fthr = tkp_key_floor(1u);
    if (lo < hi) {
        const uint32_t mis = (uint32_t)(((16u - ((uintptr_t)(row + lo) & 15u)) & 15u) >> 2);
        const uint32_t body = min(hi, lo + mis);
        const uint32_t nvec = (hi - body) >> 2;
        const float4 *__restrict__ v = reinterpret_cast<const float4 *>(row + body);
        const uint32_t step = CK_UNROLL * CK_THREADS;
        if (nvec > 0) {
            const uint32_t us =
                min((uint32_t)CK_SAMPLE_MAX,
                    max(2u, (CK_SAMPLE_PER_K * keff + 4 * CK_THREADS - 1) / (4 * CK_THREADS)));
            float4 x[CK_UNROLL], y[CK_UNROLL];
            ck_load(x, v, nvec, 0, ninv);
            uint32_t done = 0;
            for (uint32_t base = 0; base < nvec; base += step) { /* block-uniform */
                const bool more = nvec - base > step;
                if (more)
                    ck_load(y, v, nvec, base + step, ninv);
                { /* the step after it into L2: one 128-byte line per thread (measured: B = 1024
                   * 268 -> 260 us, V = 262144 k = 1000 B = 128 89 -> 86) */
                    const uint32_t pf = base + 2 * step + CK_UNROLL * threadIdx.x;
                    if (pf < nvec)
                        asm volatile("prefetch.L2 [%0];" ::"l"(v + pf)); /* generic addr. */
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
            ck_pass1_one(row, lo, body, fthr, ninv, hist, sm);
        const uint32_t tail = body + 4 * nvec;
        if (tail < hi)
            ck_pass1_one(row, tail, hi, fthr, ninv, hist, sm);
        if (mask) {
            ck_zero(mask, lo, body);
            ck_zero(mask, tail, hi);
        }
    }
    ninv = __reduce_add_sync(CK_FULL, ninv);
    if ((threadIdx.x & 31) == 0 && ninv)
        atomicAdd(&hist[0], ninv);
    return T;
}

/* ---- cluster-wide decisions ---- */

/* sm->tot[b] = the cluster's sum of h[b] for b = 0 and every b in [from, nb); 0 for the other
 * b. For each bucket all C remote loads are in flight together. */
__device__ __forceinline__ void ck_reduce(cg::cluster_group &cluster, uint32_t *h, uint32_t from,
                                          uint32_t nb, uint32_t C, ck_smem *sm)
{
    for (uint32_t b = threadIdx.x; b < nb; b += CK_THREADS) {
        uint32_t s = 0;
        if (b == 0 || b >= from) {
#pragma unroll
            for (uint32_t q = 0; q < CK_MAXC; q++)
                if (q < C)
                    s += cluster.map_shared_rank(h, q)[b];
        }
        sm->tot[b] = s;
    }
}

/* The bucket walk of cake_radix_select over h[0, nb): the bucket b with
 * above(b) < take <= above(b) + h[b], above(b) = sum of h over the buckets above b. Writes
 * sm->bucket (0xFFFFFFFF when the histogram holds fewer than `take` keys) and sm->above.
 * Called by every thread of the CTA; the result is visible to all on return. */
__device__ void ck_find_bucket(const uint32_t *h, uint32_t nb, uint32_t take, ck_smem *sm)
{
    const uint32_t t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const uint32_t bpt = nb / CK_THREADS; /* 4 or 2 consecutive buckets per thread */
    if (t == 0)
        sm->bucket = 0xFFFFFFFFu;
    uint32_t s = 0;
    for (uint32_t j = 0; j < bpt; j++)
        s += h[t * bpt + j];
    uint32_t x = s; /* inclusive suffix sum within the warp */
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        uint32_t y = __shfl_down_sync(CK_FULL, x, d);
        if (lane + d < 32)
            x += y;
    }
    if (lane == 0)
        sm->wsum[warp] = x;
    __syncthreads();
    uint32_t above = x - s;
    for (uint32_t w = warp + 1; w < CK_WARPS; w++)
        above += (uint32_t)sm->wsum[w];
    for (int j = (int)bpt - 1; j >= 0; j--) {
        const uint32_t b = t * bpt + (uint32_t)j, hb = h[b];
        if (above < take && take <= above + hb) {
            sm->bucket = b;
            sm->above = above;
        }
        above += hb;
    }
    __syncthreads();
}

/* Exclusive prefix sum of one value per thread over a CTA of NTH threads (wsum: NTH / 32
 * words of shared scratch); *total gets the sum. */
template <int NTH>
__device__ __forceinline__ u64 ck_scan_excl(u64 v, u64 *total, u64 *wsum)
{
    const uint32_t t = threadIdx.x, lane = t & 31, warp = t >> 5;
    u64 x = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        u64 y = __shfl_up_sync(CK_FULL, x, d);
        if (lane >= (uint32_t)d)
            x += y;
    }
    if (lane == 31)
        wsum[warp] = x;
    __syncthreads();
    u64 before = 0, all = 0;
    for (uint32_t w = 0; w < NTH / 32; w++) {
        before += w < warp ? wsum[w] : 0;
        all += wsum[w];
    }
    __syncthreads(); /* wsum is reused by the next call */
    *total = all;
    return before + x - v;
}

__device__ __forceinline__ void ck_push_mine(ck_smem *sm, uint32_t key, uint32_t idx)
{
    const uint32_t pos = atomicAdd(&sm->mine_n, 1u);
    if (pos < CK_GATHER) /* never false: a CTA sends at most max(k, G) <= CK_GATHER entries */
        sm->mine[pos] = ((u64)key << 32) | (uint32_t)~idx;
}

/* ---- rank 0's sort ---- */

/* Compare-exchange of the entries at positions p < q: the larger goes first iff desc. */
__device__ __forceinline__ void ck_cx(u64 &x, u64 &y, bool desc)
{
    const u64 hi = x > y ? x : y, lo = x > y ? y : x;
    x = desc ? hi : lo;
    y = desc ? lo : hi;
}

/* The stages of span `span` with strides s0, s0/2, ..., 1 (s0 < 128) on the 4 consecutive
 * entries 4t..4t+3 each thread holds in v: partners within the warp through shuffles, within
 * the thread in registers. Position p sits in a descending run iff (p & span) == 0; the lower
 * position of a pair takes the larger entry in a descending run. */
__device__ __forceinline__ void ck_sort_regs(u64 (&v)[4], uint32_t span, uint32_t s0)
{
    const uint32_t t = threadIdx.x;
    for (uint32_t s = s0; s >= 4; s >>= 1) { /* partner thread t ^ (s / 4), same e */
        const bool lower = (t & (s >> 2)) == 0, desc = ((4 * t) & span) == 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const u64 y = __shfl_xor_sync(CK_FULL, v[e], s >> 2);
            const bool keep_hi = lower == desc;
            v[e] = keep_hi ? (v[e] > y ? v[e] : y) : (v[e] > y ? y : v[e]);
        }
    }
    if (s0 >= 2) { /* span >= 4: one direction for the whole thread */
        const bool desc = ((4 * t) & span) == 0;
        ck_cx(v[0], v[2], desc);
        ck_cx(v[1], v[3], desc);
    }
    /* s = 1: for span == 2 the pairs (0,1) and (2,3) run in opposite directions */
    ck_cx(v[0], v[1], ((4 * t) & span) == 0);
    ck_cx(v[2], v[3], ((4 * t + 2) & span) == 0);
}

/* The spans 2, 4, ..., min(size, 128) of the network on the 4 entries per lane of v: a warp's
 * 128 consecutive entries sorted in runs of min(size, 128). */
__device__ __forceinline__ void ck_sort_warp(u64 (&v)[4], uint32_t size)
{
    for (uint32_t span = 2; span <= size && span <= 128; span <<= 1)
        ck_sort_regs(v, span, span >> 1);
}

/* The size ck_sort_desc sorts m entries over: the next power of two, at least 2. */
__device__ __forceinline__ uint32_t ck_sort_size(uint32_t m)
{
    uint32_t size = 2;
    while (size < m)
        size <<= 1;
    return size;
}

/* Sort a[0, size) descending (size a power of two, 2 <= size <= CK_GATHER; a has CK_GATHER
 * entries). A bitonic network: the strides below 128 run in registers (each thread holds 4
 * consecutive entries; a warp holds 128), the larger strides in shared memory. Entries at or
 * past `size` (in the only warp that holds some when size < 128) never meet an entry below
 * size, so their contents do not matter. Called by every thread of the CTA. */
__device__ void ck_sort_desc(u64 *a, uint32_t size)
{
    const uint32_t t = threadIdx.x;
    const bool holds = 128 * (t >> 5) < size; /* warp-uniform */
    u64 v[4];
    __syncthreads();
    if (holds) {
#pragma unroll
        for (int e = 0; e < 4; e++)
            v[e] = a[4 * t + e];
        ck_sort_warp(v, size);
#pragma unroll
        for (int e = 0; e < 4; e++)
            a[4 * t + e] = v[e];
    }
    __syncthreads();
    for (uint32_t span = 256; span <= size; span <<= 1) {
        for (uint32_t s = span >> 1; s >= 128; s >>= 1) {
            for (uint32_t i = t; i < size / 2; i += CK_THREADS) {
                const uint32_t p = ((i & ~(s - 1)) << 1) | (i & (s - 1)), q = p + s;
                u64 x = a[p], y = a[q];
                ck_cx(x, y, (p & span) == 0);
                a[p] = x;
                a[q] = y;
            }
            __syncthreads();
        }
        if (holds) {
#pragma unroll
            for (int e = 0; e < 4; e++)
                v[e] = a[4 * t + e];
            ck_sort_regs(v, span, 64);
#pragma unroll
            for (int e = 0; e < 4; e++)
                a[4 * t + e] = v[e];
        }
        __syncthreads();
    }
}

/* ---- top-p, kept mask and draws on the sorted slab ---- */

/* The fixed-point weight of slab entry c (a composite) in a row whose largest value is top. */
__device__ __forceinline__ u64 ck_weight_of(u64 c, float top)
{
    return tkp_weight(tkp_key_value((uint32_t)(c >> 32)), top);
}

/* The kept mask's ones and the draws of row r from its sorted slab and the inclusive prefix
 * incl of its weights, by threads t, t + nth, ...: draw d is the kept entry j with
 * incl[j-1] <= u < incl[j], u its Philox value scaled to the kept mass (cake.c's search). */
__device__ __forceinline__ void ck_mark_and_draw(const ck_args &a, int64_t r, const u64 *slab,
                                                 const u64 *incl, uint32_t kept, uint32_t t,
                                                 uint32_t nth)
{
    if (a.kept) {
        uint8_t *mrow = a.kept + r * a.vocab;
        for (uint32_t j = t; j < kept; j += nth)
            mrow[(uint32_t)~(uint32_t)slab[j]] = 1;
    }
    if (a.samples) {
        int64_t *out = a.samples + r * (int64_t)a.draws;
        const uint64_t kept_total = incl[kept - 1];
        for (int32_t dr = (int32_t)t; dr < a.draws; dr += (int32_t)nth) {
            const uint64_t u =
                tkp_scale_u64(tkp_philox_u64(a.seed, (uint64_t)r, a.offset, (uint32_t)dr),
                              kept_total);
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

/* Row r's top-p (fraction p), kept-mask ones and draws, by a CTA of NTH threads (2 NTH >= n):
 * slab holds the n slab entries sorted descending; incl (n words), wsum (NTH / 32) and *cnt
 * (zero) are shared scratch. The arithmetic of cake.c: exact uint64 prefix sums of tkp_weight,
 * tkp_topp_target, and per draw the binary search of its Philox value. */
template <int NTH>
__device__ void ck_finish(const ck_args &a, int64_t r, float p, const u64 *slab, uint32_t n,
                          u64 *incl, u64 *wsum, uint32_t *cnt)
{
    const uint32_t t = threadIdx.x;
    /* Inclusive fixed-point prefix of the slab: thread t owns entries 2t and 2t+1. */
    const float top = tkp_key_value((uint32_t)(slab[0] >> 32));
    const uint32_t j0 = 2 * t, j1 = 2 * t + 1;
    const u64 w0 = j0 < n ? ck_weight_of(slab[j0], top) : 0;
    const u64 w1 = j1 < n ? ck_weight_of(slab[j1], top) : 0;
    u64 total;
    const u64 before = ck_scan_excl<NTH>(w0 + w1, &total, wsum);
    if (j0 < n)
        incl[j0] = before + w0;
    if (j1 < n)
        incl[j1] = before + w0 + w1;
    __syncthreads();
    const uint64_t target = tkp_topp_target(p, incl[n - 1]);
    /* kept = 1 + #{j in [1, n): incl[j-1] < target}; incl is non-decreasing, so this is the
     * CPU's walk. */
    uint32_t c = (j0 >= 1 && j0 < n && incl[j0 - 1] < target) +
                 (j1 < n && incl[j1 - 1] < target);
    if (c)
        atomicAdd(cnt, c);
    __syncthreads();
    const uint32_t kept = 1 + *cnt;
    ck_mark_and_draw(a, r, slab, incl, kept, t, NTH);
}

/* Step 5 when rank 0 gathered at most 128 entries (k <= 128 on the usual rows) and the row
 * asks for at most 32 draws: warp 0 alone, no block barrier. The bitonic network of
 * ck_sort_desc on the 4 entries per lane it holds in registers, the weights' inclusive prefix by
 * a warp scan, the kept count by a warp sum; the sorted slab and incl go to shared memory for
 * the draws' searches. The same integers as ck_finish, hence the same mask and draws. `total`:
 * the slab's mass when the m entries are only its first ones (ck_mass_tail), 0 when they are
 * the whole slab (then it is their sum). */
__device__ void ck_finish_warp(const ck_args &a, int64_t r, float p, u64 *slab, uint32_t m,
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
    const float top = tkp_key_value((uint32_t)(__shfl_sync(CK_FULL, v[0], 0) >> 32));
    u64 w[4], sum = 0;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const uint32_t j = 4 * lane + e;
        w[e] = j < n ? ck_weight_of(v[e], top) : 0;
        sum += w[e];
    }
    u64 x = sum; /* the lane's inclusive prefix */
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const u64 y = __shfl_up_sync(CK_FULL, x, d);
        if (lane >= (uint32_t)d)
            x += y;
    }
    const uint64_t target = tkp_topp_target(p, total ? total : __shfl_sync(CK_FULL, x, 31));
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
    const uint32_t kept = 1 + __reduce_add_sync(CK_FULL, c);
    __syncwarp();
    ck_mark_and_draw(a, r, slab, incl, kept, lane, 32);
}

/* The n-th largest of the m distinct composites e[0, m) (1 <= n <= m): a radix select over
 * the 64 bits in digits of 11, 11, 10, 11, 11 and 10 bits (the key, then ~index), histograms
 * in sm->tot, stopping as soon as the bucket holding it is taken whole. Returns the smallest
 * composite c with exactly n entries >= c. Called by every thread of rank 0. */
__device__ uint64_t ck_select_cut(const u64 *e, uint32_t m, uint32_t n, ck_smem *sm)
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
__device__ bool ck_mass_tail(const ck_args &a, int64_t r, float p, u64 *slab, uint32_t m,
                             uint32_t n, ck_smem *sm)
{
    const uint32_t t = threadIdx.x;
    const u64 cut = n < m ? ck_select_cut(slab, m, n, sm) : 0;
    u64 top = 0;
    for (uint32_t i = t; i < m; i += CK_THREADS)
        top = slab[i] > top ? slab[i] : top;
    top = __reduce_max_sync(CK_FULL, (uint32_t)(top >> 32)); /* the key is enough for top */
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
    if ((t & 31) == 0)
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
    /* Thread t owns buckets 4t .. 4t+3: suffix masses from the block's prefix scan. */
    u64 own[4], sum = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        own[j] = mass[4 * t + j];
        sum += own[j];
    }
    u64 total;
    const u64 before = ck_scan_excl<CK_THREADS>(sum, &total, sm->wsum);
    const uint64_t target = tkp_topp_target(p, total);
    u64 suffix = total - before - sum; /* the mass of the buckets above this thread's */
    for (int j = 3; j >= 0; j--) {
        suffix += own[j];
        if (sm->tot[4 * t + j] > 0 && suffix >= target)
            atomicMax(&sm->heavy_low, 4 * t + (uint32_t)j + 1);
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
        ck_finish_warp(a, r, p, sm->mine, h, h, slab, total);
    return true;
}

/* A row without a valid token: its draws are -1 (its mask stays zero). */
template <int NTH>
__device__ __forceinline__ void ck_no_draws(const ck_args &a, int64_t r)
{
    if (a.samples)
        for (int32_t dr = (int32_t)threadIdx.x; dr < a.draws; dr += NTH)
            a.samples[r * (int64_t)a.draws + dr] = -1;
}

/* ---- the kernel ---- */

__global__ void __launch_bounds__(CK_THREADS, 1) cake_kernel(const ck_args a)
{
    tkp_allow_dependents(); /* cake_topp_kernel (chained) may launch; it waits for this one */
    extern __shared__ __align__(16) unsigned char ck_raw[];
    ck_smem *sm = reinterpret_cast<ck_smem *>(ck_raw);
    cg::cluster_group cluster = cg::this_cluster();
    const uint32_t C = cluster.num_blocks(), rank = cluster.block_rank();
    const uint32_t t = threadIdx.x;
    const int64_t r = (int64_t)(blockIdx.x / C);
    const uint32_t V = (uint32_t)a.vocab;
    const uint32_t lo = min(V, rank * a.slice), hi = min(V, lo + a.slice);
    const float *__restrict__ row = a.logits + r * a.stride;
    const int32_t kin = a.k[r];
    uint32_t keff = tkp_topk_on(kin, a.vocab) ? (uint32_t)kin : V;
    if (keff > CK_SLAB) /* refused by supports(); clamped so that nothing overflows */
        keff = CK_SLAB;

    for (uint32_t b = t; b < CK_BUCKETS; b += CK_THREADS)
        sm->hist[0][b] = sm->hist[1][b] = 0;
    if (t == 0) {
        sm->cand_n = sm->mine_n = sm->slab_n = sm->cnt = 0;
        sm->tie_before = sm->tie_mine = 0;
    }
    __syncthreads();

    /* 1-2. pass 1 (its first step gives the sampled bound T, tightened as it goes): the
     * top-digit histogram of the slice, exact on the buckets >= T (the only ones the bucket
     * walk can stop in: every CTA's T is at most the row's pivot bucket, so the cluster sums
     * are exact from the pivot bucket up) and on bucket 0 (the invalid keys), and every key
     * whose top digit is >= T in the candidate list; the slice's kept mask zeroed on the way. */
    const uint32_t low_digit =
        ck_pass1(row, lo, hi, keff, sm->hist[0], sm, a.kept ? a.kept + r * (int64_t)V : nullptr);

    /* 3. The first digit on the cluster-wide counts. Every CTA's histogram is complete (and
     * every CTA has started, rank 0's counters are initialised) before anyone reads it. Only
     * the buckets >= this CTA's T and bucket 0 are summed: the walk stops in the pivot bucket
     * P >= T after reading the buckets above it (exact), and every bucket b < P fails the
     * walk's test however it is counted (above(b) >= above(P) + tot[P] >= take), so every
     * CTA finds the same P, above and tot[P]. */
    cluster.sync();
    ck_reduce(cluster, sm->hist[0], low_digit, CK_BUCKETS, C, sm);
    __syncthreads();
    const uint32_t valid = V - sm->tot[0]; /* bucket 0 holds exactly the invalid keys */
    const uint32_t k = min(keff, valid);
    uint32_t pivot = 0, gathered = 0;
    if (k > 0) { /* uniform over the cluster: every CTA has the same tot[0] */
        ck_find_bucket(sm->tot, CK_BUCKETS, k, sm);
        pivot = sm->bucket;
        gathered = sm->above + sm->tot[pivot]; /* keys with top digit >= P, >= k */
    }
    /* T <= P always holds (see the sample); the test only guards the candidate list. */
    const bool use_cand = sm->cand_n <= CK_CAP && low_digit <= pivot;

    if (k > 0 && gathered <= CK_GATHER) {
        /* 4a. The top k of the row are among its `gathered` keys with top digit >= P: send
         * them all (composites key << 32 | ~index, distinct), rank 0 sorts them. */
        auto push = [&](uint32_t key, uint32_t i, bool ok) {
            if (ok && (key >> 21) >= pivot)
                ck_push_mine(sm, key, i);
        };
        ck_each_candidate(sm, use_cand, row, lo, hi, push);
    } else if (k > 0) {
        /* 4b. The radix select of cake.c, pass by pass, on the cluster-wide counts; the first
         * digit's walk is done (sm->bucket, sm->above). */
        uint32_t prefix = 0, mask = 0, take = k;
        for (int d = 0; d < 3; d++) { /* digits (shift, bits): (21, 11), (10, 11), (0, 10) */
            const int shift = d == 0 ? 21 : d == 1 ? 10 : 0;
            const uint32_t nb = d < 2 ? 2048u : 1024u, dmask = nb - 1;
            uint32_t *h = sm->hist[d & 1];
            if (d > 0) { /* passes 2 and 3: keys matching the prefix found so far */
                for (uint32_t b = t; b < CK_BUCKETS; b += CK_THREADS)
                    h[b] = 0;
                __syncthreads();
                auto count = [&](uint32_t key, uint32_t, bool ok) {
                    if (ok && (key & mask) == prefix)
                        atomicAdd(&h[(key >> shift) & dmask], 1u);
                };
                ck_each_candidate(sm, use_cand, row, lo, hi, count);
                /* The histogram read two passes ago is overwritten only after this barrier,
                 * which every reader of it passed after its reads. */
                cluster.sync();
                ck_reduce(cluster, h, 0, nb, C, sm);
                __syncthreads();
                ck_find_bucket(sm->tot, nb, take, sm);
            }
            const uint32_t bucket = sm->bucket, above = sm->above;
            if (t < 32) { /* ties of this digit in the CTAs before this one (index order) */
                const uint32_t before = __reduce_add_sync(
                    CK_FULL, t < rank ? cluster.map_shared_rank(h, t)[bucket] : 0u);
                if (t == 0) {
                    sm->tie_before = before;
                    sm->tie_mine = h[bucket];
                }
            }
            prefix |= bucket << shift;
            mask |= dmask << shift;
            take -= above;
            if (sm->tot[bucket] == take)
                break;
        }
        __syncthreads(); /* tie_before / tie_mine */

        /* Collect: keys above the pivot, and this CTA's share of the ties */
        const uint32_t tb = sm->tie_before, tm = sm->tie_mine;
        const uint32_t need = take > tb ? min(take - tb, tm) : 0;
        const int ties_all = need == tm;
        auto collect = [&](uint32_t key, uint32_t i, bool ok) {
            const uint32_t high = key & mask;
            if (ok && (high > prefix || (ties_all && high == prefix)))
                ck_push_mine(sm, key, i);
        };
        ck_each_candidate(sm, use_cand, row, lo, hi, collect);
        if (!ties_all) { /* the first `need` ties of the slice, in index order (uniform) */
            uint32_t running = 0;
            for (uint32_t base = lo; base < hi && running < need; base += 4 * CK_THREADS) {
                uint32_t keys[4], c = 0;
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const uint32_t i = base + 4 * t + e;
                    keys[e] = i < hi ? tkp_order_key(row[i]) : 0;
                    c += i < hi && (keys[e] & mask) == prefix;
                }
                u64 total;
                uint32_t rnk = running + (uint32_t)ck_scan_excl<CK_THREADS>(c, &total, sm->wsum);
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const uint32_t i = base + 4 * t + e;
                    if (i < hi && (keys[e] & mask) == prefix) {
                        if (rnk < need)
                            ck_push_mine(sm, keys[e], i);
                        rnk++;
                    }
                }
                running += (uint32_t)total;
            }
        }
    }
    if (k > 0) { /* this CTA's entries into rank 0's slab array */
        __syncthreads();
        if (t == 0)
            sm->slab_off = atomicAdd(cluster.map_shared_rank(&sm->slab_n, 0), sm->mine_n);
        __syncthreads();
        u64 *dst = cluster.map_shared_rank(sm->slab, 0);
        const uint32_t off = sm->slab_off, n = min(sm->mine_n, (uint32_t)CK_GATHER);
        for (uint32_t i = t; i < n; i += CK_THREADS)
            if (off + i < CK_GATHER)
                dst[off + i] = sm->mine[i];
    }
    /* Rank 0's slab is complete, every kept-mask zero is written, and no CTA reads another's
     * shared memory after this point (so the others may exit). */
    cluster.sync();
    if (rank != 0)
        return;

    /* 5. Rank 0: sort (the slab is the first n entries), top-p, kept mask, samples. m is k
     * on path 4b and `gathered` (>= k) on path 4a. */
    const uint32_t m = min(sm->slab_n, (uint32_t)CK_GATHER), n = min(m, k);
    if (a.chained) { /* 5'. hand the unsorted entries to cake_topp_kernel */
        u64 *dst = a.ws_slab + r * CK_GATHER;
        for (uint32_t i = t; i < m; i += CK_THREADS)
            dst[i] = sm->slab[i];
        if (t == 0)
            a.ws_count[r] = make_uint2(m, n);
        return;
    }
    if (n == 0) {
        ck_no_draws<CK_THREADS>(a, r);
        return;
    }
    const float p = a.p[r];
    u64 *slab = sm->slab;
    if (m <= 128 && a.draws <= 32) {
        if (t < 32)
            ck_finish_warp(a, r, p, slab, m, n, sm->mine, 0);
        return;
    }
    /* Measured (H200 trace, 1764 entries): the mass tail 9.4 us against 13 us for sorting 2048
     * and finishing; taken for every m > 128, it made flat rows (k = 50, B = 1, V = 128256,
     * fewer than 1024 entries) 15.8 -> 18.8 us. The sort's cost grows as m log^2 m, so below
     * 1024 entries it is taken to be the cheaper one (inferred, not measured). */
    if (m > 1024 && a.draws <= 32 && tkp_topp_on(p) && ck_mass_tail(a, r, p, slab, m, n, sm))
        return;
    const uint32_t size = ck_sort_size(m);
    for (uint32_t i = m + t; i < max(size, 128u); i += CK_THREADS)
        slab[i] = 0; /* below every valid composite (and the rest of warp 0's 128 entries) */
    ck_sort_desc(slab, size);

    ck_finish<CK_THREADS>(a, r, p, slab, n, sm->mine, sm->wsum, &sm->cnt);
}

/* The chained launch (option topp_launch=chained): after cake_kernel, one CTA of CK_THREADS
 * per row does rank 0's step 5 (sort, top-p, mask, draws) on the m gathered entries that rank
 * 0 left in the workspace. Measured slower than the fused launch at every k (README "GPU"). */
__global__ void __launch_bounds__(CK_THREADS, 1) cake_topp_kernel(const ck_args a)
{
    __shared__ u64 slab[CK_GATHER], incl[CK_GATHER], wsum[CK_WARPS];
    __shared__ uint32_t cnt;
    const int64_t r = blockIdx.x;
    const uint32_t t = threadIdx.x;
    tkp_wait_prerequisite();
    const uint2 mn = a.ws_count[r];
    if (mn.y == 0) {
        ck_no_draws<CK_THREADS>(a, r);
        return;
    }
    if (t == 0)
        cnt = 0;
    const uint32_t size = ck_sort_size(mn.x);
    const u64 *src = a.ws_slab + r * CK_GATHER;
    for (uint32_t i = t; i < max(size, 128u); i += CK_THREADS)
        slab[i] = i < mn.x ? src[i] : 0; /* 0: below every composite */
    ck_sort_desc(slab, size);
    ck_finish<CK_THREADS>(a, r, a.p[r], slab, mn.y, incl, wsum, &cnt);
}

/* ---- host side ---- */

static size_t ck_smem_bytes(void) { return sizeof(ck_smem); }

/* Tokens per CTA when a row of `vocab` is split over c CTAs (a multiple of 16). */
static int64_t ck_slice_of(int64_t vocab, int c) { return tkp_slice_of(vocab, c, 16); }

static int ck_cluster_index(int c)
{
    return c == 1 ? 0 : c == 2 ? 1 : c == 4 ? 2 : c == 8 ? 3 : 4;
}

extern "C" int cake_gpu_plan(int64_t batch, int64_t vocab, int topp_launch,
                             struct cake_gpu_plan *plan, struct tkp_error *err)
{
    memset(plan, 0, sizeof *plan);
    int dev = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&plan->sm_count, cudaDevAttrMultiProcessorCount, dev),
                 err);
    int major = 0;
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), err);
    if (major < 9) {
        tkp_error_set(err, "cake: the GPU version needs thread-block clusters (sm_90 or newer)");
        return TKP_EUNSUPPORTED;
    }
    plan->smem_bytes = ck_smem_bytes();
    TKP_CUDA_TRY(cudaFuncSetAttribute(cake_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)plan->smem_bytes),
                 err);
    /* Clusters of 16 CTAs are non-portable (H100 / H200 allow them); without the attribute
     * the capacity query below reports 0 for 16 and the plan never picks it. */
    if (cudaFuncSetAttribute(cake_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
        cudaSuccess)
        (void)cudaGetLastError();
    /* Measured capacity: co-resident clusters of each size on this device. */
    for (int c = 1; c <= CK_MAXC; c <<= 1) {
        int n = tkp_active_clusters(cake_kernel, c, CK_THREADS, plan->smem_bytes);
        if (c == 1 && n < 1) { /* no cluster query: count plain co-resident CTAs */
            int per_sm = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cake_kernel, CK_THREADS,
                                                              plan->smem_bytes) == cudaSuccess)
                n = per_sm * plan->sm_count;
            else
                (void)cudaGetLastError();
        }
        plan->max_clusters[ck_cluster_index(c)] = n;
    }
    if (plan->max_clusters[0] < 1) {
        tkp_error_set(err, "cake: the kernel (%zu bytes of shared memory per CTA) cannot run "
                           "on this device", plan->smem_bytes);
        return TKP_EUNSUPPORTED;
    }
    /* Cost model (measured on the H200, README "Cluster choice"). A size c is allowed when
     * the whole batch runs in one wave of c-CTA clusters, every CTA gets at least CK_MIN_SLICE
     * tokens, and, for c >= 4, the batch takes at most half the SMs (bigger clusters filling
     * the device lost to smaller ones at every measured shape). Among the allowed sizes (1
     * always is): the smallest whose slice fits one step of pass 1 (CK_STEP tokens, read once
     * into registers: more CTAs only add cluster barriers and DSMEM sums), else the largest
     * (the slice streams; more CTAs share the row). */
    int allowed[5] = { 1, 0, 0, 0, 0 };
    for (int c = 2; c <= CK_MAXC; c <<= 1)
        allowed[ck_cluster_index(c)] =
            plan->max_clusters[ck_cluster_index(c)] >= batch &&
            vocab >= (int64_t)c * (c > 8 ? CK_MIN_SLICE16 : CK_MIN_SLICE) &&
            tkp_cluster_leaves_half(c, batch, plan->sm_count);
    plan->cluster = 0;
    for (int c = 1; c <= CK_MAXC && !plan->cluster; c <<= 1)
        if (allowed[ck_cluster_index(c)] && ck_slice_of(vocab, c) <= CK_STEP)
            plan->cluster = c;
    for (int c = CK_MAXC; c >= 1 && !plan->cluster; c >>= 1)
        if (allowed[ck_cluster_index(c)])
            plan->cluster = c;
    /* TKP_CAKE_CLUSTER=1|2|4|8|16 forces a size (experiments, tests) when the device holds
     * at least one such cluster; another value is refused. */
    int forced = 0;
    const int rc = tkp_env_cluster("TKP_CAKE_CLUSTER", &forced, err);
    if (rc != TKP_OK)
        return rc;
    if (forced && plan->max_clusters[ck_cluster_index(forced)] >= 1)
        plan->cluster = forced;
    plan->slice = (uint32_t)ck_slice_of(vocab, plan->cluster);
    /* Top-p launch: fused unless asked (measured on the H200 at k = 50, 256 and 1000: the
     * chained launch is slower everywhere; README "GPU") */
    plan->chained = topp_launch == CAKE_TOPP_CHAINED;
    plan->workspace_bytes =
        plan->chained ? (size_t)batch * (CK_GATHER * sizeof(u64) + sizeof(uint2)) : 0;
    if (plan->chained) {
        /* the sort's shared memory is static; this only checks that the kernel loads */
        cudaFuncAttributes fa;
        TKP_CUDA_TRY(cudaFuncGetAttributes(&fa, cake_topp_kernel), err);
    }
    return TKP_OK;
}

extern "C" int cake_gpu_run(const struct cake_gpu_plan *plan, int64_t batch, int64_t vocab,
                            int64_t stride, int32_t draws, const struct tkp_io *io,
                            void *workspace, void *stream, struct tkp_error *err)
{
    if (batch == 0)
        return TKP_OK;
    ck_args a;
    a.logits = io->logits;
    a.k = io->k;
    a.p = io->p;
    a.kept = io->kept;
    a.samples = io->samples;
    a.seed = io->seed;
    a.offset = io->offset;
    a.vocab = vocab;
    a.stride = stride;
    a.draws = io->samples ? draws : 0;
    a.slice = plan->slice;
    a.chained = plan->chained;
    a.ws_slab = plan->chained ? (u64 *)workspace : nullptr;
    a.ws_count = plan->chained
                     ? (uint2 *)((char *)workspace + (size_t)batch * CK_GATHER * sizeof(u64))
                     : nullptr;

    TKP_CUDA_TRY(tkp_launch_cluster(cake_kernel, (int)plan->cluster,
                                    dim3((unsigned)(batch * plan->cluster)), dim3(CK_THREADS),
                                    plan->smem_bytes, (cudaStream_t)stream, a),
                 err);
    TKP_LAUNCH_CHECK(err);
    if (plan->chained)
        TKP_CUDA_TRY(tkp_launch_dependent(cake_topp_kernel, dim3((unsigned)batch),
                                          dim3(CK_THREADS), 0, (cudaStream_t)stream, a),
                     err);
    return TKP_OK;
}

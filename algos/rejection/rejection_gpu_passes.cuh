/* rejection_gpu_passes.cuh — the passes of the CUDA rejection sampler that prepare_row and the
 * draws are made of: the counting pass before two pivots (tally2), the radix-select digit and
 * the bucket of the k-th key (select_digit, select_bucket), the small first candidate set in
 * shared memory (pick_small, tally2_small, keep_listed, store_small) and pass 1's
 * float-compare scan (scan_fast). README.md ("GPU", "First candidate sets on the GPU") says
 * what each computes and why it equals the CPU's. */
#ifndef REJECTION_GPU_PASSES_CUH
#define REJECTION_GPU_PASSES_CUH

#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "rejection_gpu_row.cuh"
#include "rejection_gpu_types.cuh"
#include "rejection_rules.h"

namespace rej_gpu {

template <class R>
__device__ void tally2(R &row, float max, uint64_t a, uint64_t b, Tally &ta, Tally &tb)
{
    const uint64_t bound = a > b ? a : b;
    u64 counts = 0, ma = 0, mb = 0; /* counts: count before a | count before b << 32 */
    row.each([&](float v, int i, bool) {
        const uint64_t pos = rej_pos(tkp_order_key(v), i);
        if (pos < bound) {
            const bool ia = pos < a, ib = pos < b;
            const uint64_t w = row.weight(v, i, max);
            ma += ia ? w : 0;
            mb += ib ? w : 0;
            counts += (u64)ia | ((u64)ib << 32);
        }
    });
    row.sum3(counts, ma, mb);
    ta.count = (int64_t)(counts & 0xFFFFFFFFu);
    ta.mass = ma;
    tb.count = (int64_t)(counts >> 32);
    tb.mass = mb;
}

template <class R> __device__ __forceinline__ Tally tally1(R &row, float max, uint64_t pivot)
{
    Tally t, same;
    tally2(row, max, pivot, pivot, t, same);
    return t;
}

/* Radix select, one digit (rej_kth_key's loop over a histogram): warp 0 finds the digit d
 * with (count of larger digits) < rank <= (count of digits >= d) and the rank left inside
 * it. Lane l owns digits 255 - 8l down to 248 - 8l. With `mass_above`, it also sums the
 * weights of the tokens in the digits above d: the histogram of the last digit holds tokens
 * that share every other bit, so the tokens of one bin have one value and one weight. Called
 * after a barrier that made the histogram visible; ends with a barrier. */
template <int THREADS>
__device__ void select_digit(Shared<THREADS> &sh, const unsigned *hist, unsigned rank,
                             bool mass_above, uint32_t prefix, float max)
{
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        unsigned h[8], s = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            h[j] = hist[255 - 8 * lane - j];
            s += h[j];
        }
        unsigned run = (unsigned)tkp_warp_incl_scan((u64)s) - s;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (run < rank && run + h[j] >= rank) {
                sh.digit = 255 - 8 * lane - j;
                sh.rank = rank - run;
                sh.ties = h[j];
            }
            run += h[j];
        }
        if (mass_above) {
            __syncwarp();
            const unsigned d = sh.digit;
            u64 m = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const unsigned bin = 255 - 8 * lane - j;
                if (bin > d && h[j])
                    m += (u64)h[j] * tkp_weight(tkp_key_value(prefix | bin), max);
            }
            m = tkp_warp_sum(m);
            if (lane == 0)
                sh.level_mass = m;
        }
    }
    __syncthreads();
}

/* The bucket (top kBucketBits key bits) holding the key of rank `rank` (1 = largest) in a
 * bucket histogram: sh.digit = the bucket, sh.rank = the rank left inside it, sh.ties = its
 * count, sh.gabove = the count of the buckets above. Thread t owns buckets
 * kBuckets - 1 - per * t downwards. Called after a barrier that made the histogram visible;
 * ends with a barrier. */
template <int THREADS>
__device__ void select_bucket(Shared<THREADS> &sh, const unsigned *hist, unsigned rank)
{
    constexpr int per = kBuckets / THREADS;
    unsigned h[per], s = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        h[j] = hist[kBuckets - 1 - per * (int)threadIdx.x - j];
        s += h[j];
    }
    unsigned run = (unsigned)tkp_block_excl_scan<Shared<THREADS>::kWarps>((u64)s, sh.scan[0]);
#pragma unroll
    for (int j = 0; j < per; j++) {
        if (run < rank && run + h[j] >= rank) {
            sh.digit = kBuckets - 1 - per * threadIdx.x - j;
            sh.rank = rank - run;
            sh.ties = h[j];
            sh.gabove = run;
        }
        run += h[j];
    }
    __syncthreads();
}

/* Inverse CDF over B(lo) restricted to the first candidate set kept in shared memory (index
 * order; it holds B(lo), so the crossing token is the one pick() finds). Thread t owns the
 * entries per * t .. per * t + per - 1. */
template <class R>
__device__ void pick_small(const R &row, uint64_t lo, uint64_t mass, uint64_t u, int &c,
                           uint64_t &pc)
{
    constexpr int THREADS = R::kThreads;
    auto &sh = row.sh;
    const int vocab = row.vocab;
    constexpr int per = kSmall / THREADS;
    const int n = sh.nsmall, j0 = per * (int)threadIdx.x;
    const uint64_t t = tkp_scale_u64(u, mass);
    if (threadIdx.x == 0) { /* the CPU's answer when nothing crosses (impossible: t < mass) */
        sh.cand = vocab - 1;
        sh.cand_pos = rej_pos(tkp_order_key(row.last()), vocab - 1);
    }
    uint64_t w[per], s = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        w[j] = j0 + j < n && sh.s_pos[j0 + j] < lo ? sh.s_w[j0 + j] : 0;
        s += w[j];
    }
    /* the scan's barriers order thread 0's default */
    uint64_t before = tkp_block_excl_scan<Shared<THREADS>::kWarps>((u64)s, sh.scan[0]);
#pragma unroll
    for (int j = 0; j < per; j++) {
        if (before <= t && before + w[j] > t) {
            const uint64_t pos = sh.s_pos[j0 + j];
            sh.cand = (int)(uint32_t)pos;
            sh.cand_pos = pos;
        }
        before += w[j];
    }
    __syncthreads();
    c = sh.cand;
    pc = sh.cand_pos;
    __syncthreads(); /* everyone has read sh.cand before the next pick's thread 0 rewrites it */
}

/* tally2 over the first candidate set in shared memory (every pivot used holds only its
 * tokens before it). */
template <int THREADS>
__device__ void tally2_small(Shared<THREADS> &sh, uint64_t a, uint64_t b, Tally &ta, Tally &tb)
{
    constexpr int per = kSmall / THREADS;
    const int n = sh.nsmall, j0 = per * (int)threadIdx.x;
    u64 counts = 0, ma = 0, mb = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        if (j0 + j < n) {
            const uint64_t pos = sh.s_pos[j0 + j], w = sh.s_w[j0 + j];
            const bool ia = pos < a, ib = pos < b;
            ma += ia ? w : 0;
            mb += ib ? w : 0;
            counts += (u64)ia | ((u64)ib << 32);
        }
    }
    u64 v[3] = { counts, ma, mb };
    tkp_block_sums<Shared<THREADS>::kWarps>(v, sh.red);
    ta.count = (int64_t)(v[0] & 0xFFFFFFFFu);
    ta.mass = v[1];
    tb.count = (int64_t)(v[0] >> 32);
    tb.mass = v[2];
}

/* The tokens of keys / idxs (n of them) whose key is >= `least`, each handed to
 * put(slot, key, index) with its slot among them (0, 1, ...), chunk by chunk of kGather
 * entries: a block scan gives each thread its entries' slots. A chunk is read whole (the scan's
 * barrier) before any of it is put, so put may write over the list itself at slots no later
 * than the entries' own. The trip count is the same in every thread. Ends with a barrier. */
template <int THREADS, class Put>
__device__ void compact_at_least(Shared<THREADS> &sh, const uint32_t *keys,
                                 const uint32_t *idxs, int n, uint32_t least, Put put)
{
    constexpr int per = kGather / THREADS;
    unsigned out = 0;
    for (int c0 = 0; c0 < n; c0 += kGather) {
        const int j0 = c0 + per * (int)threadIdx.x;
        uint32_t key[per], idx[per];
        unsigned c = 0;
#pragma unroll
        for (int j = 0; j < per; j++) {
            const bool in = j0 + j < n;
            key[j] = in ? keys[j0 + j] : 0;
            idx[j] = in ? idxs[j0 + j] : 0;
            c += in && key[j] >= least;
        }
        u64 total;
        unsigned at = out + (unsigned)tkp_block_excl_scan_total<Shared<THREADS>::kWarps>(
                                (u64)c, sh.scan[0], total);
#pragma unroll
        for (int j = 0; j < per; j++)
            if (j0 + j < n && key[j] >= least)
                put(at++, key[j], idx[j]);
        out += (unsigned)total;
        __syncthreads(); /* the chunk is put before the next scan rewrites sh.scan[0] */
    }
}

/* Keep the listed tokens (row.list_key() / list_idx(), sh.gcount <= row.list_room() of them)
 * whose key is >= `least`, `kept` of them (the caller's count: the histogram's, or the radix
 * select's; at most kGather), in sh.g_key / sh.g_idx (compact_at_least; in place when the
 * list is sh.g_key: an entry only moves down). Called after a barrier that made the list
 * visible; ends with a barrier. */
template <class R> __device__ void keep_listed(const R &row, uint32_t least, unsigned kept)
{
    auto &sh = row.sh;
    const int n = (int)sh.gcount;
    __syncthreads(); /* every thread has read n before thread 0 rewrites it, below */
    compact_at_least(sh, row.list_key(), row.list_idx(), n, least,
                     [&](unsigned at, uint32_t key, uint32_t idx) {
                         if (at < (unsigned)kGather) {
                             sh.g_key[at] = key;
                             sh.g_idx[at] = idx;
                         }
                     });
    if (threadIdx.x == 0)
        sh.gcount = kept;
    __syncthreads();
}

/* store_small's order for a few gathered tokens (n <= kCountedGather): each kept token's rank
 * among the kept by counting those of a smaller index, its position and weight written there.
 * No barrier (store_small's ends it). */
template <int THREADS>
__device__ __forceinline__ void rank_small_by_counting(Shared<THREADS> &sh, int n,
                                                       uint32_t least, float max)
{
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const uint32_t ki = sh.g_key[i];
        if (ki < least)
            continue;
        const uint32_t ii = sh.g_idx[i];
        int rank = 0;
        for (int j = 0; j < n; j++)
            rank += sh.g_key[j] >= least && sh.g_idx[j] < ii;
        sh.s_pos[rank] = rej_pos(ki, ii); /* rank < n0 <= kSmall */
        sh.s_w[rank] = tkp_weight(tkp_key_value(ki), max);
    }
}

/* store_small's order for more gathered tokens: the kept ones compacted into s_pos as
 * (index << 32 | key) (compact_at_least), sorted ascending by a bitonic network over the next
 * power of two (the indices are distinct, so the order is the unique index order; padding
 * sorts last), then rewritten in place as position and weight. No barrier at the end. */
template <int THREADS>
__device__ void sort_small(Shared<THREADS> &sh, int n, uint32_t least, int n0, float max)
{
    compact_at_least(sh, sh.g_key, sh.g_idx, n, least,
                     [&](unsigned at, uint32_t key, uint32_t idx) {
                         if (at < (unsigned)kSmall)
                             sh.s_pos[at] = (u64)idx << 32 | key;
                     });
    int size = 1;
    while (size < n0)
        size <<= 1;
    for (int j = n0 + (int)threadIdx.x; j < size; j += THREADS)
        sh.s_pos[j] = ~0ull;
    __syncthreads();
    for (int span = 2; span <= size; span <<= 1)
        for (int stride = span >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < size / 2; i += THREADS) {
                const int lo = (i / stride) * 2 * stride + i % stride, hi = lo + stride;
                const u64 a = sh.s_pos[lo], b = sh.s_pos[hi];
                if ((a > b) == ((lo & span) == 0)) {
                    sh.s_pos[lo] = b;
                    sh.s_pos[hi] = a;
                }
            }
            __syncthreads();
        }
    for (int j = threadIdx.x; j < n0; j += THREADS) {
        const u64 e = sh.s_pos[j];
        const uint32_t key = (uint32_t)e;
        sh.s_pos[j] = rej_pos(key, (int64_t)(e >> 32));
        sh.s_w[j] = tkp_weight(tkp_key_value(key), max);
    }
}

/* The first candidate set from the listed tokens (sh.g_key / sh.g_idx, n of them): the n0 with
 * a key >= least, stored in shared memory in index order with their positions and weights when
 * n0 <= kSmall (rank_small_by_counting up to kCountedGather tokens, else sort_small; ranking
 * by counting past that was most of a row's time at k = 600-1000: README.md, "The k-th key
 * from pass 1's list"); sh.nsmall says so (0: not stored). Ends with a barrier. */
template <int THREADS>
__device__ void store_small(Shared<THREADS> &sh, int n, uint32_t least, int n0, float max)
{
    if (n0 <= kSmall && n <= kCountedGather)
        rank_small_by_counting(sh, n, least, max);
    else if (n0 <= kSmall)
        sort_small(sh, n, least, n0, max);
    if (threadIdx.x == 0)
        sh.nsmall = n0 <= kSmall ? n0 : 0;
    __syncthreads();
}

/* Pass 1 of one CTA over local elements [from, n) with float compares instead of order keys
 * (the tokens at or above a bucket bound are a few per cent): the number of valid tokens and
 * the largest order key into vcount / kmax; the tokens >= fthr (tkp_key_floor of the bound;
 * NaN for none) counted in sh.hist by bucket and appended to pass 1's list (row.list_key,
 * one atomic per warp, sh.gcount counting past row.list_room() on overflow). Per four values: their
 * maximum (kept in the row's maximum, and one bit of `hot` when it reaches fthr) and their sum;
 * only the quads of a hot bit are compared value by value, counted and appended, in the same
 * order as a compare of every value (a quad whose maximum is below fthr, or NaN, holds none).
 * The valid count is exact (a sum >= -FLT_MAX proves its terms valid: NaN and -inf propagate;
 * otherwise they are counted one by one). */
template <class R>
__device__ __forceinline__ void scan_fast(const R &row, float fthr, int from, uint32_t &vcount,
                                          uint32_t &kmax)
{
    static_assert(!R::kCluster, "a cluster's slices go through the per-token scan");
    constexpr int kUnroll = R::kFastUnroll;
    static_assert(kUnroll <= 32, "one bit a quad");
    auto &sh = row.sh;
    float vmax = -INFINITY;
    /* read once: with the big list (R::kBig) its room and place are run-time values, which
     * the stores below would otherwise make the compiler load again for every listed token */
    uint32_t *const list_key = row.list_key(), *const list_idx = row.list_idx();
    const unsigned list_room = row.list_room();
    row.template each_tile<kUnroll>([&](const float (&v)[kUnroll][4], int l0) {
        float sum = 0.0f;
        uint32_t hot = 0;
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            sum += (v[u][0] + v[u][1]) + (v[u][2] + v[u][3]);
            const float m = fmaxf(fmaxf(v[u][0], v[u][1]), fmaxf(v[u][2], v[u][3]));
            vmax = fmaxf(vmax, m);
            hot |= (uint32_t)(m >= fthr) << u;
        }
        if (sum >= -FLT_MAX) {
            vcount += 4 * kUnroll;
        } else {
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    vcount += v[u][j] >= -FLT_MAX;
        }
        if (__any_sync(kTkpFullWarp, hot != 0)) {
            unsigned c = 0;
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (hot & (1u << u))
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        c += v[u][j] >= fthr;
            unsigned slot = tkp_warp_reserve(c, &sh.gcount);
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                if (!(hot & (1u << u)))
                    continue;
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (v[u][j] >= fthr) {
                        const uint32_t key = tkp_order_key(v[u][j]);
                        atomicAdd(&sh.hist[key >> kBucketShift], 1u);
                        if (slot < list_room) {
                            list_key[slot] = key;
                            list_idx[slot] = (uint32_t)(l0 + R::tile_off(u) + j);
                        }
                        slot++;
                    }
            }
        }
    }, from);
    const uint32_t kv = tkp_order_key(vmax); /* NaN (nothing valid seen) and -inf: 0 */
    kmax = kv > kmax ? kv : kmax;
}

} // namespace rej_gpu

#endif

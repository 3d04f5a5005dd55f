/* rejection_gpu_prepare.cuh — the preparation of a row (rej_prepare) in the CUDA rejection
 * sampler: pass 1 (row max, valid count, the bucket histogram and its token list), min-p
 * folded into k from the gathered tokens or a count over the row (tkp_minp_fold_k's k', with
 * no kernel of its own), the k-th key from the gathered tokens or by radix select, the row's
 * mass and top-p's start at the mass floor; prepare_row leaves the row's limits, target and
 * first candidate set in shared memory for the draws. README.md ("GPU", "Passes", "min-p on
 * the GPU", "First candidate sets on the GPU"). */
#ifndef REJECTION_GPU_PREPARE_CUH
#define REJECTION_GPU_PREPARE_CUH

#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_minp.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/mass_floor.h"
#include "../common/prob.h"
#include "rejection_gpu_passes.cuh"
#include "rejection_gpu_row.cuh"
#include "rejection_gpu_types.cuh"
#include "rejection_rules.h"

namespace rej_gpu {

/* Top-p alone (rej_from_mass_floor): the first candidate set starts at the mass floor
 * (rej_start_at_mass_floor), from the row's mass per bin (each CTA's sh.mass_hist, complete);
 * when it is small, it goes to shared memory: from the tokens pass 2 listed (every token within
 * the bins, one CTA per row) when the list did not overflow, else from a gathering pass.
 * `total` is the row's mass, `maxkey` its largest key. */
template <class R>
__device__ void start_at_mass_floor(R &row, float p, u64 total, float max, uint32_t maxkey,
                                    uint64_t &start, uint64_t &start_mass)
{
    auto &sh = row.sh;
    row.mass_hist_total();
    const int b = tkp_mass_floor_bin(sh.mass_all, tkp_topp_target(p, total));
    if (b >= TKP_MASS_BINS)
        return; /* every thread read the same bins: the same branch */
    const uint32_t least = tkp_mass_floor_key(b, max, tkp_order_key(-FLT_MAX), maxkey);
    u64 mass = 0;
    for (int j = 0; j <= b; j++)
        mass += sh.mass_all[j];
    start = rej_pos(least, 0xFFFFFFFFu);
    start_mass = mass;
    const bool listed = !R::kCluster && sh.gcount <= (unsigned)kGather;
    __syncthreads(); /* every thread has read sh.gcount before the gathering pass zeroes it */
    if (!listed)
        row.gather_from_key(least);
    const int n = (int)sh.gcount;
    u64 c[3] = { 0, 0, 0 }; /* the listed keys >= least; two unused sums */
    for (int i = threadIdx.x; i < n && n <= kGather; i += R::kThreads)
        c[0] += sh.g_key[i] >= least;
    tkp_block_sums<Shared<R::kThreads>::kWarps>(c, sh.red); /* ends with a barrier */
    store_small(sh, n <= kGather ? n : 0, least, n <= kGather ? (int)c[0] : kSmall + 1, max);
}

/* Pass 1 (rej_prepare's scan of the row) into this thread's valid-token count `vcount` and
 * largest order key `kmax`: when the row may start at a k-th key (`may_select`: top-k on, or
 * min-p on, whose k' may turn top-k on), also the histogram of the top kBucketBits key bits in
 * sh.hist (cleared, as sh.nsmall, by the caller before a barrier); without top-k (k' unknown
 * before min-p's count) every bucket. With top-k only buckets at or above `floor` are counted:
 * after the first chunk of the row, floor is the bucket of that chunk's k-th key, a lower bound
 * of the row's k-th key's bucket (so every bucket select_bucket or the radix select reads above
 * it stays exact); warps with no token at or above it skip the histogram. (One CTA per row
 * only: a slice of a cluster is short, and its histogram is summed with the others'.) Returns
 * whether the tokens counted in the histogram (bucket >= floor) were also listed in pass 1's
 * list (row.list_key / list_idx: the big list or sh.g_key; sh.gcount of them, counting past
 * row.list_room() on overflow), so that the usual case needs no gathering pass. */
template <class R>
__device__ __forceinline__ bool pass1_scan(R &row, int32_t k, bool may_select, uint32_t &vcount,
                                           uint32_t &kmax)
{
    constexpr int THREADS = R::kThreads;
    auto &sh = row.sh;
    const int vocab = row.vocab;
    unsigned floor = 0;
    bool listing = false;
    auto scan = [&](float v, int i, bool in_row) {
        const uint32_t key = tkp_order_key(v);
        vcount += key != 0;
        kmax = key > kmax ? key : kmax;
        if (may_select) {
            const bool counted = in_row && (key >> kBucketShift) >= floor;
            if constexpr (R::kCluster) { /* measured: faster than hist_add on short slices */
                if (counted)
                    atomicAdd(&sh.hist[key >> kBucketShift], 1u);
            } else if (__any_sync(kTkpFullWarp, counted)) {
                tkp_warp_hist_add(sh.hist, counted ? key >> kBucketShift : (unsigned)kBuckets,
                                  kBuckets);
                if (listing)
                    append_token(key, i, counted, row.list_key(), row.list_idx(), &sh.gcount,
                                 row.list_room());
            }
        }
    };
    /* The first chunk, whose k-th key sets the floor: 16384 tokens in either kernel (a
     * multiple of each one's step). At 8192 (one step of the 512-thread kernel) the floor of
     * a flat N(0, 1) row at k = 50 often falls one 11-bit bucket lower (2.0 instead of 2.5)
     * and the list overflows: 42% of V = 128256 rows at 8192, none at 16384 (a simulation of
     * the rule on the CPU). With the big list, rej_list_chunk's 1-4 times that for a larger k,
     * so that the floor stays near the row's k-th key. */
    static_assert(kFirstChunk % (kReduceUnroll * 4 * THREADS) == 0,
                  "each_tile stops at whole steps only: the chunk must be a number of them");
    const int chunk =
        R::kBig ? rej_list_chunk(k, vocab, kFirstChunk) : kFirstChunk;
    if constexpr (R::kCluster) {
        row.each(scan);
    } else if (may_select && k > 0 && vocab > chunk && k <= chunk) { /* top-k on */
        row.each(scan, 0, chunk);
        if (threadIdx.x == 0)
            sh.gcount = 0;
        __syncthreads();
        select_bucket(sh, sh.hist, (unsigned)k); /* the chunk holds >= k tokens */
        floor = sh.digit;
        /* The chunk again (just read: from the cache), listing its tokens >= floor; the rest
         * of the row is listed as it is counted. */
        row.each([&](float v, int i, bool in_row) {
            const uint32_t key = tkp_order_key(v);
            append_token(key, i, in_row && (key >> kBucketShift) >= floor, row.list_key(),
                         row.list_idx(), &sh.gcount, row.list_room());
        }, 0, chunk);
        listing = true;
        if (floor > 0)
            scan_fast(row, tkp_key_floor(floor << kBucketShift), chunk, vcount, kmax);
        else /* the chunk's k-th key is invalid: the bound cannot be a float compare */
            row.each(scan, chunk);
    } else if (!may_select) {
        scan_fast(row, __int_as_float(0x7FC00000), 0, vcount, kmax); /* NaN: no candidate */
    } else {
        row.each(scan);
    }
    return listing;
}

/* What prepare_row finds for the first candidate set: its start pivot and exact mass, and
 * the mass the top-p target is taken of (the top-k set's, or the row's). */
struct RowStart {
    uint64_t start, start_mass, set_mass;
};

/* Every token of bucket `bucket` and above into sh.g_key / sh.g_idx (sh.gabove + sh.ties of
 * them, select_bucket's counts of that bucket, <= kGather): from pass 1's list (the big list,
 * or sh.g_key itself) when it holds every token of its floor and above (`from_list`; the floor
 * is at most that bucket), else by one gathering pass. */
template <class R>
__device__ __forceinline__ void list_bucket(R &row, unsigned bucket, bool from_list)
{
    if (from_list)
        keep_listed(row, bucket << kBucketShift, row.sh.gabove + row.sh.ties);
    else
        row.gather(bucket);
}

/* This CTA's count of min-p's passing tokens (tkp_minp_counts, the test of tkp_minp_fold_k)
 * over its tokens, in every thread. */
template <class R> __device__ __forceinline__ u64 minp_count_local(const R &row, float max,
                                                                   uint64_t t)
{
    u64 c[3] = { 0, 0, 0 }; /* the count; two unused sums */
    row.each([&](float v, int, bool in_row) { c[0] += in_row && tkp_minp_counts(v, max, t); });
    tkp_block_sums<Shared<R::kThreads>::kWarps>(c, row.sh.red); /* ends with a barrier */
    return c[0];
}

/* The same, out of line: a cluster CTA's pass over its slice (inlined, it made the cluster
 * kernel spill more; out of line, the one-CTA kernels spill). */
template <class R>
__device__ __noinline__ u64 minp_count_slice(const R row, float max, uint64_t t)
{
    return minp_count_local(row, max, t);
}

/* min-p's count over the whole row (docs/SEMANTICS.md, "min-p"): its valid tokens whose
 * fixed weight reaches t, in every thread. One CTA per row reads the row again from global
 * memory; a cluster's CTAs count their slices in shared memory and sum the counts over the
 * cluster. */
template <class R> __device__ __forceinline__ u64 minp_count_row(R &row, float max, uint64_t t)
{
    if constexpr (!R::kCluster) {
        return minp_count_local(row, max, t);
    } else {
        const u64 slice = minp_count_slice(row, max, t); /* every thread: it has barriers */
        u64 n = threadIdx.x == 0 ? slice : 0, unused1 = 0, unused2 = 0; /* summed once a CTA */
        row.sum3(n, unused1, unused2);
        return n;
    }
}

/* min-p folded into k from the listed tokens G (sh.gcount <= kGather of them: every token of
 * bucket `bucket` and above, so every valid token of value > y, y the largest float below the
 * bucket; -inf when the bucket's first key is at most key(-FLT_MAX), i.e. G is every valid
 * token): tkp_minp_fold_part of G's count of passing tokens, k' or -1 when only the count over
 * the row settles it. Every CTA of a cluster holds the same list: no cluster exchange. Out
 * of line: once a row, and inlined it cost the kernels registers. */
template <int THREADS>
__device__ __noinline__ int32_t minp_fold_list(Shared<THREADS> &sh, int32_t k, int vocab,
                                               unsigned bucket, float max, uint64_t t)
{
    const int n = (int)sh.gcount;
    u64 c[3] = { 0, 0, 0 }; /* G's passing tokens; two unused sums */
    for (int i = threadIdx.x; i < n; i += THREADS)
        c[0] += tkp_minp_counts(tkp_key_value(sh.g_key[i]), max, t);
    tkp_block_sums<Shared<THREADS>::kWarps>(c, sh.red); /* ends with a barrier */
    const uint32_t edge = bucket << kBucketShift;
    const float y = edge <= tkp_order_key(-FLT_MAX) ? -INFINITY : tkp_key_value(edge - 1u);
    return tkp_minp_fold_part(k, (int64_t)c[0], vocab, y, max, t);
}

/* min-p folded into k (docs/SEMANTICS.md, "min-p"): tkp_minp_fold_k's k' of the row, whose
 * largest value is max. From the listed tokens of the k-th key's bucket and above
 * (minp_fold_list) unless `count` (no such list: top-k off, k >= #valid, a crowded bucket; or
 * TKP_MINP_FORCE_COUNT), else, or when the list does not settle it, from the count over the
 * row (minp_count_row). */
template <class R>
__device__ __forceinline__ int32_t fold_minp(R &row, int32_t k, float min_p, bool count,
                                             float max)
{
    const uint64_t t = tkp_minp_threshold(min_p);
    const int32_t kf =
        count ? -1 : minp_fold_list(row.sh, k, row.vocab, row.sh.digit, max, t);
    return kf >= 0 ? kf : tkp_minp_fold(k, (int64_t)minp_count_row(row, max, t), row.vocab);
}

/* A crowded bucket: fold the bucket histogram `hist` (visible to the block) into the first
 * 8-bit digit's, in its first 256 entries. Ends with a barrier. */
template <int THREADS> __device__ __forceinline__ void fold_buckets_to_first_digit(unsigned *hist)
{
    unsigned s8 = 0;
    if (threadIdx.x < 256)
        for (int j = 0; j < (1 << (kBucketBits - 8)); j++)
            s8 += hist[(threadIdx.x << (kBucketBits - 8)) + j];
    __syncthreads();
    if (threadIdx.x < 256)
        hist[threadIdx.x] = s8;
    __syncthreads();
}

/* The 256 bins of one digit's histogram cleared, before any thread adds to them. */
template <class S> __device__ __forceinline__ void clear_digit_bins(S &sh)
{
    if (threadIdx.x < 256)
        sh.hist[threadIdx.x] = 0;
    __syncthreads();
}

/* Radix select digit `pass` > 1 (rej_kth_key's loop): the histogram of the digit at `shift`
 * of the tokens whose key matches `prefix` under `mask`, summed over the row; on the last
 * digit the mass of the tokens above K in their top 24 bits is added to mass_high and summed
 * over the row too. Returns the row's histogram. */
template <class R>
__device__ __forceinline__ unsigned *radix_digit_histogram(R &row, int shift, bool last,
                                                           uint32_t prefix, uint32_t mask,
                                                           float max, u64 &mass_high)
{
    auto &sh = row.sh;
    clear_digit_bins(sh);
    row.each([&](float v, int, bool in_row) {
        const uint32_t key = tkp_order_key(v);
        const unsigned digit = in_row && (key & mask) == prefix ? (key >> shift) & 0xFFu : 256u;
        tkp_warp_hist_add(sh.hist, digit, 256u); /* 256: not a token of the prefix */
        if (last && (key >> 8) > (prefix >> 8))
            mass_high += tkp_weight(v, max);
    });
    if (last) {
        u64 unused1 = 0, unused2 = 0;
        row.sum3(mass_high, unused1, unused2);
    } else {
        __syncthreads();
    }
    return row.hist_total(256, last);
}

/* radix_digit_histogram over a list of keys instead of the row: `keys`, sh.gcount of them,
 * every token at or above a bucket that is at most the k-th key's (pass 1's list, whole; or the
 * gathered tokens of that bucket and above). Every token of the prefix in a bin the walk reads
 * (K's bin and above) is listed; a token of the prefix below that bucket lies in a lower bin
 * than K's, or (digit 1) in K's own bin, whose count then only grows past the rank the walk
 * stops at: neither select_digit's walk nor its mass above K changes. (README.md, "The k-th
 * key from pass 1's list".) */
template <class R>
__device__ __forceinline__ unsigned *radix_digit_histogram_list(R &row, const uint32_t *keys,
                                                                int shift, bool last,
                                                                uint32_t prefix, uint32_t mask,
                                                                float max, u64 &mass_high)
{
    auto &sh = row.sh;
    clear_digit_bins(sh);
    const int n = (int)sh.gcount;
    for (int i = threadIdx.x; i < n; i += R::kThreads) {
        const uint32_t key = keys[i];
        if ((key & mask) == prefix)
            atomicAdd(&sh.hist[(key >> shift) & 0xFFu], 1u);
        if (last && (key >> 8) > (prefix >> 8))
            mass_high += tkp_weight(tkp_key_value(key), max);
    }
    u64 c[3] = { mass_high, 0, 0 }; /* the mass; two unused sums */
    tkp_block_sums<Shared<R::kThreads>::kWarps>(c, sh.red); /* ends with a barrier */
    mass_high = c[0];
    return sh.hist;
}

/* Radix select of the k-th key K (rej_kth_key), then the mass above K: tokens above K in their
 * top 24 bits are summed during the last histogram pass, the others (same top 24 bits, larger
 * last digit) from the last histogram. The digits' histograms come from the row, or, with
 * `keys` (radix_digit_histogram_list: pass 1's whole list, or the gathered tokens in
 * sh.g_key), from the list; digit 1's from `hist` when given (the bucket histogram folded).
 * (Cluster: sh.hist, the local histogram, is free again once hist_total has returned.) */
template <class R>
__device__ __forceinline__ void start_at_radix_kth(R &row, unsigned *hist, const uint32_t *keys,
                                                   int64_t k_limit, float max, bool count_passes,
                                                   RowStart &rs)
{
    auto &sh = row.sh;
    uint32_t prefix = 0, mask = 0;
    unsigned rank = (unsigned)k_limit;
    u64 mass_high = 0;
    for (int pass = 1; pass <= REJ_DIGIT_PASSES; pass++) {
        const int shift = 32 - pass * REJ_DIGIT_BITS;
        const bool last = pass == REJ_DIGIT_PASSES;
        if ((pass > 1 || !hist) && keys)
            hist = radix_digit_histogram_list(row, keys, shift, last, prefix, mask, max,
                                              mass_high);
        else if (pass > 1)
            hist = radix_digit_histogram(row, shift, last, prefix, mask, max, mass_high);
        select_digit(sh, hist, rank, last, prefix, max); /* ends with a barrier */
        const unsigned digit = sh.digit;
        rank = sh.rank;
        prefix |= digit << shift;
        mask |= 0xFFu << shift;
    }
    const uint64_t ties = sh.ties, mass_above = mass_high + sh.level_mass;
    const int64_t above = k_limit - (int64_t)rank;
    const uint64_t kth_weight = tkp_weight(tkp_key_value(prefix), max);
    rs.set_mass = mass_above + (uint64_t)(k_limit - above) * kth_weight;
    rs.start = rej_pos(prefix, 0xFFFFFFFFu);
    rs.start_mass = mass_above + ties * kth_weight;
    if (threadIdx.x == 0 && count_passes) /* counted once per row, as on the CPU */
        sh.stat[2] += REJ_DIGIT_PASSES;
    /* A first candidate set that fits goes to shared memory: out of the list (the big list's
     * copied to sh.g_key first), or, from the row, by one gathering pass (V = 128256, k = 1000,
     * p = 0.9: B = 16 232.0 -> 171.2 us, B = 64 261.4 -> 173.0), not on a cluster's rows,
     * where the set's ranking (by counting then) cost more than the rounds over the slices it
     * replaced (B = 1 60.3 -> 82.7 us, B = 4 56.8 -> 81.5; README) */
    const int n0 = (int)(above + (int64_t)ties);
    if (keys && n0 <= kSmall) {
        if (keys != sh.g_key)
            keep_listed(row, prefix, (unsigned)n0);
        store_small(sh, (int)sh.gcount, prefix, n0, max);
    } else if (!keys && !R::kCluster && n0 <= kSmall) {
        row.gather_from_key(prefix);
        store_small(sh, (int)sh.gcount, prefix, n0, max);
    }
}

/* start_at_radix_kth's results for a few gathered tokens (sh.gcount <= kCountedGather, in
 * sh.g_key / sh.g_idx, made visible by a barrier): the k-th key K by counting (the key with
 * fewer than k larger ones and at least k at or above it: every thread that writes sh.kth writes
 * the same key), then the counts above and at K and the mass above K, the same integers as
 * the radix select's (a key of a lower bucket is below K either way); then store_small. */
template <class R>
__device__ __forceinline__ void start_by_counting(R &row, int64_t k_limit, float max,
                                                  bool count_passes, RowStart &rs)
{
    auto &sh = row.sh;
    const int n = (int)sh.gcount;
    for (int i = threadIdx.x; i < n; i += R::kThreads) {
        const uint32_t ki = sh.g_key[i];
        int gt = 0, eq = 0; /* n <= kCountedGather */
        for (int j = 0; j < n; j++) {
            const uint32_t kj = sh.g_key[j];
            gt += kj > ki;
            eq += kj == ki;
        }
        if (gt < k_limit && gt + eq >= k_limit)
            sh.kth = ki;
    }
    __syncthreads();
    const uint32_t kth = sh.kth;
    u64 c[3] = { 0, 0, 0 }; /* keys above K, keys equal to K, mass above K */
    for (int i = threadIdx.x; i < n; i += R::kThreads) {
        const uint32_t ki = sh.g_key[i];
        c[0] += ki > kth;
        c[1] += ki == kth;
        c[2] += ki > kth ? tkp_weight(tkp_key_value(ki), max) : 0;
    }
    tkp_block_sums<Shared<R::kThreads>::kWarps>(c, sh.red); /* ends with a barrier */
    const uint64_t kth_weight = tkp_weight(tkp_key_value(kth), max);
    rs.set_mass = c[2] + (uint64_t)(k_limit - (int64_t)c[0]) * kth_weight;
    rs.start = rej_pos(kth, 0xFFFFFFFFu);
    rs.start_mass = c[2] + c[1] * kth_weight;
    if (threadIdx.x == 0 && count_passes) /* the CPU's radix passes, once per row */
        sh.stat[2] += REJ_DIGIT_PASSES;
    store_small(sh, n, kth, (int)(c[0] + c[1]), max);
}

/* The usual top-k case (sh.gabove + sh.ties <= kGather, select_bucket's results of the row's
 * histogram ready): the tokens of the k-th key's bucket and above in shared memory, the rest
 * done there. `listed`: they are there already, maybe with tokens of lower buckets (the list
 * prepare_row took at the bucket of k before min-p folded it into a smaller k'); else
 * list_bucket lists them. The radix select over them (start_at_radix_kth) and store_small read
 * a superset the same way: a key of a lower bucket is below every key of the k-th key's
 * bucket. */
template <class R>
__device__ __forceinline__ void start_at_gathered_kth(R &row, int64_t k_limit, float max,
                                                      bool listed, bool from_list,
                                                      bool count_passes, RowStart &rs)
{
    auto &sh = row.sh;
    if (!listed)
        list_bucket(row, sh.digit, from_list);
    if (sh.gcount <= (unsigned)kCountedGather)
        start_by_counting(row, k_limit, max, count_passes, rs);
    else
        start_at_radix_kth(row, nullptr, sh.g_key, k_limit, max, count_passes, rs);
}

/* The first candidate set of a row that does not start at its k-th key: pass 2 sums the
 * row's fixed-point weights (its mass: top-p's target is taken of it); top-p alone also bins
 * the mass by distance from max (and, one CTA per row, lists the tokens of those bins) for
 * its first candidate set at the mass floor (start_at_mass_floor). */
template <class R>
__device__ __forceinline__ void start_at_row_mass(R &row, float p, int64_t k_limit, float max,
                                                  u64 maxkey, RowStart &rs)
{
    constexpr int THREADS = R::kThreads;
    auto &sh = row.sh;
    const bool from_floor = rej_from_mass_floor(p, k_limit);
    if (from_floor) {
        __syncthreads(); /* every thread has read sh.gcount (from_list) */
        for (int j = threadIdx.x; j < TKP_MASS_BINS; j += THREADS)
            sh.mass_hist[j] = 0;
        if (threadIdx.x == 0)
            sh.gcount = 0;
        __syncthreads();
    }
    u64 total = 0, unused1 = 0, unused2 = 0;
    if (from_floor) {
        row.each([&](float v, int i, bool in_row) {
            const uint64_t w = tkp_weight(v, max);
            total += w;
            const int bin = in_row ? tkp_mass_bin(v, max) : TKP_MASS_BINS;
            if (bin < TKP_MASS_BINS)
                tkp_shared_add_u64(&sh.mass_hist[bin], w);
            if constexpr (!R::kCluster)
                append_token(tkp_order_key(v), i, bin < TKP_MASS_BINS, sh.g_key, sh.g_idx,
                             &sh.gcount);
        });
    } else {
        row.each([&](float v, int, bool) { total += tkp_weight(v, max); });
    }
    row.sum3(total, unused1, unused2);
    rs.start_mass = rs.set_mass = total;
    if (from_floor)
        start_at_mass_floor(row, p, total, max, (uint32_t)maxkey, rs.start, rs.start_mass);
}

/* The first candidate set of a row with a valid token, prepared with k (min-p folded in)
 * into rs: from the k-th key's bucket (the gathered tokens, or the radix select over the row
 * when the bucket is crowded), else from the row's mass. `hist`: the row's bucket histogram
 * when the row may start at a k-th key (select_bucket runs here also for a row whose fold
 * already selected the bucket of the unfolded k: one block scan, cheaper in registers than a
 * flag that skips it); `listed`: the tokens of a bucket at or below the k-th key's, and above,
 * are in shared memory (prepare_row's list at the bucket of the k before min-p's fold).
 * Returns the row's top-k limit. (The radix select stays after the join of the two tests:
 * nested in the crowded branch instead, nvcc 13.0 emits a second copy of its digit loop.) */
template <class R>
__device__ __forceinline__ int64_t start_row(R &row, unsigned *hist, int32_t k, bool listed,
                                             float p, float max, u64 maxkey,
                                             int64_t valid, bool from_list, bool count_passes,
                                             RowStart &rs)
{
    auto &sh = row.sh;
    const int64_t k_limit = rej_k_limit(k, row.vocab, valid);
    rs.start = REJ_END;
    bool gathered = false;
    if (rej_starts_at_kth(k_limit, valid)) {
        select_bucket(sh, hist, (unsigned)k_limit);
        if (sh.gabove + sh.ties <= (unsigned)kGather) {
            start_at_gathered_kth(row, k_limit, max, listed, from_list, count_passes, rs);
            gathered = true;
        } else {
            fold_buckets_to_first_digit<R::kThreads>(hist);
        }
    }
    if (gathered) {
        /* K, total_S and the first candidate set come from the gathered tokens */
    } else if (rej_starts_at_kth(k_limit, valid)) { /* a crowded bucket */
        start_at_radix_kth(row, hist, !R::kCluster && from_list ? row.list_key() : nullptr,
                           k_limit, max, count_passes, rs);
    } else {
        start_at_row_mass(row, p, k_limit, max, maxkey, rs);
    }
    return k_limit;
}

/* Prepare the row in shared memory (rej_prepare): the row max, the number of valid tokens,
 * min-p folded into k (`min_p`, read by the caller from device memory; k' =
 * tkp_minp_fold_k's), the top-k limit, the first candidate set and its mass, the top-p
 * target. Returns the number of valid tokens and the row max (0 / -inf for a row without a
 * valid token). `force_count`: every min-p row counts its passing tokens over the whole row
 * (TKP_MINP_FORCE_COUNT, tkp_minp_force_count). `count_passes`: this CTA counts the CPU's
 * radix passes (once per row). */
template <class R>
__device__ __forceinline__ u64 prepare_row(R &row, int32_t k, float p, float min_p,
                                           bool force_count, float &max, bool count_passes)
{
    constexpr int THREADS = R::kThreads;
    auto &sh = row.sh;
    const int vocab = row.vocab;
    const bool minp = tkp_minp_on(min_p);
    for (int i = threadIdx.x; i < kBuckets; i += THREADS)
        sh.hist[i] = 0;
    if (threadIdx.x == 0)
        sh.nsmall = 0;
    __syncthreads();
    uint32_t vcount = 0, kmax = 0;
    const bool listing = pass1_scan(row, k, tkp_topk_on(k, vocab) || minp, vcount, kmax);
    u64 valid = vcount, maxkey = kmax;
    row.sum_max(valid, maxkey); /* ends with a (cluster) barrier: the histogram is complete */
    /* Whether the list holds every token of its floor and above, read by every thread here:
     * barriers follow before anyone rewrites sh.gcount (row.gather's thread 0 zeroes it). */
    const bool from_list = listing && sh.gcount <= row.list_room();
    max = -INFINITY;
    if (valid == 0)
        return 0;
    max = tkp_key_value((uint32_t)maxkey);
    /* min-p (docs/SEMANTICS.md, "min-p"): a row that starts at its k-th key selects that
     * key's bucket and, when it fits, lists it; k' comes from that list, or from the count over
     * the row (fold_minp) for any other row, a list that does not settle it, or under
     * force_count. start_row then prepares the row with k' (the bucket of the k'-th key
     * selected on the same histogram, the list reused: a superset). */
    const int64_t k_limit0 = rej_k_limit(k, vocab, (int64_t)valid);
    const bool at_kth = rej_starts_at_kth(k_limit0, (int64_t)valid);
    unsigned *hist = at_kth || minp ? row.hist_total(kBuckets, true) : nullptr;
    bool listed = false;
    if (at_kth && minp && !force_count) {
        select_bucket(sh, hist, (unsigned)k_limit0);
        listed = sh.gabove + sh.ties <= (unsigned)kGather;
        if (listed)
            list_bucket(row, sh.digit, from_list);
    }
    const int32_t kf = minp ? fold_minp(row, k, min_p, !listed, max) : k;
    RowStart rs;
    const int64_t k_limit = start_row(row, hist, kf, listed, p, max, maxkey,
                                      (int64_t)valid, from_list, count_passes, rs);
    __syncthreads(); /* every thread has read the radix-select results */
    if (threadIdx.x == 0) {
        sh.k_limit = k_limit;
        sh.target = tkp_topp_target(p, rs.set_mass);
        sh.top = rej_pos((uint32_t)maxkey, 0);
        sh.start = rs.start;
        sh.start_mass = rs.start_mass;
    }
    __syncthreads();
    return valid;
}

} // namespace rej_gpu

#endif

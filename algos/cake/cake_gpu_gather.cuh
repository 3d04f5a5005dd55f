/* cake_gpu_gather.cuh — from the first digit to rank 0's slab array: the keys with top digit
 * >= the pivot bucket (path 4a), or the radix passes 2 and 3 on the candidates and the
 * collection of the keys above the pivot and this CTA's share of its ties (path 4b), and the
 * copy of each CTA's entries into rank 0's shared memory. */
#ifndef TKP_CAKE_GPU_GATHER_CUH
#define TKP_CAKE_GPU_GATHER_CUH

#include "../common/gpu_block.cuh"
#include "../common/prob.h"
#include "cake_gpu_bucket.cuh"
#include "cake_gpu_pass1.cuh"
#include "cake_gpu_types.cuh"


__device__ __forceinline__ void ck_push_mine(ck_smem *sm, uint32_t key, uint32_t idx)
{
    const uint32_t pos = atomicAdd(&sm->mine_n, 1u);
    if (pos < CK_GATHER) /* never false: a CTA sends at most max(k, G) <= CK_GATHER entries */
        sm->mine[pos] = ((u64)key << 32) | (uint32_t)~idx;
}

/* The CTA's shared counters and both local histograms zeroed (before pass 1). */
__device__ __forceinline__ void ck_init_smem(ck_smem *sm)
{
    const uint32_t t = threadIdx.x;
    for (uint32_t b = t; b < CK_BUCKETS; b += CK_THREADS)
        sm->hist[0][b] = sm->hist[1][b] = 0;
    if (t == 0) {
        sm->cand_n = sm->mine_n = sm->slab_n = sm->cnt = 0;
        sm->tie_before = sm->tie_mine = 0;
    }
    __syncthreads();
}

/* The first digit's decision, the same in every CTA of the cluster. */
struct ck_first {
    uint32_t k;        /* min(k_eff, #valid keys of the row) */
    uint32_t pivot;    /* P, the top-digit bucket of the k-th largest key (0 when k == 0) */
    uint32_t gathered; /* G = #keys with top digit >= P (>= k; 0 when k == 0) */
};

/* Step 3: the first digit on the cluster-wide counts. Every CTA's histogram is complete (and
 * every CTA has started, rank 0's counters are initialised) before anyone reads it. Only the
 * buckets >= this CTA's T (low_digit) and bucket 0 are summed: the walk stops in the pivot
 * bucket P >= T after reading the buckets above it (exact), and every bucket b < P fails the
 * walk's test however it is counted (above(b) >= above(P) + tot[P] >= take), so every CTA
 * finds the same P, above and tot[P]. Leaves sm->bucket and sm->above at the walk's result
 * (path 4b starts from them). */
__device__ __forceinline__ ck_first ck_first_digit(cg::cluster_group &cluster, ck_smem *sm,
                                                   uint32_t low_digit, uint32_t C, uint32_t V,
                                                   uint32_t keff)
{
    cluster.sync();
    ck_reduce(cluster, sm->hist[0], low_digit, CK_BUCKETS, C, sm);
    __syncthreads();
    const uint32_t valid = V - sm->tot[0]; /* bucket 0 holds exactly the invalid keys */
    ck_first f;
    f.k = min(keff, valid);
    f.pivot = 0;
    f.gathered = 0;
    if (f.k > 0) { /* uniform over the cluster: every CTA has the same tot[0] */
        ck_find_bucket(sm->tot, CK_BUCKETS, f.k, sm);
        f.pivot = sm->bucket;
        f.gathered = sm->above + sm->tot[f.pivot]; /* keys with top digit >= P, >= k */
    }
    return f;
}

/* 4a. The top k of the row are among its `gathered` keys with top digit >= P: send them all
 * (composites key << 32 | ~index, distinct), rank 0 sorts them. */
template <class E>
__device__ __forceinline__ void ck_push_top_digit(ck_smem *sm, bool use_cand,
                                                  const void *__restrict__ row, uint32_t lo,
                                                  uint32_t hi, uint32_t pivot)
{
    auto push = [&](uint32_t key, uint32_t i, bool ok) {
        if (ok && (key >> 21) >= pivot)
            ck_push_mine(sm, key, i);
    };
    ck_each_candidate<E>(sm, use_cand, row, lo, hi, push);
}

/* The pivot's digits found by ck_select_digits: the keys with (key & mask) == prefix are the
 * pivot's ties, those with (key & mask) > prefix are above it; take of the ties complete the
 * top k. */
struct ck_pivot {
    uint32_t prefix, mask, take;
};

/* 4b, the select: the radix select of cake.c, pass by pass, on the cluster-wide counts; the
 * first digit's walk is done (sm->bucket, sm->above). Each digit records, for the bucket it
 * selects, the ties in the CTAs before this one (sm->tie_before, index order) and in this one
 * (sm->tie_mine); visible to every thread on return. */
template <class E>
__device__ __forceinline__ ck_pivot ck_select_digits(cg::cluster_group &cluster, ck_smem *sm,
                                                     bool use_cand,
                                                     const void *__restrict__ row,
                                                     uint32_t lo, uint32_t hi, uint32_t k,
                                                     uint32_t C, uint32_t rank)
{
    const uint32_t t = threadIdx.x;
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
            ck_each_candidate<E>(sm, use_cand, row, lo, hi, count);
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
                kTkpFullWarp, t < rank ? cluster.map_shared_rank(h, t)[bucket] : 0u);
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
    ck_pivot pv;
    pv.prefix = prefix;
    pv.mask = mask;
    pv.take = take;
    return pv;
}

/* The first `need` pivot ties of the slice row[lo, hi), in index order, into mine: 4 tokens per
 * thread per round, ranked by a block scan (block-uniform loop). */
template <class E>
__device__ __forceinline__ void ck_push_first_ties(ck_smem *sm, const void *__restrict__ row,
                                                   uint32_t lo, uint32_t hi, ck_pivot pv,
                                                   uint32_t need)
{
    const uint32_t t = threadIdx.x;
    uint32_t running = 0;
    for (uint32_t base = lo; base < hi && running < need; base += 4 * CK_THREADS) {
        uint32_t keys[4], c = 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t i = base + 4 * t + e;
            keys[e] = i < hi ? tkp_order_key(tkp_load1<E>(row, i)) : 0;
            c += i < hi && (keys[e] & pv.mask) == pv.prefix;
        }
        u64 total;
        uint32_t rnk = running + (uint32_t)tkp_block_excl_scan<CK_WARPS>((u64)c, sm->wsum, total);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t i = base + 4 * t + e;
            if (i < hi && (keys[e] & pv.mask) == pv.prefix) {
                if (rnk < need)
                    ck_push_mine(sm, keys[e], i);
                rnk++;
            }
        }
        running += (uint32_t)total;
    }
}

/* 4b, the collection: the keys above the pivot, and this CTA's share of the ties (the ties of
 * lower ranks come first: index order). */
template <class E>
__device__ __forceinline__ void ck_collect(ck_smem *sm, bool use_cand,
                                           const void *__restrict__ row, uint32_t lo,
                                           uint32_t hi, ck_pivot pv)
{
    const uint32_t tb = sm->tie_before, tm = sm->tie_mine;
    const uint32_t need = pv.take > tb ? min(pv.take - tb, tm) : 0;
    const int ties_all = need == tm;
    auto collect = [&](uint32_t key, uint32_t i, bool ok) {
        const uint32_t high = key & pv.mask;
        if (ok && (high > pv.prefix || (ties_all && high == pv.prefix)))
            ck_push_mine(sm, key, i);
    };
    ck_each_candidate<E>(sm, use_cand, row, lo, hi, collect);
    if (!ties_all) /* the first `need` ties of the slice, in index order (uniform) */
        ck_push_first_ties<E>(sm, row, lo, hi, pv, need);
}

/* This CTA's entries (mine) into rank 0's slab array, at an offset reserved in rank 0's
 * slab_n. */
__device__ __forceinline__ void ck_send_to_rank0(cg::cluster_group &cluster, ck_smem *sm)
{
    const uint32_t t = threadIdx.x;
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

#endif

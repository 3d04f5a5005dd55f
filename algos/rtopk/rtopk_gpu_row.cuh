/* rtopk_gpu_row.cuh — the passes of rtopk on one row (README.md, "GPU source layout"), run by
 * every CTA of the row's cluster on its chunk: the chunk's reads and mask writes (RtChunk,
 * rt_each_group), the exchanges through distributed shared memory (RtCluster), then the scan
 * (1), the search (2) and the selection (3) of rtopk.c. */
#ifndef TKP_RTOPK_GPU_ROW_CUH
#define TKP_RTOPK_GPU_ROW_CUH

#include <cooperative_groups.h>
#include <stdint.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_logits.cuh"
#include "rtopk_gpu_types.cuh"

namespace cg = cooperative_groups;

namespace {

/* The CTA's chunk of its row: `len` tokens of element type E read as `groups` groups of 4
 * (group g = tokens 4g..4g+3; NaN past the end, never counted or kept) from x, or from the
 * shared-memory cache of converted floats once the scan has filled it (CACHED); the mask
 * bytes of the same tokens at kr. */
template <class E, bool CACHED>
struct RtChunk {
    static constexpr bool cached = CACHED;
    const typename E::storage *x;
    uint8_t *kr;
    float4 *cache;
    int len, groups;
    bool xvec, kvec; /* x aligned to one four-element vector (tkp_vec4_ok), kr 4-byte aligned */
    /* Groups a streaming loop reads before using them (rt_each_group): a 16-bit vector is
     * 8 bytes, so two keep as many bytes in flight per thread as one float4. */
    static constexpr int unroll = 16 / (4 * tkp_elem_bytes<E>());

    __device__ __forceinline__ float4 load(int g) const
    {
        const int i = 4 * g;
        if (xvec && i + 3 < len)
            return tkp_load4<E>(x, i);
        float4 f = nan4();
        if (i < len)
            f.x = tkp_load1<E>(x, i);
        if (i + 1 < len)
            f.y = tkp_load1<E>(x, i + 1);
        if (i + 2 < len)
            f.z = tkp_load1<E>(x, i + 2);
        if (i + 3 < len)
            f.w = tkp_load1<E>(x, i + 3);
        return f;
    }

    __device__ __forceinline__ float4 get(int g) const { return CACHED ? cache[g] : load(g); }

    __device__ __forceinline__ void write(int g, bool k0, bool k1, bool k2, bool k3) const
    {
        const int i = 4 * g;
        if (kvec && i + 3 < len) {
            *reinterpret_cast<uchar4 *>(kr + i) =
                make_uchar4((unsigned char)k0, (unsigned char)k1, (unsigned char)k2,
                            (unsigned char)k3);
        } else {
            if (i < len)
                kr[i] = k0;
            if (i + 1 < len)
                kr[i + 1] = k1;
            if (i + 2 < len)
                kr[i + 2] = k2;
            if (i + 3 < len)
                kr[i + 3] = k3;
        }
    }
};

/* Calls body(g, f) with the four tokens f of each of this thread's groups g = tid,
 * tid + RT_THREADS, ... in order, read from the source (SOURCE: the scan, which fills the
 * cache) or through get(). Where the reads go to global memory, Chunk::unroll groups are read
 * before their bodies run (1 for float32: one group at a time, as the loop is written). */
template <bool SOURCE, class Chunk, class Body>
__device__ __forceinline__ void rt_each_group(const Chunk &ch, Body body)
{
    constexpr int U = SOURCE || !Chunk::cached ? Chunk::unroll : 1;
    for (int g0 = threadIdx.x; g0 < ch.groups; g0 += U * RT_THREADS) {
        float4 f[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int g = g0 + u * RT_THREADS;
            f[u] = g < ch.groups ? (SOURCE ? ch.load(g) : ch.get(g)) : nan4();
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            if (g0 + u * RT_THREADS < ch.groups)
                body(g0 + u * RT_THREADS, f[u]);
    }
}

/* The exchange of per-CTA partial results through distributed shared memory: each block
 * reduction's result goes into this CTA's slot, cluster.sync(), then every thread combines
 * the G slots in rank order; two alternating slots, so one cluster.sync() per exchange. */
struct RtCluster {
    cg::cluster_group &cluster;
    RtShared &sh;
    unsigned G, rank;
    int slot;

    /* A per-thread count summed over the cluster: every thread gets the total. */
    __device__ __forceinline__ unsigned long long sum(unsigned long long v)
    {
        unsigned long long b = RedCount(sh.tmp.rc).Sum(v);
        if (threadIdx.x == 0)
            sh.slot[slot].c = b;
        cluster.sync();
        unsigned long long all = 0;
        for (unsigned j = 0; j < G; j++)
            all += cluster.map_shared_rank(&sh.slot[slot], j)->c;
        slot ^= 1;
        return all;
    }

    /* The sum of a per-thread count over the CTAs of lower rank (this CTA's first rank). */
    __device__ __forceinline__ int sum_before(unsigned long long v)
    {
        unsigned long long b = RedCount(sh.tmp.rc).Sum(v);
        if (threadIdx.x == 0)
            sh.slot[slot].c = b;
        cluster.sync();
        int carry = 0;
        for (unsigned j = 0; j < rank; j++)
            carry += (int)cluster.map_shared_rank(&sh.slot[slot], j)->c;
        slot ^= 1;
        return carry;
    }

    /* The scan partials merged over the cluster. */
    __device__ __forceinline__ Stat merge(const Stat &st)
    {
        Stat b = RedStat(sh.tmp.rs).Reduce(st, StatOp());
        if (threadIdx.x == 0)
            sh.slot[slot].s = b;
        cluster.sync();
        Stat all = stat_identity();
        for (unsigned j = 0; j < G; j++)
            all = StatOp()(all, cluster.map_shared_rank(&sh.slot[slot], j)->s);
        slot ^= 1;
        return all;
    }
};

/* #(x >= t) << 32 | #(x == t) over the row. */
template <class Chunk>
__device__ __forceinline__ unsigned long long rt_count_ge_eq(const Chunk &ch, RtCluster &xc,
                                                             float t)
{
    unsigned ge = 0, eq = 0;
    rt_each_group<false>(ch, [&](int, float4 f) {
        ge += (f.x >= t) + (f.y >= t) + (f.z >= t) + (f.w >= t);
        eq += (f.x == t) + (f.y == t) + (f.z == t) + (f.w == t);
    });
    return xc.sum((unsigned long long)ge << 32 | eq);
}

/* 1. scan (and fill the cache): valid count, max and #(x == max), min and #(x == min) of the
 * row. */
template <class Chunk>
__device__ __forceinline__ Stat rt_scan(const Chunk &ch, RtCluster &xc)
{
    Stat st = stat_identity();
    rt_each_group<true>(ch, [&](int g, float4 f) {
        if (Chunk::cached)
            ch.cache[g] = f;
        stat_add(st, f.x);
        stat_add(st, f.y);
        stat_add(st, f.z);
        stat_add(st, f.w);
    });
    return xc.merge(st);
}

/* The search's result: the threshold and the class sizes at it. */
struct RtThreshold {
    float t;
    int cnt_a, cnt_b; /* #(x > t), #(x == t) (cnt_b only where its quota can be > 0) */
    int its;          /* the search's iterations */
};

/* 2. search (rtopk_search of rtopk.c) for the n-th largest of the row's `valid` tokens. */
template <class Chunk>
__device__ __forceinline__ RtThreshold rt_search(const Chunk &ch, RtCluster &xc, const Stat &st,
                                                 int n, int max_iter)
{
    const int valid = st.valid;
    RtThreshold th;
    th.its = 0;
    if (n == valid) { /* keep every valid token: threshold -inf, pass A takes them all */
        th.t = -INFINITY;
        th.cnt_a = valid;
        th.cnt_b = 0;
    } else if (st.hi_n >= n) {
        th.t = st.hi;
        th.cnt_a = 0;
        th.cnt_b = st.hi_n;
    } else {
        float lo = st.lo, hi = st.hi;
        int lo_ge = valid, lo_eq = st.lo_n; /* #(x >= lo), #(x == lo) */
        for (int it = 0;; it++) {
            const float mid = rt_midpoint(lo, hi);
            if (mid == lo || mid == hi) {
                th.t = lo;
                th.cnt_a = lo_ge - lo_eq;
                th.cnt_b = lo_eq;
                break;
            }
            const unsigned long long c = rt_count_ge_eq(ch, xc, mid);
            const int ge = (int)(c >> 32), eq = (int)(c & 0xFFFFFFFFull);
            if (max_iter > 0 && it == max_iter) { /* early stop: this pass is not an iteration */
                th.t = mid;
                th.cnt_a = ge - eq;
                th.cnt_b = eq;
                break;
            }
            th.its++;
            if (ge == n) {
                th.t = mid;
                th.cnt_a = ge - eq;
                th.cnt_b = eq;
                break;
            }
            if (ge < n) {
                hi = mid;
            } else {
                lo = mid;
                lo_ge = ge;
                lo_eq = eq;
            }
        }
    }
    return th;
}

/* The selection's quotas per class: a class is taken whole (q == its size), not at all
 * (q == 0), or partially (at most one class: `part`, of which the first part_q in index order
 * are kept). */
struct RtQuota {
    bool all_a, all_b, all_c;
    int part, part_q;

    __device__ __forceinline__ bool take_all(int c) const
    {
        return (c == CLS_A && all_a) || (c == CLS_B && all_b) || (c == CLS_C && all_c);
    }
};

/* Passes A, B, C of rtopk.c as quotas qA = min(n, |A|), qB = min(n - qA, |B|), qC = the rest. */
__device__ __forceinline__ RtQuota rt_quotas(int n, int valid, const RtThreshold &th)
{
    const int cnt_a = th.cnt_a, cnt_b = th.cnt_b;
    const int cnt_c = valid - cnt_a - cnt_b;
    const int qa = n < cnt_a ? n : cnt_a;
    const int qb = n - qa < cnt_b ? n - qa : cnt_b;
    const int qc = n - qa - qb;
    RtQuota q;
    q.all_a = qa > 0 && qa == cnt_a;
    q.all_b = qb > 0 && qb == cnt_b;
    q.all_c = qc > 0 && qc == cnt_c;
    q.part = CLS_NONE;
    q.part_q = 0;
    if (qa > 0 && qa < cnt_a) {
        q.part = CLS_A;
        q.part_q = qa;
    } else if (qb > 0 && qb < cnt_b) {
        q.part = CLS_B;
        q.part_q = qb;
    } else if (qc > 0 && qc < cnt_c) {
        q.part = CLS_C;
        q.part_q = qc;
    }
    return q;
}

/* 3. select without a partial class: every mask byte is decided by its own token. */
template <class Chunk>
__device__ __forceinline__ void rt_write_whole_classes(const Chunk &ch, float t,
                                                       const RtQuota &q)
{
    rt_each_group<false>(ch, [&](int g, float4 f) {
        ch.write(g, q.take_all(rt_class(f.x, t)), q.take_all(rt_class(f.y, t)),
                 q.take_all(rt_class(f.z, t)), q.take_all(rt_class(f.w, t)));
    });
}

/* 3. select with a partial class: its members are ranked in index order, from the CTA's
 * starting rank (the members in the chunks of lower ranks) through a block-wide exclusive
 * scan per tile. */
template <class Chunk>
__device__ __forceinline__ void rt_write_ranked(const Chunk &ch, RtCluster &xc, float t,
                                                const RtQuota &q)
{
    const int tid = threadIdx.x, part = q.part;
    int carry = 0; /* members of the partial class before this CTA's chunk */
    if (xc.G > 1) {
        unsigned mine = 0;
        rt_each_group<false>(ch, [&](int, float4 f) {
            mine += (rt_class(f.x, t) == part) + (rt_class(f.y, t) == part) +
                    (rt_class(f.z, t) == part) + (rt_class(f.w, t) == part);
        });
        carry = xc.sum_before((unsigned long long)mine);
    }
    for (int base = 0; base < ch.groups; base += RT_THREADS) {
        const int g = base + tid;
        const float4 f = g < ch.groups ? ch.get(g) : nan4();
        const int cls[4] = { rt_class(f.x, t), rt_class(f.y, t), rt_class(f.z, t),
                             rt_class(f.w, t) };
        int flag[4], before[4], agg;
#pragma unroll
        for (int j = 0; j < 4; j++)
            flag[j] = cls[j] == part;
        __syncthreads(); /* the scan storage is free again */
        tkp_block_excl_scan_items<RT_THREADS / 32>(flag, before, xc.sh.tmp.si, agg);
        bool keep[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            keep[j] = q.take_all(cls[j]) || (flag[j] && carry + before[j] < q.part_q);
        if (g < ch.groups)
            ch.write(g, keep[0], keep[1], keep[2], keep[3]);
        carry += agg;
    }
}

} // namespace

#endif

/* rtopk_gpu.cu — the CUDA backend of rtopk: the passes and decisions of rtopk.c, one
 * thread-block cluster of `group` CTAs per row.
 *
 * Each CTA of a row's cluster owns `chunk` consecutive tokens (chunk a multiple of 4, the
 * last CTA's share shorter, possibly empty) and, when `cached`, copies them into dynamic
 * shared memory during the first pass, so that the search iterations and the selection
 * read shared memory instead of HBM. Every pass ends with a block reduction (CUB) and an
 * exchange of the CTAs' partial results through distributed shared memory: each CTA writes
 * its partial into its own slot, cluster.sync(), then every thread combines the G slots in
 * rank order. All CTAs therefore hold identical totals and take identical decisions.
 *
 * 1. scan: valid count, max and #(x == max), min and #(x == min).
 * 2. search (rtopk_search of rtopk.c): mid = 0.5*lo + 0.5*hi (two IEEE roundings, no FMA,
 *    no flush to zero; +inf enters as 2^127), stop when mid == lo or mid == hi (t = lo),
 *    at the early stop (t = mid), or when #(x >= mid) == n (t = mid). Each counting pass
 *    counts #(x >= mid) and #(x == mid) together (packed into one 64-bit sum), so that the
 *    class sizes at the final threshold are known without another pass (except after an
 *    early stop, where t = the uncounted midpoint gets one extra counting pass, not counted
 *    as an iteration, as on the CPU).
 * 3. select: passes A (x > t), B (x == t), C (valid x < t), each in index order until n are
 *    kept, are equivalent to quotas qA = min(n, |A|), qB = min(n - qA, |B|), qC = the rest.
 *    At most one class is taken partially; when none is, every mask byte is decided by its
 *    own token (one elementwise pass). Otherwise the partial class is ranked in index order:
 *    each CTA counts its chunk's members (exchanged: the CTA's starting rank = the sum over
 *    lower ranks), then a block-wide exclusive scan per tile carries the rank across tiles.
 * Counts are integers and min/max are exact, so any reduction order gives the same result:
 * the mask is bit-identical to the CPU's for every launch shape.
 *
 * The kernel is templated on the logits' element type E (algos/common/gpu_logits.cuh): a
 * 16-bit row is read in four-element uint2 vectors (8 bytes; float4 for float32) and
 * converted exactly in registers, and the cache holds the converted floats (the same
 * 4 bytes per token and layout as for float32), so the later passes are the same code and a
 * 16-bit row gives the mask of its float32 upcast (docs/SEMANTICS.md, "16-bit logits"). */
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <stdint.h>
#include <stdlib.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/prob.h"
#include "rtopk_gpu.h"

namespace cg = cooperative_groups;

namespace {

constexpr int RT_THREADS = 512;
/* Two CTAs per SM (64 registers: ptxas spills ~50 bytes, outside the streaming loops);
 * with 1 the kernel needs ~100 registers and spills nothing, but an SM holds one CTA. */
constexpr int RT_BLOCKS_PER_SM = 2;
constexpr int RT_MAX_GROUP = 8;                 /* the portable cluster size limit */
constexpr int64_t RT_PREF_CHUNK_BYTES = 96 << 10; /* two CTAs per SM can hold their chunks */
constexpr int64_t RT_MIN_SPLIT = 4096;          /* split a row further only above this */

struct Stat {
    float hi;
    int hi_n;
    float lo;
    int lo_n;
    int valid;
};

__device__ __forceinline__ Stat stat_identity()
{
    Stat s;
    s.hi = -INFINITY;
    s.hi_n = 0;
    s.lo = INFINITY;
    s.lo_n = 0;
    s.valid = 0;
    return s;
}

/* Merge two partial scans: exact for any grouping (max/min by value, counts added). */
struct StatOp {
    __device__ __forceinline__ Stat operator()(const Stat &a, const Stat &b) const
    {
        Stat r;
        if (a.hi > b.hi) {
            r.hi = a.hi;
            r.hi_n = a.hi_n;
        } else if (b.hi > a.hi) {
            r.hi = b.hi;
            r.hi_n = b.hi_n;
        } else {
            r.hi = a.hi;
            r.hi_n = a.hi_n + b.hi_n;
        }
        if (a.lo < b.lo) {
            r.lo = a.lo;
            r.lo_n = a.lo_n;
        } else if (b.lo < a.lo) {
            r.lo = b.lo;
            r.lo_n = b.lo_n;
        } else {
            r.lo = a.lo;
            r.lo_n = a.lo_n + b.lo_n;
        }
        r.valid = a.valid + b.valid;
        return r;
    }
};

__device__ __forceinline__ void stat_add(Stat &s, float v)
{
    if (!tkp_is_valid(v))
        return;
    s.valid++;
    if (v > s.hi) {
        s.hi = v;
        s.hi_n = 1;
    } else if (v == s.hi) {
        s.hi_n++;
    }
    if (v < s.lo) {
        s.lo = v;
        s.lo_n = 1;
    } else if (v == s.lo) {
        s.lo_n++;
    }
}

/* rtopk_midpoint of rtopk.c with explicit round-to-nearest operations (never contracted). */
__device__ __forceinline__ float rt_midpoint(float lo, float hi)
{
    return __fadd_rn(__fmul_rn(0.5f, lo), hi == INFINITY ? 0x1p127f : __fmul_rn(0.5f, hi));
}

struct Xchg {
    Stat s;
    unsigned long long c;
};

using RedStat = cub::BlockReduce<Stat, RT_THREADS>;
using RedCount = cub::BlockReduce<unsigned long long, RT_THREADS>;
using ScanI = cub::BlockScan<int, RT_THREADS>;

struct RtShared {
    union {
        RedStat::TempStorage rs;
        RedCount::TempStorage rc;
        ScanI::TempStorage si;
    } tmp;
    Xchg slot[2]; /* alternate slots: one cluster.sync per exchange suffices */
};

__device__ __forceinline__ float4 nan4()
{
    const float q = __int_as_float(0x7FC00000);
    return make_float4(q, q, q, q);
}

/* The token classes of the selection passes. */
enum { CLS_NONE = -1, CLS_A = 0, CLS_B = 1, CLS_C = 2 };

__device__ __forceinline__ int rt_class(float v, float t)
{
    if (v > t)
        return CLS_A;
    if (v == t)
        return CLS_B;
    if (v < t && tkp_is_valid(v))
        return CLS_C;
    return CLS_NONE;
}

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
        ScanI(xc.sh.tmp.si).ExclusiveSum(flag, before, agg);
        bool keep[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            keep[j] = q.take_all(cls[j]) || (flag[j] && carry + before[j] < q.part_q);
        if (g < ch.groups)
            ch.write(g, keep[0], keep[1], keep[2], keep[3]);
        carry += agg;
    }
}

/* One cluster per row of `logits` (element type E, rows `stride` elements apart). */
template <class E, bool CACHED>
__global__ void __launch_bounds__(RT_THREADS, RT_BLOCKS_PER_SM)
    rtopk_kernel(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                 const int32_t *__restrict__ kk, uint8_t *__restrict__ kept, int chunk,
                 int max_iter, int32_t *__restrict__ iters)
{
    extern __shared__ float4 cache[];
    __shared__ RtShared sh;
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned G = cluster.num_blocks();
    const unsigned rank = cluster.block_rank();
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x / G;
    const int64_t c0 = (int64_t)rank * chunk;
    RtChunk<E, CACHED> ch;
    ch.len = c0 < vocab ? (int)(vocab - c0 < chunk ? vocab - c0 : chunk) : 0;
    ch.groups = (ch.len + 3) >> 2;
    ch.x = static_cast<const typename E::storage *>(tkp_row_ptr<E>(logits, stride, row)) +
           (c0 < vocab ? c0 : 0);
    ch.xvec = tkp_vec4_ok<E>(ch.x, 0);
    ch.kr = kept + row * vocab + (c0 < vocab ? c0 : 0);
    ch.kvec = ((uintptr_t)ch.kr & 3) == 0;
    ch.cache = cache;
    RtCluster xc{ cluster, sh, G, rank, 0 };

    const Stat st = rt_scan(ch, xc); /* 1. */
    /* counts fit an int: vocab <= 2^23 */
    const int valid = st.valid;
    const int32_t k = kk[row];
    const int n = tkp_topk_on(k, vocab) && k < valid ? (int)k : valid;
    const RtThreshold th = rt_search(ch, xc, st, n, max_iter); /* 2. */
    const RtQuota q = rt_quotas(n, valid, th);                  /* 3. */
    if (q.part == CLS_NONE)
        rt_write_whole_classes(ch, th.t, q);
    else
        rt_write_ranked(ch, xc, th.t, q);
    if (rank == 0 && tid == 0)
        iters[row] = th.its;
    cluster.sync(); /* no CTA leaves while another may still read its slots */
}

/* Every instantiation of rtopk_kernel has this type (the logits are untyped). */
typedef void (*RtKernel)(const void *, int64_t, int64_t, const int32_t *, uint8_t *, int, int,
                         int32_t *);

/* The kernel for the problem's element type, with or without the cache: the one place that
 * dispatches on pb->dtype; NULL for a type outside the enum. */
RtKernel rt_kernel(enum tkp_dtype dtype, bool cached)
{
    RtKernel k = nullptr;
    tkp_with_dtype(dtype, [&](auto e) {
        using E = decltype(e);
        k = cached ? rtopk_kernel<E, true> : rtopk_kernel<E, false>;
    });
    return k;
}

/* The error for an element type outside the enum (the harness refuses one before init). */
int rt_bad_dtype(const struct tkp_problem *pb, struct tkp_error *err)
{
    tkp_error_set(err, "rtopk: logits element type %d is not one of f32, bf16, f16",
                  (int)pb->dtype);
    return TKP_EINVAL;
}

/* How many clusters of this shape fit on the device at once (0: the launch would fail). */
int rt_clusters(RtKernel kernel, const struct rtopk_gpu_plan *plan)
{
    return tkp_active_clusters(kernel, plan->group, RT_THREADS, plan->smem);
}

int64_t rt_chunk(int64_t vocab, int group)
{
    int64_t c = (vocab + group - 1) / group;
    return (c + 3) & ~(int64_t)3;
}

} // namespace

extern "C" int rtopk_gpu_plan(const struct tkp_problem *pb, struct rtopk_gpu_plan *plan,
                              size_t *workspace_bytes, struct tkp_error *err)
{
    int dev = 0, sms = 0, optin = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
                 err);
    const RtKernel cached_kernel = rt_kernel(pb->dtype, true);
    const RtKernel stream_kernel = rt_kernel(pb->dtype, false);
    if (!cached_kernel || !stream_kernel)
        return rt_bad_dtype(pb, err);
    cudaFuncAttributes fa;
    TKP_CUDA_TRY(cudaFuncGetAttributes(&fa, cached_kernel), err);
    const int64_t cap = (int64_t)optin - (int64_t)fa.sharedSizeBytes; /* dynamic smem limit */
    TKP_CUDA_TRY(cudaFuncSetAttribute(cached_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cap),
                 err);

    /* The fewest CTAs whose chunks fit comfortably in shared memory ... */
    int group = 1, cached = 1;
    while (group < RT_MAX_GROUP && rt_chunk(pb->vocab, group) * 4 > RT_PREF_CHUNK_BYTES)
        group *= 2;
    if (rt_chunk(pb->vocab, group) * 4 > cap)
        cached = 0; /* a row longer than the cluster's shared memory: stream every pass */
    /* ... and more of them while the batch leaves SMs idle. */
    while (group < RT_MAX_GROUP && pb->batch * group < sms &&
           rt_chunk(pb->vocab, group * 2) >= RT_MIN_SPLIT)
        group *= 2;
    plan->group = group;
    plan->chunk = (int)rt_chunk(pb->vocab, group);
    plan->cached = cached;
    /* the cache holds converted floats, 4 bytes per token whatever the element type */
    plan->smem = cached ? (size_t)plan->chunk * sizeof(float) : 0;
    if (plan->cached && rt_clusters(cached_kernel, plan) == 0) {
        plan->cached = 0; /* cannot co-schedule the cluster with that much shared memory */
        plan->smem = 0;
    }
    if (!plan->cached && rt_clusters(stream_kernel, plan) == 0) {
        tkp_error_set(err, "rtopk: no cluster of %d CTAs of %d threads fits on this device",
                      plan->group, RT_THREADS);
        return TKP_EDEVICE;
    }
    *workspace_bytes = sizeof(int32_t) * (size_t)(pb->batch > 0 ? pb->batch : 1);
    return TKP_OK;
}

extern "C" int rtopk_gpu_run(const struct rtopk_gpu_plan *plan, const struct tkp_problem *pb,
                             const struct tkp_io *io, int max_iter, void *workspace,
                             void *stream, struct tkp_error *err)
{
    if (pb->batch == 0 || !io->kept)
        return TKP_OK;
    int32_t *iters = (int32_t *)workspace;
    cudaStream_t st = (cudaStream_t)stream;
    const RtKernel kernel = rt_kernel(pb->dtype, plan->cached != 0);
    if (!kernel)
        return rt_bad_dtype(pb, err);
    const dim3 grid((unsigned)(pb->batch * plan->group));
    TKP_CUDA_TRY(tkp_launch_cluster(kernel, plan->group, grid, dim3(RT_THREADS), plan->smem, st,
                                    io->logits, (int64_t)pb->stride, (int64_t)pb->vocab, io->k,
                                    io->kept, plan->chunk, max_iter, iters),
                 err);
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

extern "C" int rtopk_gpu_iterations(const void *workspace, int64_t batch, void *stream,
                                    double *out, struct tkp_error *err)
{
    *out = 0;
    if (batch <= 0 || !workspace)
        return TKP_OK;
    int32_t *h = (int32_t *)malloc(sizeof(int32_t) * (size_t)batch);
    if (!h) {
        tkp_error_set(err, "out of host memory");
        return TKP_ENOMEM;
    }
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemcpyAsync(h, workspace, sizeof(int32_t) * (size_t)batch,
                                    cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        free(h);
        tkp_error_set(err, "rtopk: reading the iteration counters: %s", cudaGetErrorString(e));
        return TKP_EDEVICE;
    }
    double sum = 0;
    for (int64_t r = 0; r < batch; r++)
        sum += h[r];
    free(h);
    *out = sum;
    return TKP_OK;
}

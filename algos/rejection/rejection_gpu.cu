/* rejection_gpu.cu — CUDA implementation of the dual-pivot rejection sampler.
 *
 * The CPU reference (rejection.c) is the sequential form of this kernel: the same passes, the
 * same integer decisions (rejection_rules.h) and the same Philox counters, so every draw is
 * the CPU's bit for bit. All masses and counts are exact integers, so block and cluster
 * reductions and scans give the CPU's numbers whatever the order of addition. Two variants run
 * the same code (prepare_row, draw_one) through the policy Row<THREADS, CLUSTER>, which says
 * where the tokens come from and how the per-pass integers are reduced:
 *  - one CTA per row (CLUSTER = false; large batches): grid (batch, groups); every pass
 *    streams the row from global memory (float4 loads when the row is 16-byte aligned) and
 *    recomputes order keys and fixed-point weights from the logits;
 *  - a thread-block cluster of C = 2 .. 16 CTAs per row (CLUSTER = true; small batches):
 *    grid (batch * C, groups); CTA `rank` copies its contiguous slice of the row into shared
 *    memory once, every pass runs on that copy, and the pass's integers (counts, masses,
 *    histograms, gathered tokens) are combined over the cluster through distributed shared
 *    memory. The inverse-CDF pick takes the slices' masses in rank order (= index order) to
 *    find the one CTA whose slice holds the crossing token, which scans its slice. When the
 *    first candidate set fits in shared memory, every CTA holds it and the CTAs of the
 *    cluster run different draws with no cluster barrier.
 * CTA (row r, group g) runs draws g, g + groups, ... (small first set in a cluster: draws
 * g * C + rank, step groups * C). README.md ("GPU") has the launch shapes and the
 * determinism argument. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/mass_floor.h"
#include "../common/philox.h"
#include "../common/prob.h"
#include "rejection_gpu.h"
#include "rejection_rules.h"

namespace cg = cooperative_groups;

namespace {

constexpr unsigned kFull = 0xFFFFFFFFu;
constexpr int kReduceUnroll = 4; /* tiles in flight per thread in the counting passes */
constexpr int kStatWords = 3;    /* per CTA: rounds, fallbacks, iterations */
/* Top-k-then-top-p: the first pass histograms the top kBucketBits bits of the order keys; the
 * second gathers every token of the bucket holding the k-th key and above (at most kGather)
 * into shared memory; when the first candidate set (keys >= the k-th) has at most kSmall
 * tokens, it is kept there in index order and every round runs on it. */
constexpr int kBucketBits = 11;
constexpr int kBuckets = 1 << kBucketBits;
constexpr int kBucketShift = 32 - kBucketBits;
constexpr int kGather = 2048;
constexpr int kSmall = 1024;
/* The cluster variant: 1024 threads per CTA, at most 16 CTAs (16 is non-portable), a slice of
 * at most kSliceCap tokens per CTA (8 bytes each in shared memory: the logit and its cached
 * weight), at least kMinSlice tokens per CTA unless forced (TKP_REJ_CLUSTER). */
constexpr int kClusterThreads = 1024;
constexpr int kMaxCluster = 16;
constexpr int kSliceCap = 18432;
constexpr int kMinSlice = 2048;

typedef unsigned long long u64;

struct Params {
    const float *logits;
    const int32_t *k;
    const float *p;
    int64_t *samples;
    u64 *stats; /* [batch * groups * cluster * kStatWords] */
    uint64_t seed, offset;
    int64_t stride;
    int vocab, draws, max_rounds, groups;
    int slice; /* cluster variant: tokens per CTA (a multiple of 4) */
};

template <int THREADS> struct Shared {
    static constexpr int kWarps = THREADS / 32;
    u64 red[3][kWarps];  /* block reductions */
    u64 scan[2][kWarps]; /* warp totals of the inverse-CDF scan, double-buffered per tile */
    unsigned hist[kBuckets]; /* bucket histogram (pass 1); radix-select histogram (first 256) */
    uint32_t g_key[kGather]; /* gathered tokens of the k-th key's bucket and above */
    uint32_t g_idx[kGather];
    u64 mass_hist[TKP_MASS_BINS]; /* top-p alone: this CTA's mass per bin of the mass floor */
    uint64_t mass_all[TKP_MASS_BINS]; /* ... and the row's */
    u64 s_pos[kSmall];       /* the first candidate set in index order: positions */
    u64 s_w[kSmall];         /* and fixed-point weights */
    int nsmall;              /* its size when kept in shared memory, else 0 */
    unsigned gcount, gabove, kth;
    u64 cand_pos;        /* the inverse-CDF pass: position and index of the candidate */
    int cand;
    unsigned digit, rank, ties; /* radix select: the chosen digit, the rank left in it */
    u64 level_mass;             /* radix select: mass of the last digit's bins above it */
    /* The row, once prepared (kept in shared memory to spare registers in the passes). */
    int64_t k_limit;
    uint64_t target, top, start, start_mass;
    u64 stat[kStatWords]; /* this CTA's rounds, fallbacks, iterations (thread 0 counts) */
};

/* What a CTA of a cluster publishes to the others (read through distributed shared memory). */
struct ClusterShared {
    unsigned hist_part[kBuckets]; /* this CTA's share of the cluster-wide histogram */
    unsigned hist_all[kBuckets];  /* the cluster-wide histogram */
    uint32_t st_key[kGather];     /* the tokens this CTA gathered */
    uint32_t st_idx[kGather];
    unsigned st_count;
    u64 xchg[2][3]; /* block sums, double-buffered: a buffer is rewritten two exchanges later,
                     * after a cluster barrier every reader passes only once done reading it */
};

/* The cluster variant's dynamic shared memory: Shared, ClusterShared, then the slice's logits
 * and cached weights (slice floats each). */
struct ClusterSmem {
    Shared<kClusterThreads> sh;
    ClusterShared cx;
};
constexpr size_t kClusterFixed = (sizeof(ClusterSmem) + 15) & ~(size_t)15;

size_t cluster_smem_bytes(int slice) { return kClusterFixed + 8 * (size_t)slice; }

__device__ __forceinline__ void unpack4(float4 q, float v[4])
{
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}

/* Four consecutive logits i .. i+3 of a row of n (i a multiple of 4); past the row: -inf,
 * which has order key 0, weight 0 and a position >= REJ_END. */
__device__ __forceinline__ void load4(const float *__restrict__ x, int n, bool vec, int i,
                                      float v[4])
{
    if (vec && i + 3 < n) {
        unpack4(__ldg(reinterpret_cast<const float4 *>(x + i)), v);
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = i + j < n ? __ldg(x + i + j) : -INFINITY;
    }
}

/* Warp-aggregated histogram increment; bucket >= nbins adds nothing. All 32 lanes call it. */
__device__ __forceinline__ void hist_add(unsigned *hist, unsigned bucket, unsigned nbins = 256)
{
    const unsigned peers = __match_any_sync(kFull, bucket);
    const int leader = __ffs(peers) - 1;
    if ((int)(threadIdx.x & 31) == leader && bucket < nbins)
        atomicAdd(&hist[bucket], (unsigned)__popc(peers));
}

__device__ __forceinline__ u64 warp_sum(u64 v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(kFull, v, o);
    return v;
}

__device__ __forceinline__ u64 warp_max(u64 v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const u64 w = __shfl_xor_sync(kFull, v, o);
        v = w > v ? w : v;
    }
    return v;
}

/* Inclusive scan over the lanes of a warp. */
__device__ __forceinline__ u64 warp_scan(u64 v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u64 w = __shfl_up_sync(kFull, v, o);
        if (lane >= o)
            v += w;
    }
    return v;
}

/* Exact block sums of three integers, returned to every thread. Ends with a barrier, so the
 * shared buffer may be reused at once. */
template <int THREADS>
__device__ __forceinline__ void block_sum3(Shared<THREADS> &sh, u64 &a, u64 &b, u64 &c)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    c = warp_sum(c);
    if (lane == 0) {
        sh.red[0][warp] = a;
        sh.red[1][warp] = b;
        sh.red[2][warp] = c;
    }
    __syncthreads();
    const bool mine = lane < Shared<THREADS>::kWarps;
    a = warp_sum(mine ? sh.red[0][lane] : 0);
    b = warp_sum(mine ? sh.red[1][lane] : 0);
    c = warp_sum(mine ? sh.red[2][lane] : 0);
    __syncthreads();
}

/* Block sum of `a` and block maximum of `m`, returned to every thread. */
template <int THREADS>
__device__ __forceinline__ void block_sum_max(Shared<THREADS> &sh, u64 &a, u64 &m)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    a = warp_sum(a);
    m = warp_max(m);
    if (lane == 0) {
        sh.red[0][warp] = a;
        sh.red[1][warp] = m;
    }
    __syncthreads();
    const bool mine = lane < Shared<THREADS>::kWarps;
    a = warp_sum(mine ? sh.red[0][lane] : 0);
    m = warp_max(mine ? sh.red[1][lane] : 0);
    __syncthreads();
}

/* Exclusive block scan of one integer per thread (thread order); ends with a barrier. */
template <int THREADS>
__device__ __forceinline__ u64 block_excl_scan(Shared<THREADS> &sh, u64 s)
{
    constexpr int warps = Shared<THREADS>::kWarps;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 incl = warp_scan(s);
    if (lane == 31)
        sh.scan[0][warp] = incl;
    __syncthreads();
    const u64 wincl = warp_scan(lane < warps ? sh.scan[0][lane] : 0);
    const u64 wbefore = __shfl_sync(kFull, wincl, (warp + 31) & 31);
    __syncthreads();
    return (warp ? wbefore : 0) + incl - s;
}

/* Append (key, i) of the lanes with `mine` to keys/idxs through the shared counter *count
 * (ballot + one atomic per warp; the order of the entries does not matter to anyone reading
 * them). The counter keeps counting past kGather, so count > kGather says the list overflowed.
 * All 32 lanes call it. */
__device__ __forceinline__ void append_token(uint32_t key, int i, bool mine, uint32_t *keys,
                                             uint32_t *idxs, unsigned *count)
{
    const int lane = threadIdx.x & 31;
    const unsigned ballot = __ballot_sync(kFull, mine);
    if (ballot) {
        unsigned base = 0;
        if (lane == 0)
            base = atomicAdd(count, (unsigned)__popc(ballot));
        base = __shfl_sync(kFull, base, 0);
        const unsigned slot = base + __popc(ballot & ((1u << lane) - 1u));
        if (mine && slot < (unsigned)kGather) {
            keys[slot] = key;
            idxs[slot] = (uint32_t)i;
        }
    }
}

/* Append the tokens with take(key) to keys/idxs through the shared counter *count. */
template <class R, class Take>
__device__ __forceinline__ void gather_into(const R &row, Take take, uint32_t *keys,
                                            uint32_t *idxs, unsigned *count)
{
    row.each([&](float v, int i, bool in_row) {
        const uint32_t key = tkp_order_key(v);
        append_token(key, i, in_row && take(key), keys, idxs, count);
    });
}

/* Scan [from .. n) of the row's local elements for the inverse-CDF crossing over B(lo) in
 * index order, on top of the prefix `running` of every B(lo) token before them: tile by tile,
 * a block scan of the tile's weights; the one token with prefix-before <= t < prefix-after
 * writes itself to sh.cand / sh.cand_pos; the scan stops after the tile where the running
 * prefix passes t. The next tile is loaded before the current one is scanned. One barrier per
 * tile: the warp totals alternate between two buffers, and a buffer is rewritten only after
 * the barrier of the tile between, which every thread reaches after reading it. */
template <class R>
__device__ void scan_pick(const R &row, float max, uint64_t lo, uint64_t t, uint64_t running)
{
    constexpr int threads = R::kThreads, tile = 4 * threads, warps = threads / 32;
    auto &sh = row.sh;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t4 = 4 * (int)threadIdx.x;
    float v[4], nv[4];
    row.quad(t4, v);
    int parity = 0;
    for (int base = 0; base < row.n; base += tile) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            nv[j] = -INFINITY;
        if (base + tile < row.n)
            row.quad(base + tile + t4, nv);
        uint64_t w[4], s = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int i = row.begin + base + t4 + j;
            w[j] = rej_pos(tkp_order_key(v[j]), i) < lo ? row.weight(v[j], i, max) : 0;
            s += w[j];
        }
        const u64 incl = warp_scan(s);
        if (lane == 31)
            sh.scan[parity][warp] = incl;
        __syncthreads();
        const u64 wincl = warp_scan(lane < warps ? sh.scan[parity][lane] : 0);
        const u64 wbefore = __shfl_sync(kFull, wincl, (warp + 31) & 31);
        const u64 tile_total = __shfl_sync(kFull, wincl, 31);
        uint64_t before = running + (warp ? wbefore : 0) + (incl - s);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (before <= t && before + w[j] > t) {
                const int i = row.begin + base + t4 + j;
                sh.cand = i;
                sh.cand_pos = rej_pos(tkp_order_key(v[j]), i);
            }
            before += w[j];
        }
        running += tile_total;
        parity ^= 1;
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = nv[j];
        if (running > t) /* the same in every thread */
            break;
    }
}

/* The tokens of a row as one CTA sees them, and how a pass's integers are reduced.
 * CLUSTER = false: the whole row, read from global memory, reduced over the block.
 * CLUSTER = true: this CTA's slice [begin, begin + n) in shared memory, reduced over the block
 * and then over the cluster (every CTA gets the cluster-wide numbers). */
template <int THREADS, bool CLUSTER> struct Row {
    static constexpr int kThreads = THREADS;
    static constexpr bool kCluster = CLUSTER;
    Shared<THREADS> &sh;
    ClusterShared *cx;           /* cluster: what this CTA publishes */
    const float *__restrict__ x; /* the row in global memory */
    const float *xs;             /* cluster: the slice, padded with -inf to a multiple of 4 */
    uint32_t *wc;                /* cluster: the slice's weights as floats, once cached */
    int vocab, begin, n;         /* this CTA passes over elements [begin, begin + n) */
    bool vec;                    /* the row in global memory is 16-byte aligned */
    bool cached;                 /* cluster: wc holds the weights */
    unsigned rank, size;         /* rank in the cluster, cluster size (0 / 1 without) */
    int parity;                  /* cluster: the next xchg buffer */

    __device__ bool leader() const { return rank == 0; }

    /* Local elements j .. j+3 (j a multiple of 4); past the slice or the row: -inf. */
    __device__ __forceinline__ void quad(int j, float v[4]) const
    {
        if constexpr (CLUSTER) {
            if (j < n) {
                unpack4(*reinterpret_cast<const float4 *>(xs + j), v);
            } else {
#pragma unroll
                for (int k = 0; k < 4; k++)
                    v[k] = -INFINITY;
            }
        } else {
            load4(x, vocab, vec, j, v);
        }
    }

    /* Call f(value, index, in_row) for local elements [from, to), kReduceUnroll tiles of
     * 4 * THREADS elements at a time (thread t holds elements 4t .. 4t+3 of each tile). The
     * trip count is the same in every thread and f runs with the whole warp converged (f may
     * use warp collectives). */
    template <class F>
    __device__ __forceinline__ void each(F &&f, int from = 0, int to = 0x7FFFFFFF) const
    {
        each_tile([&](const float (&v)[kReduceUnroll][4], int l0) {
#pragma unroll
            for (int u = 0; u < kReduceUnroll; u++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int l = l0 + u * 4 * THREADS + j;
                    f(v[u][j], begin + l, l < n);
                }
        }, from, to);
    }

    /* Call f(v, l0) once per kReduceUnroll tiles of local elements [from, to): v[u][j] is
     * local element l0 + u * 4 * THREADS + j (-inf past the slice or the row). The trip count
     * is the same in every thread. */
    template <class F>
    __device__ __forceinline__ void each_tile(F &&f, int from = 0, int to = 0x7FFFFFFF) const
    {
        constexpr int tile = 4 * THREADS;
        const int t4 = 4 * (int)threadIdx.x;
        const int stop = to < n ? to : n;
        for (int base = from; base < stop; base += kReduceUnroll * tile) {
            float v[kReduceUnroll][4];
#pragma unroll
            for (int u = 0; u < kReduceUnroll; u++)
                quad(base + u * tile + t4, v[u]);
            f(v, base + t4);
        }
    }

    /* The fixed-point weight of the element of value v at row index i (this CTA's, or the
     * -inf padding past its slice: a pass asks for it when a pivot lies past REJ_END, which
     * the second pivot of a candidate before `hi` does; that round accepts the candidate). */
    __device__ __forceinline__ uint64_t weight(float v, int i, float max) const
    {
        if constexpr (CLUSTER) {
            if (cached)
                return i - begin < n ? tkp_fix_of(__uint_as_float(wc[i - begin])) : 0;
        }
        return tkp_weight(v, max);
    }

    /* Cluster: copy the slice from global memory into shared memory (all loads of a thread
     * in flight at once), padded with -inf to a multiple of 4. */
    __device__ void load_slice()
    {
        static_assert(CLUSTER, "only a cluster's CTA holds a slice");
        const int n4 = (n + 3) & ~3;
        constexpr int batch = 4;
        float *dst = const_cast<float *>(xs);
        for (int base = 0; base < n4; base += batch * 4 * THREADS) {
            float v[batch][4];
#pragma unroll
            for (int u = 0; u < batch; u++)
                load4(x + begin, n, vec, base + u * 4 * THREADS + 4 * (int)threadIdx.x, v[u]);
#pragma unroll
            for (int u = 0; u < batch; u++) {
                const int j = base + u * 4 * THREADS + 4 * (int)threadIdx.x;
                if (j < n4)
                    *reinterpret_cast<float4 *>(dst + j) = make_float4(v[u][0], v[u][1],
                                                                       v[u][2], v[u][3]);
            }
        }
        __syncthreads();
    }

    /* Cluster: cache the slice's weights (the rounds over the row read them in every pass). */
    __device__ void cache_weights(float max)
    {
        if constexpr (CLUSTER) {
            for (int j = threadIdx.x; j < n; j += THREADS)
                wc[j] = __float_as_uint(tkp_weight_float(xs[j], max));
            cached = true;
            __syncthreads();
        }
    }

    /* Exact sums of a, b, c over the row (every thread gets them). */
    __device__ void sum3(u64 &a, u64 &b, u64 &c)
    {
        block_sum3(sh, a, b, c);
        if constexpr (!CLUSTER)
            return;
        const u64 *mine = publish(a, b, c);
        const unsigned lane = threadIdx.x & 31;
        const u64 *peer = lane < size ? cg::this_cluster().map_shared_rank(mine, lane) : nullptr;
        a = warp_sum(peer ? peer[0] : 0);
        b = warp_sum(peer ? peer[1] : 0);
        c = warp_sum(peer ? peer[2] : 0);
    }

    /* The sum of a and the maximum of m over the row. */
    __device__ void sum_max(u64 &a, u64 &m)
    {
        block_sum_max(sh, a, m);
        if constexpr (!CLUSTER)
            return;
        const u64 *mine = publish(a, m, 0);
        const unsigned lane = threadIdx.x & 31;
        const u64 *peer = lane < size ? cg::this_cluster().map_shared_rank(mine, lane) : nullptr;
        a = warp_sum(peer ? peer[0] : 0);
        m = warp_max(peer ? peer[1] : 0);
    }

    /* Cluster: publish this CTA's block sums (the same in every thread) and wait for every
     * CTA's; returns the local buffer (map it to a rank to read that rank's). */
    __device__ const u64 *publish(u64 a, u64 b, u64 c)
    {
        u64 *buf = cx->xchg[parity];
        parity ^= 1;
        if (threadIdx.x == 0) {
            buf[0] = a;
            buf[1] = b;
            buf[2] = c;
        }
        cg::this_cluster().sync();
        return buf;
    }

    /* The row's histogram of nbins buckets from this CTA's sh.hist (complete and visible to
     * the block; with `synced`, a cluster barrier has passed since it was complete). Cluster:
     * a reduce-scatter (CTA q sums its share of the buckets over every CTA) and an all-gather,
     * into cx->hist_all; sh.hist is not read by others after this returns. */
    __device__ unsigned *hist_total(int nbins, bool synced)
    {
        if constexpr (!CLUSTER)
            return sh.hist;
        cg::cluster_group cl = cg::this_cluster();
        if (!synced)
            cl.sync();
        const int share = nbins / (int)size;
        for (int j = threadIdx.x; j < share; j += THREADS) {
            const int b = (int)rank * share + j;
            unsigned s = 0;
#pragma unroll
            for (int q = 0; q < kMaxCluster; q++)
                if (q < (int)size)
                    s += cl.map_shared_rank(sh.hist, q)[b];
            cx->hist_part[b] = s;
        }
        cl.sync();
        for (int b = threadIdx.x; b < nbins; b += THREADS)
            cx->hist_all[b] = cl.map_shared_rank(cx->hist_part, b / share)[b];
        __syncthreads();
        return cx->hist_all;
    }

    /* The row's mass per bin of the mass floor into sh.mass_all, from every CTA's
     * sh.mass_hist (complete: a (cluster) barrier has passed since). Cluster: summed through
     * distributed shared memory, then a cluster barrier, after which sh.mass_hist is not read
     * by others. */
    __device__ void mass_hist_total()
    {
        if constexpr (!CLUSTER) {
            for (int b = threadIdx.x; b < TKP_MASS_BINS; b += THREADS)
                sh.mass_all[b] = sh.mass_hist[b];
        } else {
            cg::cluster_group cl = cg::this_cluster();
            for (int b = threadIdx.x; b < TKP_MASS_BINS; b += THREADS) {
                u64 sum = 0;
#pragma unroll
                for (int q = 0; q < kMaxCluster; q++)
                    if (q < (int)size)
                        sum += cl.map_shared_rank(sh.mass_hist, q)[b];
                sh.mass_all[b] = sum;
            }
            cl.sync();
        }
        __syncthreads();
    }

    /* Every token of the row with a key in bucket >= `bucket` into sh.g_key / sh.g_idx
     * (sh.gcount of them). Cluster: each CTA gathers its slice, then copies every CTA's list. */
    __device__ void gather(unsigned bucket)
    {
        gather_if([bucket](uint32_t key) { return (key >> kBucketShift) >= bucket; });
    }

    /* Every token of the row with a key >= `least` into sh.g_key / sh.g_idx (as gather). */
    __device__ void gather_from_key(uint32_t least)
    {
        gather_if([least](uint32_t key) { return key >= least; });
    }

    /* Every token of the row with take(key) into sh.g_key / sh.g_idx (as gather). */
    template <class Take> __device__ void gather_if(Take take)
    {
        if constexpr (!CLUSTER) {
            if (threadIdx.x == 0)
                sh.gcount = 0;
            __syncthreads();
            gather_into(*this, take, sh.g_key, sh.g_idx, &sh.gcount);
            __syncthreads();
            return;
        }
        cg::cluster_group cl = cg::this_cluster();
        if (threadIdx.x == 0)
            cx->st_count = 0;
        __syncthreads();
        gather_into(*this, take, cx->st_key, cx->st_idx, &cx->st_count);
        cl.sync();
        const unsigned lane = threadIdx.x & 31;
        const u64 cnt = lane < size ? *cl.map_shared_rank(&cx->st_count, lane) : 0;
        const u64 incl = warp_scan(cnt);
        for (int q = 0; q < (int)size; q++) {
            const int nq = (int)__shfl_sync(kFull, cnt, q);
            const int off = (int)__shfl_sync(kFull, incl - cnt, q);
            const uint32_t *rk = cl.map_shared_rank(cx->st_key, q);
            const uint32_t *ri = cl.map_shared_rank(cx->st_idx, q);
            for (int i = threadIdx.x; i < nq; i += THREADS)
                if (off + i < kGather) {
                    sh.g_key[off + i] = rk[i];
                    sh.g_idx[off + i] = ri[i];
                }
        }
        const unsigned total = (unsigned)__shfl_sync(kFull, incl, 31);
        if (threadIdx.x == 0)
            sh.gcount = total;
        __syncthreads();
    }

    /* Inverse CDF over the candidate set B(lo) of exact mass `mass` > 0, in index order
     * (rej_pick): the first token whose inclusive prefix exceeds t = floor(u * mass / 2^64).
     * Cluster: the B(lo) mass of every slice, in rank order, tells which CTA's slice holds
     * the crossing; that CTA scans it on top of the mass of the slices before. */
    __device__ void pick(float max, uint64_t lo, uint64_t mass, uint64_t u, int &c, uint64_t &pc)
    {
        const uint64_t t = tkp_scale_u64(u, mass);
        if constexpr (!CLUSTER) {
            if (threadIdx.x == 0) { /* the CPU's answer when nothing crosses (t < mass) */
                sh.cand = vocab - 1;
                sh.cand_pos = rej_pos(tkp_order_key(x[vocab - 1]), vocab - 1);
            }
            scan_pick(*this, max, lo, t, 0);
            __syncthreads();
            c = sh.cand;
            pc = sh.cand_pos;
            __syncthreads(); /* everyone has read sh.cand before the next pick rewrites it */
            return;
        }
        cg::cluster_group cl = cg::this_cluster();
        u64 s = 0, unused1 = 0, unused2 = 0;
        each([&](float v, int i, bool) {
            if (rej_pos(tkp_order_key(v), i) < lo)
                s += weight(v, i, max);
        });
        block_sum3(sh, s, unused1, unused2);
        const u64 *mine = publish(s, 0, 0);
        const unsigned lane = threadIdx.x & 31;
        const u64 sq = lane < size ? cl.map_shared_rank(mine, lane)[0] : 0;
        const u64 incl = warp_scan(sq), before = incl - sq;
        const unsigned hit = __ballot_sync(kFull, lane < size && before <= t && t < incl);
        const int finder = hit ? __ffs(hit) - 1 : -1; /* exactly one CTA: t < mass */
        const u64 running = __shfl_sync(kFull, before, finder < 0 ? 0 : finder);
        if (finder == (int)rank)
            scan_pick(*this, max, lo, t, running); /* only this CTA: block barriers only */
        cl.sync(); /* the finder's sh.cand is written; it is rewritten only two barriers on */
        if (finder >= 0) {
            const Shared<THREADS> *fsh = cl.map_shared_rank(&sh, finder);
            c = fsh->cand;
            pc = fsh->cand_pos;
        } else {
            c = vocab - 1;
            pc = rej_pos(tkp_order_key(x[vocab - 1]), vocab - 1);
        }
    }
};

/* Count and fixed-point mass of the valid tokens before pivots a and b (rej_tally2). */
typedef struct rej_tally Tally;

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
        unsigned run = (unsigned)warp_scan(s) - s;
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
            m = warp_sum(m);
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
    unsigned run = (unsigned)block_excl_scan(sh, s);
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
template <int THREADS>
__device__ void pick_small(Shared<THREADS> &sh, const float *__restrict__ x, int vocab,
                           uint64_t lo, uint64_t mass, uint64_t u, int &c, uint64_t &pc)
{
    constexpr int per = kSmall / THREADS;
    const int n = sh.nsmall, j0 = per * (int)threadIdx.x;
    const uint64_t t = tkp_scale_u64(u, mass);
    if (threadIdx.x == 0) { /* the CPU's answer when nothing crosses (impossible: t < mass) */
        sh.cand = vocab - 1;
        sh.cand_pos = rej_pos(tkp_order_key(x[vocab - 1]), vocab - 1);
    }
    uint64_t w[per], s = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        w[j] = j0 + j < n && sh.s_pos[j0 + j] < lo ? sh.s_w[j0 + j] : 0;
        s += w[j];
    }
    uint64_t before = block_excl_scan(sh, s); /* its barriers order thread 0's default */
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
    block_sum3(sh, counts, ma, mb);
    ta.count = (int64_t)(counts & 0xFFFFFFFFu);
    ta.mass = ma;
    tb.count = (int64_t)(counts >> 32);
    tb.mass = mb;
}

/* Keep only the listed tokens (sh.g_key / sh.g_idx, sh.gcount <= kGather of them) whose
 * bucket is >= `bucket`, `kept` of them (the histogram's count of those buckets): a block scan
 * gives each thread where its entries go. Called after a barrier that made the list visible;
 * ends with a barrier. */
template <int THREADS>
__device__ void keep_from_bucket(Shared<THREADS> &sh, unsigned bucket, unsigned kept)
{
    constexpr int per = kGather / THREADS;
    const int n = (int)sh.gcount, j0 = per * (int)threadIdx.x;
    uint32_t key[per], idx[per];
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        key[j] = j0 + j < n ? sh.g_key[j0 + j] : 0;
        idx[j] = j0 + j < n ? sh.g_idx[j0 + j] : 0;
        c += j0 + j < n && (key[j] >> kBucketShift) >= bucket;
    }
    unsigned at = (unsigned)block_excl_scan(sh, c); /* every entry is read before it returns */
#pragma unroll
    for (int j = 0; j < per; j++)
        if (j0 + j < n && (key[j] >> kBucketShift) >= bucket) {
            sh.g_key[at] = key[j];
            sh.g_idx[at] = idx[j];
            at++;
        }
    if (threadIdx.x == 0)
        sh.gcount = kept;
    __syncthreads();
}

/* The first candidate set from the listed tokens (sh.g_key / sh.g_idx, n of them): the n0 with
 * a key >= least, stored in shared memory in index order (rank by index) with their positions
 * and weights when n0 <= kSmall; sh.nsmall says so (0: not stored). Ends with a barrier. */
template <int THREADS>
__device__ void store_small(Shared<THREADS> &sh, int n, uint32_t least, int n0, float max)
{
    if (n0 <= kSmall) {
        for (int i = threadIdx.x; i < n; i += THREADS) {
            const uint32_t ki = sh.g_key[i];
            if (ki < least)
                continue;
            const uint32_t ii = sh.g_idx[i];
            int rank = 0;
            for (int j = 0; j < n; j++)
                rank += sh.g_key[j] >= least && sh.g_idx[j] < ii;
            if (rank < kSmall) { /* always (n0 <= kSmall of them); a guard for the callers */
                sh.s_pos[rank] = rej_pos(ki, ii);
                sh.s_w[rank] = tkp_weight(tkp_key_value(ki), max);
            }
        }
    }
    if (threadIdx.x == 0)
        sh.nsmall = n0 <= kSmall ? n0 : 0;
    __syncthreads();
}

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
    u64 c = 0, unused1 = 0, unused2 = 0;
    for (int i = threadIdx.x; i < n && n <= kGather; i += R::kThreads)
        c += sh.g_key[i] >= least;
    block_sum3(sh, c, unused1, unused2); /* ends with a barrier */
    store_small(sh, n <= kGather ? n : 0, least, n <= kGather ? (int)c : kSmall + 1, max);
}

/* Top-k-then-top-p from the gathered tokens (sh.g_key / sh.g_idx, sh.gcount <= kGather of
 * them: every token of the k-th key's bucket and above): the k-th key K (the one with fewer
 * than k larger keys and at least k keys >= it), the counts above and equal to it and the mass
 * above it (exact integers, so rej_kth_key's and rej_prepare's numbers). When the first
 * candidate set (keys >= K) has at most kSmall tokens, they are stored in index order (rank by
 * index) with their positions and weights, and sh.nsmall says so. Returns K; above/ties/
 * mass_above by reference. Every CTA of a cluster computes the same from the same list. */
template <int THREADS>
__device__ uint32_t select_gathered(Shared<THREADS> &sh, unsigned bucket, float max,
                                    int64_t k_limit, uint64_t &above, uint64_t &ties,
                                    uint64_t &mass_above)
{
    const int n = (int)sh.gcount; /* = gabove + ties of the bucket, <= kGather */
    /* K: only a key of the bucket can be it. */
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const uint32_t ki = sh.g_key[i];
        if ((ki >> kBucketShift) != bucket)
            continue;
        int64_t gt = 0, eq = 0;
        for (int j = 0; j < n; j++) {
            const uint32_t kj = sh.g_key[j];
            gt += kj > ki;
            eq += kj == ki;
        }
        if (gt < k_limit && gt + eq >= k_limit)
            sh.kth = ki; /* every writer writes the same key */
    }
    __syncthreads();
    const uint32_t kth = sh.kth;
    u64 a = 0, t = 0, m = 0;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const uint32_t ki = sh.g_key[i];
        a += ki > kth;
        t += ki == kth;
        m += ki > kth ? tkp_weight(tkp_key_value(ki), max) : 0;
    }
    block_sum3(sh, a, t, m); /* ends with a barrier */
    above = a;
    ties = t;
    mass_above = m;
    store_small(sh, n, kth, (int)(a + t), max);
    return kth;
}

/* Pass 1 of one CTA over local elements [from, n) with float compares instead of order keys
 * (the tokens at or above a bucket bound are a few per cent): the number of valid tokens and
 * the largest order key into vcount / kmax; the tokens >= fthr (tkp_key_floor of the bound;
 * NaN for none) counted in sh.hist by bucket and appended to the list sh.g_key / sh.g_idx
 * (one atomic per warp, sh.gcount counting past kGather on overflow). Per value: an add, a
 * compare and a max; the valid count is exact (a sum >= -FLT_MAX proves its 16 terms valid:
 * NaN and -inf propagate; otherwise they are counted one by one). */
template <class R>
__device__ __forceinline__ void scan_fast(const R &row, float fthr, int from, uint32_t &vcount,
                                          uint32_t &kmax)
{
    static_assert(!R::kCluster, "a cluster's slices go through the per-token scan");
    auto &sh = row.sh;
    float vmax = -INFINITY;
    row.each_tile([&](const float (&v)[kReduceUnroll][4], int l0) {
        float sum = 0.0f;
        unsigned c = 0;
#pragma unroll
        for (int u = 0; u < kReduceUnroll; u++) {
            sum += (v[u][0] + v[u][1]) + (v[u][2] + v[u][3]);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                c += v[u][j] >= fthr;
                vmax = fmaxf(vmax, v[u][j]);
            }
        }
        if (sum >= -FLT_MAX) {
            vcount += 4 * kReduceUnroll;
        } else {
#pragma unroll
            for (int u = 0; u < kReduceUnroll; u++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    vcount += v[u][j] >= -FLT_MAX;
        }
        if (__any_sync(kFull, c != 0)) {
            unsigned slot = tkp_warp_reserve(c, &sh.gcount);
#pragma unroll
            for (int u = 0; u < kReduceUnroll; u++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (v[u][j] >= fthr) {
                        const uint32_t key = tkp_order_key(v[u][j]);
                        atomicAdd(&sh.hist[key >> kBucketShift], 1u);
                        if (slot < (unsigned)kGather) {
                            sh.g_key[slot] = key;
                            sh.g_idx[slot] = (uint32_t)(l0 + u * 4 * R::kThreads + j);
                        }
                        slot++;
                    }
        }
    }, from);
    const uint32_t kv = tkp_order_key(vmax); /* NaN (nothing valid seen) and -inf: 0 */
    kmax = kv > kmax ? kv : kmax;
}

/* Prepare the row in shared memory (rej_prepare): the row max, the number of valid tokens,
 * the top-k limit, the first candidate set and its mass, the top-p target. Returns the number
 * of valid tokens and the row max (0 / -inf for a row without a valid token). `count_passes`:
 * this CTA counts the CPU's radix passes (once per row). */
template <class R>
__device__ __forceinline__ u64 prepare_row(R &row, int32_t k, float p, float &max,
                                           bool count_passes)
{
    constexpr int THREADS = R::kThreads;
    auto &sh = row.sh;
    const int vocab = row.vocab;
    /* Pass 1: the largest order key (the row max), the number of valid tokens, and, when the
     * row has top-k (its first candidate set is its top-k set), the histogram of the top
     * kBucketBits key bits. */
    const bool may_select = tkp_topk_on(k, vocab);
    for (int i = threadIdx.x; i < kBuckets; i += THREADS)
        sh.hist[i] = 0;
    if (threadIdx.x == 0)
        sh.nsmall = 0;
    __syncthreads();
    u64 valid = 0, maxkey = 0;
    uint32_t vcount = 0, kmax = 0;
    /* Only buckets at or above `floor` are counted: after the first chunk of the row, floor is
     * the bucket of that chunk's k-th key, a lower bound of the row's k-th key's bucket (so
     * every bucket select_bucket or the radix select reads above it stays exact); warps with
     * no token at or above it skip the histogram. (One CTA per row only: a slice of a cluster
     * is short, and its histogram is summed with the others'.) */
    unsigned floor = 0;
    /* listing: the tokens counted in the histogram (bucket >= floor) are also appended to
     * sh.g_key / sh.g_idx, so that the usual case needs no gathering pass (below). */
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
            } else if (__any_sync(kFull, counted)) {
                hist_add(sh.hist, counted ? key >> kBucketShift : (unsigned)kBuckets, kBuckets);
                if (listing)
                    append_token(key, i, counted, sh.g_key, sh.g_idx, &sh.gcount);
            }
        }
    };
    /* The first chunk, whose k-th key sets the floor: 16384 tokens in either kernel (a
     * multiple of each one's step). At 8192 (one step of the 512-thread kernel) the floor of
     * a flat N(0, 1) row at k = 50 often falls one 11-bit bucket lower (2.0 instead of 2.5)
     * and the list overflows: 42% of V = 128256 rows at 8192, none at 16384 (a simulation of
     * the rule on the CPU). */
    constexpr int chunk = kReduceUnroll * 4 * 1024;
    static_assert(chunk % (kReduceUnroll * 4 * THREADS) == 0,
                  "each_tile stops at whole steps only: the chunk must be a number of them");
    if constexpr (R::kCluster) {
        row.each(scan);
    } else if (may_select && vocab > chunk && k <= chunk) {
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
            append_token(key, i, in_row && (key >> kBucketShift) >= floor, sh.g_key, sh.g_idx,
                         &sh.gcount);
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
    valid = vcount;
    maxkey = kmax;
    row.sum_max(valid, maxkey); /* ends with a (cluster) barrier: the histogram is complete */
    /* Whether the list holds every token of its floor and above, read by every thread here:
     * barriers follow before anyone rewrites sh.gcount (row.gather's thread 0 zeroes it). */
    const bool from_list = listing && sh.gcount <= (unsigned)kGather;
    max = -INFINITY;
    if (valid == 0)
        return 0;
    max = tkp_key_value((uint32_t)maxkey);
    const int64_t k_limit = rej_k_limit(k, vocab, (int64_t)valid);
    uint64_t start = REJ_END, start_mass, set_mass;
    bool selected = false;
    unsigned *hist = nullptr;
    if (rej_starts_at_kth(k_limit, (int64_t)valid)) {
        hist = row.hist_total(kBuckets, true);
        select_bucket(sh, hist, (unsigned)k_limit);
        if (sh.gabove + sh.ties <= (unsigned)kGather) {
            /* The usual case: the tokens of the k-th key's bucket and above in shared memory,
             * the rest done there. They are on the list when pass 1 listed every token of its
             * floor and above (the floor is at most that bucket) without overflowing, else
             * one gathering pass collects them. */
            const unsigned bucket = sh.digit;
            if (from_list)
                keep_from_bucket(sh, bucket, sh.gabove + sh.ties);
            else
                row.gather(bucket);
            uint64_t above, ties, mass_above;
            const uint32_t kth = select_gathered(sh, bucket, max, k_limit, above, ties,
                                                 mass_above);
            const uint64_t kth_weight = tkp_weight(tkp_key_value(kth), max);
            set_mass = mass_above + (uint64_t)(k_limit - (int64_t)above) * kth_weight;
            start = rej_pos(kth, 0xFFFFFFFFu);
            start_mass = mass_above + ties * kth_weight;
            if (threadIdx.x == 0 && count_passes) /* the CPU's radix passes, once per row */
                sh.stat[2] += REJ_DIGIT_PASSES;
            selected = true;
        } else {
            /* A crowded bucket: fold the histogram into the first 8-bit digit's and run the
             * radix select over the row. */
            unsigned s8 = 0;
            if (threadIdx.x < 256)
                for (int j = 0; j < (1 << (kBucketBits - 8)); j++)
                    s8 += hist[(threadIdx.x << (kBucketBits - 8)) + j];
            __syncthreads();
            if (threadIdx.x < 256)
                hist[threadIdx.x] = s8;
            __syncthreads();
        }
    }
    if (selected) {
        /* K, total_S and the first candidate set come from the gathered tokens */
    } else if (rej_starts_at_kth(k_limit, (int64_t)valid)) {
        /* Radix select of the k-th key K (rej_kth_key; digit 1's histogram is ready), then
         * the mass above K: tokens above K in their top 24 bits are summed during the last
         * histogram pass, the others (same top 24 bits, larger last digit) from the last
         * histogram. (Cluster: sh.hist, the local histogram, is free again once hist_total
         * has returned.) */
        uint32_t prefix = 0, mask = 0;
        unsigned rank = (unsigned)k_limit;
        u64 mass_high = 0;
        for (int pass = 1; pass <= REJ_DIGIT_PASSES; pass++) {
            const int shift = 32 - pass * REJ_DIGIT_BITS;
            const bool last = pass == REJ_DIGIT_PASSES;
            if (pass > 1) {
                if (threadIdx.x < 256)
                    sh.hist[threadIdx.x] = 0;
                __syncthreads();
                row.each([&](float v, int, bool in_row) {
                    const uint32_t key = tkp_order_key(v);
                    hist_add(sh.hist,
                             in_row && (key & mask) == prefix ? (key >> shift) & 0xFFu : 256u);
                    if (last && (key >> 8) > (prefix >> 8))
                        mass_high += tkp_weight(v, max);
                });
                if (last) {
                    u64 unused1 = 0, unused2 = 0;
                    row.sum3(mass_high, unused1, unused2);
                } else {
                    __syncthreads();
                }
                hist = row.hist_total(256, last);
            }
            select_digit(sh, hist, rank, last, prefix, max); /* ends with a barrier */
            const unsigned digit = sh.digit;
            rank = sh.rank;
            prefix |= digit << shift;
            mask |= 0xFFu << shift;
        }
        const uint64_t ties = sh.ties, mass_above = mass_high + sh.level_mass;
        const int64_t above = k_limit - (int64_t)rank;
        const uint64_t kth_weight = tkp_weight(tkp_key_value(prefix), max);
        set_mass = mass_above + (uint64_t)(k_limit - above) * kth_weight;
        start = rej_pos(prefix, 0xFFFFFFFFu);
        start_mass = mass_above + ties * kth_weight;
        if (threadIdx.x == 0 && count_passes) /* counted once per row, as on the CPU */
            sh.stat[2] += REJ_DIGIT_PASSES;
        /* a crowded bucket (k = 1000 on N(0, 1) rows) but a first candidate set that fits:
         * one CTA per row takes one gathering pass, and the rounds run in shared memory
         * (V = 128256, k = 1000, p = 0.9: B = 16 232.0 -> 171.2 us, B = 64 261.4 -> 173.0).
         * Not a cluster's rows: there the set's ranking cost more than the rounds over the
         * slices it replaced (B = 1 60.3 -> 82.7 us, B = 4 56.8 -> 81.5; README) */
        if (!R::kCluster && above + (int64_t)ties <= kSmall) {
            row.gather_from_key(prefix);
            store_small(sh, (int)sh.gcount, prefix, (int)(above + (int64_t)ties), max);
        }
    } else {
        /* top-p alone also bins the mass by distance from max (and, one CTA per row, lists
         * the tokens of those bins) for its first candidate set */
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
        start_mass = set_mass = total;
        if (from_floor)
            start_at_mass_floor(row, p, total, max, (uint32_t)maxkey, start, start_mass);
    }
    __syncthreads(); /* every thread has read the radix-select results */
    if (threadIdx.x == 0) {
        sh.k_limit = k_limit;
        sh.target = tkp_topp_target(p, set_mass);
        sh.top = rej_pos((uint32_t)maxkey, 0);
        sh.start = start;
        sh.start_mass = start_mass;
    }
    __syncthreads();
    return valid;
}

/* One draw (rej_draw): a rejection chain of at most max_rounds rounds; round `round` of draw
 * d of row r uses Philox counter d * max_rounds + round, and the last round of the budget
 * samples the exact kept set found by bisection. The chain state is the same in every thread
 * (of the cluster, when the rounds run over a cluster's row). `small`: the first candidate set
 * is in this CTA's shared memory, and every round runs there (no cluster barrier). `count`:
 * this CTA counts the rounds, fallbacks and bisection steps. */
template <class R>
__device__ __forceinline__ int draw_one(R &row, float max, const Params &prm, int r, int d,
                                        bool small, bool count)
{
    auto &sh = row.sh;
    const int rounds = prm.max_rounds;
    uint64_t hi = sh.top, lo = sh.start, mass = sh.start_mass;
    int c = 0;
    for (int round = 0;; round++) {
        const uint32_t counter = (uint32_t)d * (uint32_t)rounds + (uint32_t)round;
        const uint64_t u = tkp_philox_u64(prm.seed, (uint64_t)r, prm.offset, counter);
        if (threadIdx.x == 0 && count)
            sh.stat[0] += 1;
        uint64_t pc;
        if (round == rounds - 1) {
            while (lo - hi > 1) {
                const uint64_t mid = hi + (lo - hi) / 2;
                Tally tm, same;
                if (small)
                    tally2_small(sh, mid, mid, tm, same);
                else
                    tm = tally1(row, max, mid);
                if (rej_kept(tm.count, tm.mass, sh.k_limit, sh.target))
                    hi = mid;
                else
                    lo = mid;
                if (threadIdx.x == 0 && count)
                    sh.stat[2] += 1;
            }
            lo = hi + 1;
            if (threadIdx.x == 0 && count)
                sh.stat[1] += 1;
            if (small) {
                Tally tl, same;
                tally2_small(sh, lo, lo, tl, same);
                pick_small(sh, row.x, row.vocab, lo, tl.mass, u, c, pc);
            } else {
                const Tally tl = tally1(row, max, lo);
                row.pick(max, lo, tl.mass, u, c, pc);
            }
            return c;
        }
        if (small)
            pick_small(sh, row.x, row.vocab, lo, mass, u, c, pc);
        else
            row.pick(max, lo, mass, u, c, pc);
        const uint64_t p1 = rej_second_pivot(hi, pc);
        Tally tc, t1;
        if (small)
            tally2_small(sh, pc, p1, tc, t1);
        else
            tally2(row, max, pc, p1, tc, t1);
        if (rej_round_verdict(tc, t1, pc, p1, sh.k_limit, sh.target, &lo, &hi, &mass))
            return c;
    }
}

/* Row r, group g, on this CTA (rank `row.rank` of a cluster of `row.size`): prepare, draw,
 * write the samples and this CTA's statistics slot. */
template <class R> __device__ void sample_row(R &row, const Params &prm, int r, int g)
{
    auto &sh = row.sh;
    if (threadIdx.x < kStatWords)
        sh.stat[threadIdx.x] = 0; /* thread 0 alone updates them later (after barriers) */
    float max;
    const u64 valid = prepare_row(row, prm.k[r], prm.p[r], max, g == 0 && row.leader());
    int64_t *out = prm.samples + (int64_t)r * prm.draws;
    if (sh.nsmall > 0) {
        /* The first candidate set is in every CTA's shared memory: each runs its own draws. */
        const int step = prm.groups * (int)row.size;
        for (int d = g * (int)row.size + (int)row.rank; d < prm.draws; d += step) {
            const int c = draw_one(row, max, prm, r, d, true, true);
            if (threadIdx.x == 0)
                out[d] = c;
        }
    } else {
        /* Rounds over the row: every CTA of the cluster takes part, the leader counts. */
        if (valid)
            row.cache_weights(max);
        for (int d = g; d < prm.draws; d += prm.groups) {
            const int c = valid ? draw_one(row, max, prm, r, d, false, row.leader()) : -1;
            if (threadIdx.x == 0 && row.leader())
                out[d] = c;
        }
    }
    __syncthreads();
    const int64_t slot = ((int64_t)r * prm.groups + g) * row.size + row.rank;
    if (threadIdx.x < kStatWords)
        prm.stats[slot * kStatWords + threadIdx.x] = sh.stat[threadIdx.x];
}

/* One CTA per row: row blockIdx.x, draws blockIdx.y, blockIdx.y + groups, ... */
template <int THREADS>
__global__ void __launch_bounds__(THREADS, THREADS == 1024 ? 1 : 2)
    rejection_kernel(const Params prm)
{
    __shared__ Shared<THREADS> sh;
    const int r = blockIdx.x;
    const float *__restrict__ x = prm.logits + (int64_t)r * prm.stride;
    Row<THREADS, false> row{ sh,        nullptr, x, nullptr, nullptr, prm.vocab, 0, prm.vocab,
                             ((uintptr_t)x & 15) == 0, false, 0u, 1u, 0 };
    sample_row(row, prm, r, (int)blockIdx.y);
}

/* A cluster of C CTAs per row: row blockIdx.x / C, rank blockIdx.x % C, draws as above. CTA
 * `rank` holds elements [rank * slice, rank * slice + slice) of the row (fewer at the end). */
__global__ void __launch_bounds__(kClusterThreads, 1) rejection_cluster_kernel(const Params prm)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ClusterSmem &cs = *reinterpret_cast<ClusterSmem *>(smem);
    float *xs = reinterpret_cast<float *>(smem + kClusterFixed);
    uint32_t *wc = reinterpret_cast<uint32_t *>(xs + prm.slice);
    cg::cluster_group cl = cg::this_cluster();
    const unsigned size = cl.num_blocks(), rank = cl.block_rank();
    const int r = (int)(blockIdx.x / size);
    const float *__restrict__ x = prm.logits + (int64_t)r * prm.stride;
    const int64_t b64 = (int64_t)rank * prm.slice;
    const int begin = b64 < prm.vocab ? (int)b64 : prm.vocab;
    const int n = prm.vocab - begin < prm.slice ? prm.vocab - begin : prm.slice;
    Row<kClusterThreads, true> row{ cs.sh, &cs.cx, x, xs, wc, prm.vocab, begin, n,
                                    ((uintptr_t)x & 15) == 0, false, rank, size, 0 };
    row.load_slice();
    sample_row(row, prm, r, (int)blockIdx.y);
    cl.sync(); /* no CTA leaves while another may still read its shared memory */
}

int device_sms()
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        sms <= 0) {
        cudaGetLastError();
        sms = 132;
    }
    return sms;
}

/* Tokens per CTA when a row of `vocab` is split over `c` CTAs (a multiple of 4, so every
 * slice of a 16-byte aligned row is 16-byte aligned). */
int64_t slice_of(int64_t vocab, int c) { return tkp_slice_of(vocab, c, 4); }

/* How many clusters of c CTAs with this slice can run at once (0: none, or no clusters). */
int active_clusters(int c, int64_t slice)
{
    return tkp_active_clusters(rejection_cluster_kernel, c, kClusterThreads,
                               cluster_smem_bytes((int)slice));
}

/* The cluster size for a problem: the smallest C in 2, 4, 8, 16 whose slices fit in shared
 * memory and hold at least kMinSlice tokens, that runs the whole batch in one wave, and, for
 * C >= 4, whose batch takes at most half the SMs; 1 (one CTA per row) otherwise. Measured on
 * the H200 (README "Cluster variant"): every cluster barrier and exchange costs more with more
 * CTAs, so the smallest cluster whose slice fits wins (B = 1, V = 128256: 8 CTAs 26.8 us, 16
 * CTAs 32.4); clusters of 4 or more CTAs filling the device lose to smaller ones or to one CTA
 * per row (B = 16, V = 128256: 8 CTAs 51.4 us, one CTA 43.9). forced (TKP_REJ_CLUSTER, 0 when
 * unset) takes that size at any vocabulary whose slice fits and the device holds, else one CTA
 * per row (for tests). *active gets the number of co-resident clusters of that size. */
int choose_cluster(const struct tkp_problem *pb, int forced, int *active)
{
    *active = 0;
    int dev = 0, major = 0;
    if (pb->batch <= 0 || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        major < 9) {
        (void)cudaGetLastError();
        return 1;
    }
    if (forced == 1)
        return 1;
    /* The largest slice's shared memory once for all plans (the attribute is per kernel). */
    if (cudaFuncSetAttribute(rejection_cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)cluster_smem_bytes(kSliceCap)) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    if (cudaFuncSetAttribute(rejection_cluster_kernel,
                             cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        (void)cudaGetLastError(); /* then 16 reports no capacity and is never chosen */
    const int sms = device_sms();
    for (int c = 2; c <= kMaxCluster; c <<= 1) {
        const int64_t slice = slice_of(pb->vocab, c);
        if (slice > kSliceCap || (forced && forced != c))
            continue;
        if (!forced && (pb->vocab < (int64_t)c * kMinSlice ||
                        !tkp_cluster_leaves_half(c, pb->batch, sms)))
            continue;
        const int n = active_clusters(c, slice);
        if (n >= 1 && (forced || n >= pb->batch)) {
            *active = n;
            return c;
        }
    }
    return 1;
}

} // namespace

extern "C" void rej_gpu_plan_for(const struct tkp_problem *pb, int forced_cluster,
                                 struct rej_gpu_plan *plan)
{
    const int64_t sms = device_sms();
    int active = 0;
    plan->cluster = choose_cluster(pb, forced_cluster, &active);
    int64_t groups;
    if (plan->cluster > 1) {
        /* Small batches: a cluster per row (and per group of draws, while clusters fit). */
        plan->threads = kClusterThreads;
        plan->slice = (int)slice_of(pb->vocab, plan->cluster);
        plan->smem = cluster_smem_bytes(plan->slice);
        groups = active / (pb->batch > 0 ? pb->batch : 1);
    } else {
        /* More rows than SMs: 512-thread CTAs, two per SM, so one CTA's barriers overlap the
         * other's loads and up to 2 x SMs rows run in one wave (1024-thread CTAs took two:
         * H200, V = 128256, peaked, B = 256 97.9 us with 1024 threads, 83.0 with 512); at most
         * one row per SM: 1024 threads per row and several CTAs per row when there are draws
         * enough to fill the SMs. */
        plan->threads = pb->batch > sms ? 512 : 1024;
        plan->slice = 0;
        plan->smem = 0;
        groups = pb->batch > 0 ? (sms + pb->batch - 1) / pb->batch : 1;
    }
    if (groups > pb->draws)
        groups = pb->draws;
    if (groups < 1)
        groups = 1;
    if (groups > 65535)
        groups = 65535;
    plan->groups = (int)groups;
    plan->slots = pb->batch * groups * plan->cluster;
    plan->workspace = sizeof(u64) * kStatWords * (size_t)(plan->slots > 0 ? plan->slots : 1);
}

extern "C" int rej_gpu_run(const struct tkp_problem *pb, const struct rej_gpu_plan *plan,
                           int max_rounds, const struct tkp_io *io, void *workspace, void *stream,
                           struct tkp_error *err)
{
    if (!io->samples || pb->batch <= 0)
        return TKP_OK;
    Params prm;
    prm.logits = io->logits;
    prm.k = io->k;
    prm.p = io->p;
    prm.samples = io->samples;
    prm.stats = (u64 *)workspace;
    prm.seed = io->seed;
    prm.offset = io->offset;
    prm.stride = pb->stride;
    prm.vocab = (int)pb->vocab;
    prm.draws = pb->draws;
    prm.max_rounds = max_rounds;
    prm.groups = plan->groups;
    prm.slice = plan->slice;
    cudaStream_t s = (cudaStream_t)stream;
    if (plan->cluster > 1) {
        TKP_CUDA_TRY(tkp_launch_cluster(rejection_cluster_kernel, plan->cluster,
                                        dim3((unsigned)(pb->batch * plan->cluster),
                                             (unsigned)plan->groups),
                                        dim3(kClusterThreads), plan->smem, s, prm),
                     err);
    } else {
        const dim3 grid((unsigned)pb->batch, (unsigned)plan->groups);
        if (plan->threads == 512)
            rejection_kernel<512><<<grid, 512, 0, s>>>(prm);
        else
            rejection_kernel<1024><<<grid, 1024, 0, s>>>(prm);
    }
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

extern "C" int rej_gpu_stats(const struct rej_gpu_plan *plan, const void *workspace, void *stream,
                             struct tkp_stats *out)
{
    const size_t words = (size_t)plan->slots * kStatWords;
    u64 *host = (u64 *)malloc(sizeof(u64) * (words ? words : 1));
    if (!host)
        return -1;
    if (cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess ||
        cudaMemcpy(host, workspace, sizeof(u64) * words, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        free(host);
        return -1;
    }
    double rounds = 0, iterations = 0;
    int64_t fallbacks = 0;
    for (int64_t i = 0; i < plan->slots; i++) {
        rounds += (double)host[i * kStatWords];
        fallbacks += (int64_t)host[i * kStatWords + 1];
        iterations += (double)host[i * kStatWords + 2];
    }
    out->rounds = rounds;
    out->fallbacks = fallbacks;
    out->iterations = iterations;
    free(host);
    return 0;
}

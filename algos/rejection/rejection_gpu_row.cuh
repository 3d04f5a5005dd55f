/* rejection_gpu_row.cuh — the row policy of the CUDA rejection sampler, Row<E, THREADS, CLUSTER,
 * BIG>: says where a CTA's tokens come from (the row in global memory, or a cluster CTA's slice in
 * shared memory) and how a pass's integers are reduced (over the block, then over the cluster
 * through distributed shared memory). Also the loads (load4; load8, one 16-byte load of eight
 * 16-bit values), the token list append and the inverse-CDF scan that the policy's gather and pick
 * are built on. README.md ("GPU", "Cluster variant", "16-bit logits") describes both variants and
 * the loads. */
#ifndef REJECTION_GPU_ROW_CUH
#define REJECTION_GPU_ROW_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "../common/gpu_block.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "rejection_gpu_types.cuh"
#include "rejection_rules.h"

namespace rej_gpu {

namespace cg = cooperative_groups;

__device__ __forceinline__ void unpack4(float4 q, float v[4])
{
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}

/* Four consecutive logits i .. i+3 of a row of n elements of type E (i a multiple of 4; vec:
 * the row starts a four-element vector, tkp_vec4_ok), converted exactly to float32
 * (docs/SEMANTICS.md, "16-bit logits"); past the row: -inf, which has order key 0, weight 0
 * and a position >= REJ_END. */
template <class E>
__device__ __forceinline__ void load4(const void *__restrict__ x, int n, bool vec, int i,
                                      float v[4])
{
    if (vec && i + 3 < n) {
        unpack4(tkp_load4<E>(x, i), v);
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = i + j < n ? tkp_load1<E>(x, i + j) : -INFINITY;
    }
}

/* Eight consecutive logits i .. i+7 (i a multiple of 8) into v0 (i .. i+3) and v1 (i+4 ..
 * i+7): one 16-byte load (a uint4 of eight 16-bit values, tkp_load16) when the row starts at
 * a 16-byte boundary (vec16) and the eight are in the row, else load4 twice (8-byte loads or
 * one by one, -inf past the row). Converted exactly, as load4. */
template <class E>
__device__ __forceinline__ void load8(const void *__restrict__ x, int n, bool vec16, bool vec,
                                      int i, float v0[4], float v1[4])
{
    if (vec16 && i + 7 < n) {
        const typename E::vec16 w = tkp_load16<E>(x, i);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v0[j] = tkp_vec16_get<E>(w, j);
            v1[j] = tkp_vec16_get<E>(w, 4 + j);
        }
    } else {
        load4<E>(x, n, vec, i, v0);
        load4<E>(x, n, vec, i + 4, v1);
    }
}

/* Append (key, i) of the lanes with `mine` to keys/idxs (room for `cap` entries) through the
 * shared counter *count (ballot + one atomic per warp; the order of the entries does not
 * matter to anyone reading them). The counter keeps counting past cap, so count > cap says
 * the list overflowed. All 32 lanes call it. */
__device__ __forceinline__ void append_token(uint32_t key, int i, bool mine, uint32_t *keys,
                                             uint32_t *idxs, unsigned *count,
                                             unsigned cap = kGather)
{
    const int lane = threadIdx.x & 31;
    const unsigned ballot = __ballot_sync(kTkpFullWarp, mine);
    if (ballot) {
        unsigned base = 0;
        if (lane == 0)
            base = atomicAdd(count, (unsigned)__popc(ballot));
        base = __shfl_sync(kTkpFullWarp, base, 0);
        const unsigned slot = base + __popc(ballot & ((1u << lane) - 1u));
        if (mine && slot < cap) {
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
    const int t4 = 4 * (int)threadIdx.x;
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
        u64 tile_total;
        uint64_t before =
            running + tkp_block_excl_scan_total<warps>((u64)s, sh.scan[parity], tile_total);
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
template <class E, int THREADS, bool CLUSTER, bool BIG = false> struct Row {
    static constexpr int kThreads = THREADS;
    static constexpr bool kCluster = CLUSTER;
    static constexpr bool kBig = BIG; /* launched with pass 1's big list (sh.list_cap > kGather) */
    /* Tiles in flight per thread in scan_fast (pass 1's float-compare scan of the row in
     * global memory): as many bytes as float32's kReduceUnroll tiles, so twice the tiles for
     * 16-bit elements. */
    static constexpr int kFastUnroll = kReduceUnroll * 4 / tkp_elem_bytes<E>();
    /* each_tile reads pairs of tiles with one 16-byte load of eight values per thread (a row
     * of 16-bit elements in global memory): thread t holds elements 8t .. 8t+7 of a pair,
     * elements 8t .. 8t+3 in the pair's first tile's slot, 8t+4 .. 8t+7 in the second's.
     * Otherwise (float32, or a cluster's float32 slice) one float4 of tile u at 4t .. 4t+3. */
    static constexpr bool kOct = !CLUSTER && tkp_vec16_elems<E>() == 8;
    /* Where tile slot u of each_tile's v starts, relative to its l0. */
    __host__ __device__ static constexpr int tile_off(int u)
    {
        return kOct ? (u >> 1) * 8 * THREADS + (u & 1) * 4 : u * 4 * THREADS;
    }
    Shared<THREADS> &sh;
    ClusterShared *cx;          /* cluster: what this CTA publishes */
    const void *__restrict__ x; /* the row in global memory, elements of type E */
    const float *xs;            /* cluster: the slice as float32, -inf padded to 4k tokens */
    uint32_t *wc;               /* cluster: the slice's weights as floats, once cached */
    int vocab, begin, n;        /* this CTA passes over elements [begin, begin + n) */
    bool vec;                   /* the row in global memory starts a vector (tkp_vec4_ok) */
    bool cached;                /* cluster: wc holds the weights */
    unsigned rank, size;        /* rank in the cluster, cluster size (0 / 1 without) */
    int parity;                 /* cluster: the next xchg buffer */

    __device__ bool leader() const { return rank == 0; }

    /* Pass 1's list of the tokens at or above its bound (one CTA per row): the dynamic shared
     * memory's big list in a kernel launched with one (BIG: sh.list_cap > kGather of room),
     * else sh.g_key / g_idx with kGather of room. Which one is known at compile time, so that
     * appending a token loads neither the room nor the arrays' place (README.md, "Pass 1's
     * list known at compile time"). */
    __device__ __forceinline__ uint32_t *list_key() const
    {
        if constexpr (BIG)
            return rej_big_list;
        else
            return sh.g_key;
    }
    __device__ __forceinline__ uint32_t *list_idx() const
    {
        if constexpr (BIG)
            return rej_big_list + sh.list_cap;
        else
            return sh.g_idx;
    }
    __device__ __forceinline__ unsigned list_room() const
    {
        if constexpr (BIG)
            return (unsigned)sh.list_cap;
        else
            return (unsigned)kGather;
    }

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
            load4<E>(x, vocab, vec, j, v);
        }
    }

    /* The row's last logit, as float32 (the inverse CDF's answer when nothing crosses). */
    __device__ __forceinline__ float last() const { return tkp_load1<E>(x, vocab - 1); }

    /* Call f(value, index, in_row) for local elements [from, to), kReduceUnroll tiles of
     * 4 * THREADS elements at a time (each_tile's layout, tile_off). The trip count is the
     * same in every thread and f runs with the whole warp converged (f may use warp
     * collectives). */
    template <class F>
    __device__ __forceinline__ void each(F &&f, int from = 0, int to = 0x7FFFFFFF) const
    {
        each_tile([&](const float (&v)[kReduceUnroll][4], int l0) {
#pragma unroll
            for (int u = 0; u < kReduceUnroll; u++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int l = l0 + tile_off(u) + j;
                    f(v[u][j], begin + l, l < n);
                }
        }, from, to);
    }

    /* Call f(v, l0) once per UNROLL tiles of local elements [from, to): v[u][j] is local
     * element l0 + tile_off(u) + j (-inf past the slice or the row). The trip count is the
     * same in every thread. */
    template <int UNROLL = kReduceUnroll, class F>
    __device__ __forceinline__ void each_tile(F &&f, int from = 0, int to = 0x7FFFFFFF) const
    {
        constexpr int tile = 4 * THREADS;
        const int stop = to < n ? to : n;
        if constexpr (kOct) {
            static_assert(UNROLL % 2 == 0, "16-byte loads read tiles in pairs");
            const int t8 = 8 * (int)threadIdx.x;
            const bool vec16 = tkp_vec16_ok<E>(x, 0);
            for (int base = from; base < stop; base += UNROLL * tile) {
                float v[UNROLL][4];
#pragma unroll
                for (int p = 0; p < UNROLL / 2; p++)
                    load8<E>(x, vocab, vec16, vec, base + 2 * p * tile + t8, v[2 * p],
                             v[2 * p + 1]);
                f(v, base + t8);
            }
            return;
        }
        const int t4 = 4 * (int)threadIdx.x;
        for (int base = from; base < stop; base += UNROLL * tile) {
            float v[UNROLL][4];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
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

    /* Cluster: copy the slice from global memory into shared memory as float32 (converted
     * once, so every later pass reads the same floats whatever E), all loads of a thread in
     * flight at once, padded with -inf to a multiple of 4. The slice starts at a multiple of 4
     * elements, so it starts a vector when the row does. */
    __device__ void load_slice()
    {
        static_assert(CLUSTER, "only a cluster's CTA holds a slice");
        const int n4 = (n + 3) & ~3;
        constexpr int batch = 4;
        float *dst = const_cast<float *>(xs);
        const void *src = tkp_row_ptr<E>(x, begin, 1); /* element `begin` of the row */
        for (int base = 0; base < n4; base += batch * 4 * THREADS) {
            float v[batch][4];
#pragma unroll
            for (int u = 0; u < batch; u++)
                load4<E>(src, n, vec, base + u * 4 * THREADS + 4 * (int)threadIdx.x, v[u]);
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
        u64 v[3] = { a, b, c };
        tkp_block_sums<Shared<THREADS>::kWarps>(v, sh.red);
        a = v[0];
        b = v[1];
        c = v[2];
        if constexpr (!CLUSTER)
            return;
        const u64 *mine = publish(a, b, c);
        const unsigned lane = threadIdx.x & 31;
        const u64 *peer = lane < size ? cg::this_cluster().map_shared_rank(mine, lane) : nullptr;
        a = tkp_warp_sum(peer ? peer[0] : 0);
        b = tkp_warp_sum(peer ? peer[1] : 0);
        c = tkp_warp_sum(peer ? peer[2] : 0);
    }

    /* The sum of a and the maximum of m over the row. */
    __device__ void sum_max(u64 &a, u64 &m)
    {
        tkp_block_sum_max<Shared<THREADS>::kWarps>(a, m, sh.red);
        if constexpr (!CLUSTER)
            return;
        const u64 *mine = publish(a, m, 0);
        const unsigned lane = threadIdx.x & 31;
        const u64 *peer = lane < size ? cg::this_cluster().map_shared_rank(mine, lane) : nullptr;
        a = tkp_warp_sum(peer ? peer[0] : 0);
        m = tkp_warp_max(peer ? peer[1] : 0);
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
        const u64 incl = tkp_warp_incl_scan(cnt);
        for (int q = 0; q < (int)size; q++) {
            const int nq = (int)__shfl_sync(kTkpFullWarp, cnt, q);
            const int off = (int)__shfl_sync(kTkpFullWarp, incl - cnt, q);
            const uint32_t *rk = cl.map_shared_rank(cx->st_key, q);
            const uint32_t *ri = cl.map_shared_rank(cx->st_idx, q);
            for (int i = threadIdx.x; i < nq; i += THREADS)
                if (off + i < kGather) {
                    sh.g_key[off + i] = rk[i];
                    sh.g_idx[off + i] = ri[i];
                }
        }
        const unsigned total = (unsigned)__shfl_sync(kTkpFullWarp, incl, 31);
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
                sh.cand_pos = rej_pos(tkp_order_key(last()), vocab - 1);
            }
            scan_pick(*this, max, lo, t, 0);
            __syncthreads();
            c = sh.cand;
            pc = sh.cand_pos;
            __syncthreads(); /* everyone has read sh.cand before the next pick rewrites it */
            return;
        }
        cg::cluster_group cl = cg::this_cluster();
        u64 s[3] = { 0, 0, 0 }; /* the mass of B(lo) in this slice; two unused sums */
        each([&](float v, int i, bool) {
            if (rej_pos(tkp_order_key(v), i) < lo)
                s[0] += weight(v, i, max);
        });
        tkp_block_sums<Shared<THREADS>::kWarps>(s, sh.red);
        const u64 *mine = publish(s[0], 0, 0);
        const unsigned lane = threadIdx.x & 31;
        const u64 sq = lane < size ? cl.map_shared_rank(mine, lane)[0] : 0;
        const u64 incl = tkp_warp_incl_scan(sq), before = incl - sq;
        const unsigned hit = __ballot_sync(kTkpFullWarp, lane < size && before <= t && t < incl);
        const int finder = hit ? __ffs(hit) - 1 : -1; /* exactly one CTA: t < mass */
        const u64 running = __shfl_sync(kTkpFullWarp, before, finder < 0 ? 0 : finder);
        if (finder == (int)rank)
            scan_pick(*this, max, lo, t, running); /* only this CTA: block barriers only */
        cl.sync(); /* the finder's sh.cand is written; it is rewritten only two barriers on */
        if (finder >= 0) {
            const Shared<THREADS> *fsh = cl.map_shared_rank(&sh, finder);
            c = fsh->cand;
            pc = fsh->cand_pos;
        } else {
            c = vocab - 1;
            pc = rej_pos(tkp_order_key(last()), vocab - 1);
        }
    }
};

} // namespace rej_gpu

#endif

/* rejection_gpu.cu — CUDA implementation of the dual-pivot rejection sampler.
 *
 * The CPU reference (rejection.c) is the sequential form of this kernel: the same passes, the
 * same integer decisions (rejection_rules.h) and the same Philox counters, so every draw is
 * the CPU's bit for bit. Grid: (batch, groups); CTA (r, g) prepares row r (row scan, radix
 * select of the k-th key for top-k-then-top-p) and then runs draws g, g + groups, ... of it.
 * Every pass streams the row from global memory (float4 loads when the row is 16-byte
 * aligned) and recomputes order keys and fixed-point weights from the logits; all masses and
 * counts are exact integers, so block reductions and scans give the CPU's numbers whatever
 * the order of addition. README.md ("GPU") has the launch shape and the determinism
 * argument. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/cuda_util.h"
#include "../common/philox.h"
#include "../common/prob.h"
#include "rejection_gpu.h"
#include "rejection_rules.h"

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

typedef unsigned long long u64;

struct Params {
    const float *logits;
    const int32_t *k;
    const float *p;
    int64_t *samples;
    u64 *stats; /* [batch * groups * kStatWords] */
    uint64_t seed, offset;
    int64_t stride;
    int vocab, draws, max_rounds, groups;
};

template <int THREADS> struct Shared {
    static constexpr int kWarps = THREADS / 32;
    u64 red[3][kWarps];  /* block reductions */
    u64 scan[2][kWarps]; /* warp totals of the inverse-CDF scan, double-buffered per tile */
    unsigned hist[kBuckets]; /* bucket histogram (pass 1); radix-select histogram (first 256) */
    uint32_t g_key[kGather]; /* gathered tokens of the k-th key's bucket and above */
    uint32_t g_idx[kGather];
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


/* tkp_weight(x, m) bit for bit, with the float -> fixed-point step done in integers: the weight
 * f = tkp_expf(x - m) is a non-negative float (mantissa M with the hidden bit, biased exponent
 * E), and (uint64_t)((double)f * 2^40) = floor(M * 2^(E - 110)), a shift of M (zero for a zero
 * or subnormal f, which is below 2^-126). Spares the double conversions in every pass. */
__device__ __forceinline__ uint64_t fix_weight(float x, float m)
{
    if (!tkp_is_valid(x))
        return 0;
    if (m == INFINITY)
        return x == INFINITY ? TKP_FIX_ONE : 0;
    const uint32_t b = __float_as_uint(tkp_expf(x - m));
    const int e = (int)(b >> 23);
    if (e == 0)
        return 0;
    const uint64_t mant = (uint64_t)((b & 0x7FFFFFu) | 0x800000u);
    const int sh = e - 110;
    return sh >= 0 ? mant << sh : (sh > -24 ? mant >> -sh : 0);
}

/* Four consecutive logits i .. i+3 of a row (i a multiple of 4); past the row: -inf, which
 * has order key 0, weight 0 and a position >= REJ_END. */
__device__ __forceinline__ void load4(const float *__restrict__ x, int vocab, bool vec, int i,
                                      float v[4])
{
    if (vec && i + 3 < vocab) {
        float4 q = __ldg(reinterpret_cast<const float4 *>(x + i));
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = i + j < vocab ? __ldg(x + i + j) : -INFINITY;
    }
}

/* Call f(value, index, in_row) for every element of the row, kReduceUnroll tiles of
 * 4 * THREADS elements at a time (thread t holds elements 4t .. 4t+3 of each tile). The trip
 * count is the same in every thread and f runs with the whole warp converged (f may use warp
 * collectives). */
template <int THREADS, class F>
__device__ __forceinline__ void sweep(const float *__restrict__ x, int vocab, bool vec, F &&f,
                                      int begin = 0, int end = 0x7FFFFFFF)
{
    constexpr int tile = 4 * THREADS;
    const int t4 = 4 * (int)threadIdx.x;
    const int stop = end < vocab ? end : vocab;
    for (int base = begin; base < stop; base += kReduceUnroll * tile) {
        float v[kReduceUnroll][4];
#pragma unroll
        for (int u = 0; u < kReduceUnroll; u++)
            load4(x, vocab, vec, base + u * tile + t4, v[u]);
#pragma unroll
        for (int u = 0; u < kReduceUnroll; u++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int i = base + u * tile + t4 + j;
                f(v[u][j], i, i < vocab);
            }
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

/* Count and fixed-point mass of the valid tokens before pivots a and b (rej_tally2). */
typedef struct rej_tally Tally;

template <int THREADS>
__device__ void tally2(Shared<THREADS> &sh, const float *__restrict__ x, int vocab, bool vec,
                       float max, uint64_t a, uint64_t b, Tally &ta, Tally &tb)
{
    const uint64_t bound = a > b ? a : b;
    u64 counts = 0, ma = 0, mb = 0; /* counts: count before a | count before b << 32 */
    sweep<THREADS>(x, vocab, vec, [&](float v, int i, bool) {
        const uint64_t pos = rej_pos(tkp_order_key(v), i);
        if (pos < bound) {
            const bool ia = pos < a, ib = pos < b;
            const uint64_t w = fix_weight(v, max);
            ma += ia ? w : 0;
            mb += ib ? w : 0;
            counts += (u64)ia | ((u64)ib << 32);
        }
    });
    block_sum3(sh, counts, ma, mb);
    ta.count = (int64_t)(counts & 0xFFFFFFFFu);
    ta.mass = ma;
    tb.count = (int64_t)(counts >> 32);
    tb.mass = mb;
}

template <int THREADS>
__device__ __forceinline__ Tally tally1(Shared<THREADS> &sh, const float *__restrict__ x,
                                        int vocab, bool vec, float max, uint64_t pivot)
{
    Tally t, same;
    tally2(sh, x, vocab, vec, max, pivot, pivot, t, same);
    return t;
}

/* Inverse CDF over the candidate set B(lo) of exact mass `mass` > 0, in index order
 * (rej_pick): the first token whose inclusive prefix exceeds t = floor(u * mass / 2^64).
 * Tile by tile: a block scan of the tile's weights on top of the running prefix of the tiles
 * before; the one token with prefix-before <= t < prefix-after writes itself to shared
 * memory; the pass stops after the tile where the running prefix passes t. The next tile is
 * loaded before the current one is scanned. One barrier per tile: the warp totals alternate
 * between two buffers, and a buffer is rewritten only after the barrier of the tile between,
 * which every thread reaches after reading it. */
template <int THREADS>
__device__ void pick(Shared<THREADS> &sh, const float *__restrict__ x, int vocab, bool vec,
                     float max, uint64_t lo, uint64_t mass, uint64_t u, int &c, uint64_t &pc)
{
    constexpr int tile = 4 * THREADS, warps = Shared<THREADS>::kWarps;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t4 = 4 * (int)threadIdx.x;
    const uint64_t t = tkp_scale_u64(u, mass);
    if (threadIdx.x == 0) { /* the CPU's answer when nothing crosses (impossible: t < mass) */
        sh.cand = vocab - 1;
        sh.cand_pos = rej_pos(tkp_order_key(x[vocab - 1]), vocab - 1);
    }
    uint64_t running = 0;
    float v[4], nv[4];
    load4(x, vocab, vec, t4, v);
    int parity = 0;
    for (int base = 0; base < vocab; base += tile) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            nv[j] = -INFINITY;
        if (base + tile < vocab)
            load4(x, vocab, vec, base + tile + t4, nv);
        uint64_t w[4], s = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            w[j] = rej_pos(tkp_order_key(v[j]), base + t4 + j) < lo ? fix_weight(v[j], max) : 0;
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
                sh.cand = base + t4 + j;
                sh.cand_pos = rej_pos(tkp_order_key(v[j]), base + t4 + j);
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
    __syncthreads();
    c = sh.cand;
    pc = sh.cand_pos;
    __syncthreads(); /* everyone has read sh.cand before the next pick's thread 0 rewrites it */
}

/* Radix select, one digit (rej_kth_key's loop over a histogram): warp 0 finds the digit d
 * with (count of larger digits) < rank <= (count of digits >= d) and the rank left inside
 * it. Lane l owns digits 255 - 8l down to 248 - 8l. With `mass_above`, it also sums the
 * weights of the tokens in the digits above d: the histogram of the last digit holds tokens
 * that share every other bit, so the tokens of one bin have one value and one weight. Called
 * after a barrier that made the histogram visible; ends with a barrier. */
template <int THREADS>
__device__ void select_digit(Shared<THREADS> &sh, unsigned rank, bool mass_above,
                             uint32_t prefix, float max)
{
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        unsigned h[8], s = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            h[j] = sh.hist[255 - 8 * lane - j];
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
                    m += (u64)h[j] * fix_weight(tkp_key_value(prefix | bin), max);
            }
            m = warp_sum(m);
            if (lane == 0)
                sh.level_mass = m;
        }
    }
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

/* The bucket (top kBucketBits key bits) holding the key of rank `rank` (1 = largest) in the
 * pass-1 histogram: sh.digit = the bucket, sh.rank = the rank left inside it, sh.ties = its
 * count, sh.gabove = the count of the buckets above. Thread t owns buckets
 * kBuckets - 1 - per * t downwards. Called after a barrier that made the histogram visible;
 * ends with a barrier. */
template <int THREADS>
__device__ void select_bucket(Shared<THREADS> &sh, unsigned rank)
{
    constexpr int per = kBuckets / THREADS;
    unsigned h[per], s = 0;
#pragma unroll
    for (int j = 0; j < per; j++) {
        h[j] = sh.hist[kBuckets - 1 - per * (int)threadIdx.x - j];
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

/* Top-k-then-top-p from the pass-1 bucket histogram, when the k-th key's bucket and the ones
 * above hold at most kGather tokens: one more pass gathers them into shared memory; the k-th
 * key K (the one with fewer than k larger keys and at least k keys >= it), the counts above
 * and equal to it and the mass above it come from the gathered tokens (exact integers, so
 * rej_kth_key's and rej_prepare's numbers). When the first candidate set (keys >= K) has at
 * most kSmall tokens, they are stored in index order (rank by index) with their positions and
 * weights, and sh.nsmall says so. Returns K; above/ties/mass_above by reference. */
template <int THREADS>
__device__ uint32_t gather_select(Shared<THREADS> &sh, const float *__restrict__ x, int vocab,
                                  bool vec, float max, int64_t k_limit, uint64_t &above,
                                  uint64_t &ties, uint64_t &mass_above)
{
    const int lane = threadIdx.x & 31;
    const unsigned bucket = sh.digit;
    if (threadIdx.x == 0)
        sh.gcount = 0;
    __syncthreads();
    sweep<THREADS>(x, vocab, vec, [&](float v, int i, bool in_row) {
        const uint32_t key = tkp_order_key(v);
        const bool take = in_row && (key >> kBucketShift) >= bucket;
        const unsigned ballot = __ballot_sync(kFull, take);
        if (ballot) {
            unsigned base = 0;
            if (lane == 0)
                base = atomicAdd(&sh.gcount, (unsigned)__popc(ballot));
            base = __shfl_sync(kFull, base, 0);
            const unsigned slot = base + __popc(ballot & ((1u << lane) - 1u));
            if (take && slot < (unsigned)kGather) { /* always: pass 1 counted them */
                sh.g_key[slot] = key;
                sh.g_idx[slot] = (uint32_t)i;
            }
        }
    });
    __syncthreads();
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
        m += ki > kth ? fix_weight(tkp_key_value(ki), max) : 0;
    }
    block_sum3(sh, a, t, m); /* ends with a barrier */
    above = a;
    ties = t;
    mass_above = m;
    const int n0 = (int)(a + t);
    if (n0 <= kSmall) {
        for (int i = threadIdx.x; i < n; i += THREADS) {
            const uint32_t ki = sh.g_key[i];
            if (ki < kth)
                continue;
            const uint32_t ii = sh.g_idx[i];
            int rank = 0;
            for (int j = 0; j < n; j++)
                rank += sh.g_key[j] >= kth && sh.g_idx[j] < ii;
            sh.s_pos[rank] = rej_pos(ki, ii);
            sh.s_w[rank] = fix_weight(tkp_key_value(ki), max);
        }
    }
    if (threadIdx.x == 0)
        sh.nsmall = n0 <= kSmall ? n0 : 0;
    __syncthreads();
    return kth;
}

/* Prepare row r in shared memory (rej_prepare): the row max, the number of valid tokens, the
 * top-k limit, the first candidate set and its mass, the top-p target. Returns the number of
 * valid tokens and the row max (0 / -inf for a row without a valid token). */
template <int THREADS>
__device__ __forceinline__ u64 prepare_row(Shared<THREADS> &sh, const float *__restrict__ x,
                                        int vocab, bool vec, int32_t k, float p, float &max)
{
    /* Pass 1: the largest order key (the row max), the number of valid tokens, and, when the
     * row might need top-k-then-top-p, the histogram of the top kBucketBits key bits. */
    const bool may_select = tkp_topp_on(p) && tkp_topk_on(k, vocab);
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
     * no token at or above it skip the histogram. */
    unsigned floor = 0;
    auto scan = [&](float v, int, bool in_row) {
        const uint32_t key = tkp_order_key(v);
        vcount += key != 0;
        kmax = key > kmax ? key : kmax;
        if (may_select) {
            const bool counted = in_row && (key >> kBucketShift) >= floor;
            if (__any_sync(kFull, counted))
                hist_add(sh.hist, counted ? key >> kBucketShift : (unsigned)kBuckets, kBuckets);
        }
    };
    constexpr int chunk = kReduceUnroll * 4 * THREADS;
    if (may_select && vocab > chunk && k <= chunk) {
        sweep<THREADS>(x, vocab, vec, scan, 0, chunk);
        __syncthreads();
        select_bucket(sh, (unsigned)k); /* the chunk holds >= k tokens; ends with a barrier */
        floor = sh.digit;
        sweep<THREADS>(x, vocab, vec, scan, chunk);
    } else {
        sweep<THREADS>(x, vocab, vec, scan);
    }
    valid = vcount;
    maxkey = kmax;
    block_sum_max(sh, valid, maxkey); /* ends with a barrier: the histogram is visible */
    max = -INFINITY;
    if (valid == 0)
        return 0;
    max = tkp_key_value((uint32_t)maxkey);
    const int64_t k_limit = rej_k_limit(k, vocab, (int64_t)valid);
    uint64_t start = REJ_END, start_mass, set_mass;
    bool selected = false;
    if (rej_needs_set_mass(p, k_limit, (int64_t)valid)) {
        select_bucket(sh, (unsigned)k_limit);
        if (sh.gabove + sh.ties <= (unsigned)kGather) {
            /* The usual case: one gathering pass, the rest in shared memory. */
            uint64_t above, ties, mass_above;
            const uint32_t kth =
                gather_select(sh, x, vocab, vec, max, k_limit, above, ties, mass_above);
            const uint64_t kth_weight = fix_weight(tkp_key_value(kth), max);
            set_mass = mass_above + (uint64_t)(k_limit - (int64_t)above) * kth_weight;
            start = rej_pos(kth, 0xFFFFFFFFu);
            start_mass = mass_above + ties * kth_weight;
            if (threadIdx.x == 0 && blockIdx.y == 0) /* the CPU's radix passes, once per row */
                sh.stat[2] += REJ_DIGIT_PASSES;
            selected = true;
        } else {
            /* A crowded bucket: fold the histogram into the first 8-bit digit's and run the
             * radix select over the row. */
            unsigned s8 = 0;
            if (threadIdx.x < 256)
                for (int j = 0; j < (1 << (kBucketBits - 8)); j++)
                    s8 += sh.hist[(threadIdx.x << (kBucketBits - 8)) + j];
            __syncthreads();
            if (threadIdx.x < 256)
                sh.hist[threadIdx.x] = s8;
            __syncthreads();
        }
    }
    if (selected) {
        /* K, total_S and the first candidate set come from the gathered tokens */
    } else if (rej_needs_set_mass(p, k_limit, (int64_t)valid)) {
        /* Radix select of the k-th key K (rej_kth_key; digit 1's histogram is ready), then
         * the mass above K: tokens above K in their top 24 bits are summed during the last
         * histogram pass, the others (same top 24 bits, larger last digit) from the last
         * histogram. */
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
                sweep<THREADS>(x, vocab, vec, [&](float v, int, bool in_row) {
                    const uint32_t key = tkp_order_key(v);
                    hist_add(sh.hist,
                             in_row && (key & mask) == prefix ? (key >> shift) & 0xFFu : 256u);
                    if (last && (key >> 8) > (prefix >> 8))
                        mass_high += fix_weight(v, max);
                });
                if (last) {
                    u64 unused1 = 0, unused2 = 0;
                    block_sum3(sh, mass_high, unused1, unused2);
                } else {
                    __syncthreads();
                }
            }
            select_digit(sh, rank, last, prefix, max); /* ends with a barrier */
            const unsigned digit = sh.digit;
            rank = sh.rank;
            prefix |= digit << shift;
            mask |= 0xFFu << shift;
        }
        const uint64_t ties = sh.ties, mass_above = mass_high + sh.level_mass;
        const int64_t above = k_limit - (int64_t)rank;
        const uint64_t kth_weight = fix_weight(tkp_key_value(prefix), max);
        set_mass = mass_above + (uint64_t)(k_limit - above) * kth_weight;
        start = rej_pos(prefix, 0xFFFFFFFFu);
        start_mass = mass_above + ties * kth_weight;
        if (threadIdx.x == 0 && blockIdx.y == 0) /* counted once per row, as on the CPU */
            sh.stat[2] += REJ_DIGIT_PASSES;
    } else {
        u64 total = 0, unused1 = 0, unused2 = 0;
        sweep<THREADS>(x, vocab, vec, [&](float v, int, bool) { total += fix_weight(v, max); });
        block_sum3(sh, total, unused1, unused2);
        start_mass = set_mass = total;
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
 * d uses Philox counter d * max_rounds + round, and the last round of the budget samples the
 * exact kept set found by bisection. The chain state is the same in every thread. */
template <int THREADS>
__device__ __forceinline__ int draw_one(Shared<THREADS> &sh, const float *__restrict__ x,
                                     int vocab, bool vec, float max, const Params &prm, int d)
{
    const int rounds = prm.max_rounds;
    const bool small = sh.nsmall > 0; /* the first candidate set is in shared memory */
    uint64_t hi = sh.top, lo = sh.start, mass = sh.start_mass;
    int c = 0;
    for (int round = 0;; round++) {
        const uint32_t counter = (uint32_t)d * (uint32_t)rounds + (uint32_t)round;
        const uint64_t u = tkp_philox_u64(prm.seed, (uint64_t)blockIdx.x, prm.offset, counter);
        if (threadIdx.x == 0)
            sh.stat[0] += 1;
        uint64_t pc;
        if (round == rounds - 1) {
            while (lo - hi > 1) {
                const uint64_t mid = hi + (lo - hi) / 2;
                Tally tm, same;
                if (small)
                    tally2_small(sh, mid, mid, tm, same);
                else
                    tm = tally1(sh, x, vocab, vec, max, mid);
                if (rej_kept(tm.count, tm.mass, sh.k_limit, sh.target))
                    hi = mid;
                else
                    lo = mid;
                if (threadIdx.x == 0)
                    sh.stat[2] += 1;
            }
            lo = hi + 1;
            if (threadIdx.x == 0)
                sh.stat[1] += 1;
            if (small) {
                Tally tl, same;
                tally2_small(sh, lo, lo, tl, same);
                pick_small(sh, x, vocab, lo, tl.mass, u, c, pc);
            } else {
                const Tally tl = tally1(sh, x, vocab, vec, max, lo);
                pick(sh, x, vocab, vec, max, lo, tl.mass, u, c, pc);
            }
            return c;
        }
        if (small)
            pick_small(sh, x, vocab, lo, mass, u, c, pc);
        else
            pick(sh, x, vocab, vec, max, lo, mass, u, c, pc);
        const uint64_t p1 = rej_second_pivot(hi, pc);
        Tally tc, t1;
        if (small)
            tally2_small(sh, pc, p1, tc, t1);
        else
            tally2(sh, x, vocab, vec, max, pc, p1, tc, t1);
        if (rej_round_verdict(tc, t1, pc, p1, sh.k_limit, sh.target, &lo, &hi, &mass))
            return c;
    }
}

/* One CTA: row blockIdx.x, draws blockIdx.y, blockIdx.y + groups, ... */
template <int THREADS>
__global__ void __launch_bounds__(THREADS, THREADS == 1024 ? 1 : 2)
    rejection_kernel(const Params prm)
{
    __shared__ Shared<THREADS> sh;
    const int r = blockIdx.x, g = blockIdx.y;
    const int vocab = prm.vocab;
    const float *__restrict__ x = prm.logits + (int64_t)r * prm.stride;
    const bool vec = ((uintptr_t)x & 15) == 0;
    if (threadIdx.x < kStatWords)
        sh.stat[threadIdx.x] = 0; /* thread 0 alone updates them later (after barriers) */
    float max;
    const u64 valid = prepare_row(sh, x, vocab, vec, prm.k[r], prm.p[r], max);
    int64_t *out = prm.samples + (int64_t)r * prm.draws;
    for (int d = g; d < prm.draws; d += prm.groups) {
        const int c = valid ? draw_one(sh, x, vocab, vec, max, prm, d) : -1;
        if (threadIdx.x == 0)
            out[d] = c;
    }
    __syncthreads();
    if (threadIdx.x < kStatWords)
        prm.stats[((int64_t)r * prm.groups + g) * kStatWords + threadIdx.x] = sh.stat[threadIdx.x];
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

} // namespace

extern "C" void rej_gpu_plan_for(const struct tkp_problem *pb, struct rej_gpu_plan *plan)
{
    const int64_t sms = device_sms();
    /* Large batches: 512-thread CTAs, two per SM, so one CTA's barriers overlap the other's
     * loads; small ones: 1024 threads per row and several CTAs per row when there are draws
     * enough to fill the SMs. */
    plan->threads = pb->batch >= 2 * sms ? 512 : 1024;
    int64_t groups = pb->batch > 0 ? (sms + pb->batch - 1) / pb->batch : 1;
    if (groups > pb->draws)
        groups = pb->draws;
    if (groups < 1)
        groups = 1;
    if (groups > 65535)
        groups = 65535;
    plan->groups = (int)groups;
    plan->slots = pb->batch * groups;
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
    const dim3 grid((unsigned)pb->batch, (unsigned)plan->groups);
    cudaStream_t s = (cudaStream_t)stream;
    if (plan->threads == 512)
        rejection_kernel<512><<<grid, 512, 0, s>>>(prm);
    else
        rejection_kernel<1024><<<grid, 1024, 0, s>>>(prm);
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

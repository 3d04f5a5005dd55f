/* qrita_gpu.cu — Qrita on sm_90a. Four kernels per run, all on one stream (README.md, "GPU"):
 *
 *  qr_prep   <<<B, 256>>>           zero the row's accumulators; sample statistics with the CPU's
 *                                   256-lane double fold; the gather threshold (qrita_rules.h);
 *  qr_scan   <<<(cpr, B), 256>>>    one streaming pass (float4, 4 loads in flight per thread):
 *                                   max/min key, valid count, and every (key, index) above the
 *                                   threshold appended to the row's bounded buffer (warp-aggregated
 *                                   atomic counter per row: buffer order is nondeterministic);
 *  qr_mass   <<<(cpr, B), 256>>>    only when some row is top-p alone: the row's fixed-point mass
 *                                   and that of its outliers (integer atomics: order independent);
 *  qr_search <<<., 256 or 512>>>    per row (a warp per row, 8 rows per block, past B = #SMs; a
 *                                   512-thread block per row below): the CPU's decisions and its
 *                                   pivot search, replayed on the buffer (or on the row when it
 *                                   falls back), with the candidates compacted into shared memory
 *                                   as the search range shrinks; the boundary (key, last kept
 *                                   index among its copies) per row;
 *  qr_mask   <<<(cpr, B), 256>>>    writes every byte of the mask: zero-fill + scatter from the
 *                                   buffer, or one pass over the row chunk.
 *
 * Determinism: every decision depends on the SET of buffered entries only (counts, integer
 * masses, the smallest key and its copies, the k-th smallest index), never on their order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu.h"

typedef unsigned long long u64;

__constant__ double qr_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;

#define NT 256 /* threads of the streaming kernels */
#define FULL 0xffffffffu
#define CAP_WARP 1024   /* shared-memory candidates per half, warp-per-row search */
#define CAP_BLOCK 16384 /* shared-memory candidates per half, block-per-row search */
#define BLOCK_G 512     /* threads of the block-per-row search */

struct qr_row {
    unsigned max_key, inv_min, valid, gathered; /* qr_scan (zeroed by qr_prep) */
    u64 total, above;                           /* qr_mass (zeroed by qr_prep) */
    unsigned trunc_key, flags;                  /* qr_prep: flags 1 = threshold, 2 = truncate */
    unsigned bkey, pool_ok;                     /* qr_search */
    int cut, pad;
    unsigned lo2, gathered2;                    /* qr_gather2 (top-p alone, truncation=auto) */
    unsigned pool_n, pad2;                      /* qr_search: entries of the buffer in use */
};

struct qr_args {
    const float *logits;
    const int32_t *k;
    const float *p;
    uint8_t *kept;
    qr_row *rows;
    qrita_gpu_rstat *rstat;
    uint32_t *keys, *idx;
    u64 *hist; /* QRITA_MASS_BINS per row */
    int gather2; /* qr_gather2 runs: top-p-alone rows skip the buffer writes of qr_scan */
    int64_t batch, vocab, stride, cap_gpu, cap_cpu, pitch, vpc;
    int trunc, search, dedup, sample_block, max_iter, pivots;
    double margin;
};

/* ---- streaming over one CTA's chunk of a row ----
 * The row is split at 16-byte alignment: h scalar head elements, nvec float4 vectors, a scalar
 * tail. CTA c of the row takes vectors [c vpc, (c + 1) vpc); CTA 0 also takes head and tail.
 * f(value, index, ok) is called by every thread the same number of times (ok = false for padding)
 * so that it may use warp votes. */
__device__ __forceinline__ void row_geom(const float *x, int64_t V, int64_t &h, int64_t &nvec)
{
    h = (int64_t)((((16u - ((uintptr_t)x & 15u)) & 15u)) >> 2);
    if (h > V)
        h = V;
    nvec = (V - h) >> 2;
}

template <typename F>
__device__ __forceinline__ void stream_chunk(const float *__restrict__ x, int64_t V, int64_t vpc,
                                             F &f)
{
    int64_t h, nvec;
    row_geom(x, V, h, nvec);
    const int64_t v0 = (int64_t)blockIdx.x * vpc, v1 = min(nvec, v0 + vpc);
    const float4 *xv = reinterpret_cast<const float4 *>(x + h);
    const int t = threadIdx.x;
    for (int64_t base = v0; base < v1; base += 4 * NT) {
        float4 a[4];
        bool ok[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int64_t j = base + u * NT + t;
            ok[u] = j < v1;
            a[u] = ok[u] ? __ldg(xv + j) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int64_t e = h + 4 * (base + u * NT + t);
            f(a[u].x, e, ok[u]);
            f(a[u].y, e + 1, ok[u]);
            f(a[u].z, e + 2, ok[u]);
            f(a[u].w, e + 3, ok[u]);
        }
    }
    if (blockIdx.x == 0) {
        const int64_t tail = h + 4 * nvec, extra = h + (V - tail); /* at most 6 */
        for (int64_t base = 0; base < extra; base += NT) {
            int64_t q = base + t;
            bool ok = q < extra;
            int64_t e = q < h ? q : tail + (q - h);
            f(ok ? x[e] : 0.f, e, ok);
        }
    }
}

/* ---- qr_prep: zero the accumulators, sample statistics, threshold ---- */
__global__ void __launch_bounds__(NT) qr_prep(qr_args a)
{
    const int64_t r = blockIdx.x, V = a.vocab;
    const float *x = a.logits + r * a.stride;
    qr_row *row = a.rows + r;
    const int t = threadIdx.x;
    __shared__ double lane[QRITA_STAT_LANES];
    __shared__ unsigned long long cnt_sh;
    const int32_t k = a.k[r];
    const float p = a.p[r];
    const int truncate = a.trunc != QRITA_TRUNC_OFF && (tkp_topk_on(k, V) || tkp_topp_on(p));
    uint32_t thr = UINT32_MAX;
    int has = 0;
    if (truncate) {
        const int64_t n = a.sample_block < V ? a.sample_block : V;
        /* lane t adds i = t, t + 256, ... in order (the CPU's lanes); 32 loads in flight. With
         * n <= 32 x 256 (sample_block 8192, the default) one batch holds every sample, and the
         * variance pass reuses the registers instead of reading the samples again. */
        constexpr int PU = 32;
        const bool one = n <= (int64_t)PU * QRITA_STAT_LANES;
        float v[PU];
        double s = 0.0;
        unsigned long long c = 0;
        for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
#pragma unroll
            for (int u = 0; u < PU; u++) {
                const int64_t i = base + u * QRITA_STAT_LANES + t;
                v[u] = i < n ? x[i] : NAN;
            }
#pragma unroll
            for (int u = 0; u < PU; u++)
                if (isfinite(v[u])) {
                    s += (double)v[u];
                    c++;
                }
        }
        if (t == 0)
            cnt_sh = 0;
        lane[t] = s;
        __syncthreads();
        atomicAdd(&cnt_sh, c);
        for (int half = QRITA_STAT_LANES / 2; half > 0; half /= 2) {
            if (t < half)
                lane[t] += lane[t + half];
            __syncthreads();
        }
        const unsigned long long count = cnt_sh;
        if (count) {
            const double mean = lane[0] / (double)count;
            __syncthreads();
            double s2 = 0.0;
            for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
                if (!one) {
#pragma unroll
                    for (int u = 0; u < PU; u++) {
                        const int64_t i = base + u * QRITA_STAT_LANES + t;
                        v[u] = i < n ? x[i] : NAN;
                    }
                }
#pragma unroll
                for (int u = 0; u < PU; u++)
                    if (isfinite(v[u])) {
                        double d = (double)v[u] - mean;
                        s2 += d * d;
                    }
            }
            lane[t] = s2;
            __syncthreads();
            for (int half = QRITA_STAT_LANES / 2; half > 0; half /= 2) {
                if (t < half)
                    lane[t] += lane[t + half];
                __syncthreads();
            }
            const double sd = sqrt(lane[0] / (double)count);
            double delta = tkp_topk_on(k, V) ? qrita_delta_topk(k, V, qr_quantile)
                                             : qrita_delta_topp(p, sd, qr_quantile);
            if (delta != -INFINITY) {
                has = 1;
                thr = qrita_threshold_key(mean, sd, delta, a.margin);
            }
        }
    }
    if (t < QRITA_MASS_BINS)
        a.hist[r * QRITA_MASS_BINS + t] = 0;
    if (t == 0) {
        row->lo2 = row->gathered2 = row->pool_n = 0;
        row->max_key = row->inv_min = row->valid = row->gathered = 0;
        row->total = row->above = 0;
        row->trunc_key = thr;
        row->flags = (unsigned)has | ((unsigned)truncate << 1);
    }
}

/* ---- qr_scan: max, min, valid count, outlier gather ---- */
__global__ void __launch_bounds__(NT, 6) qr_scan(qr_args a)
{
    const int64_t r = blockIdx.y;
    const float *x = a.logits + r * a.stride;
    qr_row *row = a.rows + r;
    const uint32_t thr = row->trunc_key;
    const bool gather = thr != UINT32_MAX;
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    const unsigned lane = threadIdx.x & 31;
    const int64_t cap = a.cap_gpu;
    /* a top-p-alone row searches the buffer of qr_gather2: here its outliers are only counted */
    const bool count_only = a.gather2 && !tkp_topk_on(a.k[r], a.vocab) && tkp_topp_on(a.p[r]);
    unsigned kmax = 0, kinv = 0, valid = 0, counted = 0;
    /* Two loops, the branch hoisted out of the stream: the gathering loop keeps the registers
     * (and so the occupancy, 6 CTAs per SM) it had before count_only existed. */
    if (gather && count_only) {
        auto fc = [&](float v, int64_t, bool ok) {
            uint32_t key = ok ? tkp_order_key(v) : 0u;
            if (key) {
                valid++;
                kmax = max(kmax, key);
                kinv = max(kinv, ~key);
            }
            counted += key > thr;
        };
        stream_chunk(x, a.vocab, a.vpc, fc);
    } else {
        auto f = [&](float v, int64_t e, bool ok) {
            uint32_t key = ok ? tkp_order_key(v) : 0u;
            if (key) {
                valid++;
                kmax = max(kmax, key);
                kinv = max(kinv, ~key);
            }
            if (gather) {
                bool g = key > thr;
                unsigned m = __ballot_sync(FULL, g);
                if (m) {
                    int leader = __ffs(m) - 1;
                    unsigned base = 0;
                    if ((int)lane == leader)
                        base = atomicAdd(&row->gathered, (unsigned)__popc(m));
                    base = __shfl_sync(FULL, base, leader);
                    if (g) {
                        int64_t pos = (int64_t)base + __popc(m & ((1u << lane) - 1u));
                        if (pos < cap) {
                            keys[pos] = key;
                            idx[pos] = (uint32_t)e;
                        }
                    }
                }
            }
        };
        stream_chunk(x, a.vocab, a.vpc, f);
    }
    for (int o = 16; o > 0; o >>= 1) {
        kmax = max(kmax, __shfl_xor_sync(FULL, kmax, o));
        kinv = max(kinv, __shfl_xor_sync(FULL, kinv, o));
        valid += __shfl_xor_sync(FULL, valid, o);
        counted += __shfl_xor_sync(FULL, counted, o);
    }
    __shared__ unsigned sh[4][NT / 32];
    const int w = threadIdx.x >> 5;
    if (lane == 0) {
        sh[0][w] = kmax;
        sh[1][w] = kinv;
        sh[2][w] = valid;
        sh[3][w] = counted;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < NT / 32; i++) {
            kmax = max(kmax, sh[0][i]);
            kinv = max(kinv, sh[1][i]);
            valid += sh[2][i];
            counted += sh[3][i];
        }
        if (counted)
            atomicAdd(&row->gathered, counted);
        if (valid) {
            atomicMax(&row->max_key, kmax);
            atomicMax(&row->inv_min, kinv);
            atomicAdd(&row->valid, valid);
        }
    }
}

/* ---- qr_mass: fixed-point mass of a top-p-alone row ---- */
__global__ void __launch_bounds__(NT) qr_mass(qr_args a)
{
    const int64_t r = blockIdx.y, V = a.vocab;
    const qr_row *row = a.rows + r;
    const int64_t valid = row->valid;
    const int32_t k = a.k[r];
    if (valid == 0 || (tkp_topk_on(k, V) && k < valid) || !tkp_topp_on(a.p[r]))
        return;
    const float m = tkp_key_value(row->max_key);
    const uint32_t thr = row->trunc_key;
    __shared__ u64 hs[QRITA_MASS_BINS];
    if (threadIdx.x < QRITA_MASS_BINS)
        hs[threadIdx.x] = 0;
    __syncthreads();
    u64 tot = 0, ab = 0;
    auto f = [&](float v, int64_t, bool ok) {
        if (ok) {
            u64 w = tkp_weight(v, m);
            tot += w;
            const uint32_t key = tkp_order_key(v);
            if (key > thr)
                ab += w;
            if (key && w) { /* only the tokens near max: few shared atomics */
                const int bin = qrita_mass_bin(v, m);
                if (bin < QRITA_MASS_BINS)
                    atomicAdd(&hs[bin], w);
            }
        }
    };
    stream_chunk(a.logits + r * a.stride, V, a.vpc, f);
    for (int o = 16; o > 0; o >>= 1) {
        tot += __shfl_xor_sync(FULL, tot, o);
        ab += __shfl_xor_sync(FULL, ab, o);
    }
    __shared__ u64 sh[2][NT / 32];
    if ((threadIdx.x & 31) == 0) {
        sh[0][threadIdx.x >> 5] = tot;
        sh[1][threadIdx.x >> 5] = ab;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < NT / 32; i++) {
            tot += sh[0][i];
            ab += sh[1][i];
        }
        qr_row *rw = a.rows + r;
        if (tot)
            atomicAdd(&rw->total, tot);
        if (ab)
            atomicAdd(&rw->above, ab);
    }
    if (threadIdx.x < QRITA_MASS_BINS && hs[threadIdx.x])
        atomicAdd(&a.hist[r * QRITA_MASS_BINS + threadIdx.x], hs[threadIdx.x]);
}

/* ---- qr_gather2: the second-level truncation of top-p-alone rows (truncation=auto) ----
 * The search of such a row starts at lo2 = the CPU's q.lo raised to the mass floor
 * (qrita_mass_floor); every key > lo2 (with its index) goes to the row's buffer, replacing the
 * sigma outliers (which qr_scan only counted). */
__device__ __forceinline__ bool qr_topp_alone(const qr_row *row, int32_t k, float p, int64_t V)
{
    const int64_t valid = row->valid;
    return valid > 0 && !(tkp_topk_on(k, V) && k < valid) && tkp_topp_on(p);
}

__global__ void __launch_bounds__(NT) qr_gather2(qr_args a)
{
    const int64_t r = blockIdx.y, V = a.vocab;
    qr_row *row = a.rows + r;
    const int32_t k = a.k[r];
    const float p = a.p[r];
    if (!qr_topp_alone(row, k, p, V))
        return;
    __shared__ u64 hs[QRITA_MASS_BINS];
    __shared__ uint32_t lo_sh;
    const int t = threadIdx.x;
    if (t < QRITA_MASS_BINS)
        hs[t] = a.hist[r * QRITA_MASS_BINS + t];
    __syncthreads();
    if (t == 0) {
        /* qrita_row: q.lo = hit ? trunc_key : min_key - 1, then the mass floor if above it */
        const unsigned flags = row->flags;
        const int64_t gathered = row->gathered;
        const u64 total = row->total, target = tkp_topp_target(p, total);
        const uint32_t max_key = row->max_key, min_key = ~row->inv_min;
        const int hit = (flags & 2) && (flags & 1) && gathered <= a.cap_cpu && gathered >= 1 &&
                        row->above >= target;
        uint32_t lo = hit ? row->trunc_key : min_key - 1;
        const uint32_t mf =
            qrita_mass_floor((const uint64_t *)hs, target, tkp_key_value(max_key), min_key, max_key);
        lo = mf > lo ? mf : lo;
        lo_sh = lo;
        if (blockIdx.x == 0)
            row->lo2 = lo;
    }
    __syncthreads();
    const uint32_t lo = lo_sh;
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    const unsigned lane = threadIdx.x & 31;
    const int64_t cap = a.cap_gpu;
    auto f = [&](float v, int64_t e, bool ok) {
        const uint32_t key = ok ? tkp_order_key(v) : 0u;
        const bool g = key > lo;
        const unsigned m = __ballot_sync(FULL, g);
        if (m) {
            const int leader = __ffs(m) - 1;
            unsigned base = 0;
            if ((int)lane == leader)
                base = atomicAdd(&row->gathered2, (unsigned)__popc(m));
            base = __shfl_sync(FULL, base, leader);
            if (g) {
                const int64_t pos = (int64_t)base + __popc(m & ((1u << lane) - 1u));
                if (pos < cap) {
                    keys[pos] = key;
                    idx[pos] = (uint32_t)e;
                }
            }
        }
    };
    stream_chunk(a.logits + r * a.stride, V, a.vpc, f);
}

/* ---- qr_search: the CPU's decisions and searches, per row ---- */

/* Statistics of the keys above one threshold: count, measure, smallest key and its copies. */
struct Slot {
    uint32_t cnt, min, copies;
    u64 mass;
};

__device__ __forceinline__ Slot slot_empty()
{
    Slot s;
    s.cnt = 0;
    s.min = UINT32_MAX;
    s.copies = 0;
    s.mass = 0;
    return s;
}

__device__ __forceinline__ void slot_add(Slot &a, const Slot &b)
{
    a.cnt += b.cnt;
    a.mass += b.mass;
    if (b.min < a.min) {
        a.min = b.min;
        a.copies = b.copies;
    } else if (b.min == a.min) {
        a.copies += b.copies;
    }
}

#define NSLOT 5
#define EVAL_UNROLL 2 /* items of 4 keys in flight per thread */

/* The candidates a search reads: kind 0 the row's buffer (global keys), 1 the row itself,
 * 2 a shared-memory list. */
struct Src {
    int kind;
    const uint32_t *keys;
    const float *row;
    int64_t n;
};

/* A search's view of its candidates: the source holds (a superset of) the keys in (L, H]; agg is
 * the statistics of the keys > H, which every remaining pivot sees whole. */
struct Eng {
    Src src;
    uint32_t L, H;
    Slot agg;
    int64_t U; /* an upper bound on the keys in the current window */
    int cur;   /* the shared-memory half the source lives in (kind 2) */
};

/* The state of one boundary search between iterations (shared by the block and the warp that
 * takes over when the candidates are few). */
struct SearchState {
    uint32_t lo, hi, floor_key, first_min, acc_key;
    int it;
    bool first, accepted;
    int64_t acc_count, acc_keep, iters;
};

struct SearchSmem {
    Slot scratch[32][NSLOT];
    unsigned wcnt[32];
    unsigned gcnt[8], found[8];
    SearchState hand; /* the warp's result after a handoff */
};

template <int G>
__device__ __forceinline__ void gsync()
{
    if (G == 32)
        __syncwarp();
    else
        __syncthreads();
}

template <int G>
__device__ __forceinline__ void reduce_slots(Slot (&s)[NSLOT], SearchSmem &sm)
{
#pragma unroll
    for (int j = 0; j < NSLOT; j++)
        for (int o = 16; o > 0; o >>= 1) {
            Slot b;
            b.cnt = __shfl_xor_sync(FULL, s[j].cnt, o);
            b.min = __shfl_xor_sync(FULL, s[j].min, o);
            b.copies = __shfl_xor_sync(FULL, s[j].copies, o);
            b.mass = __shfl_xor_sync(FULL, s[j].mass, o);
            slot_add(s[j], b);
        }
    if (G > 32) {
        /* the G/32 warp results folded by warp 0 with shuffles (slot_add is a sum and a
         * (min, +) fold: order-free), the result broadcast through row G/32 of the scratch */
        static_assert(G / 32 < 32, "scratch holds G/32 + 1 rows");
        const int w = threadIdx.x >> 5;
        const unsigned lane = threadIdx.x & 31;
        if (lane == 0)
#pragma unroll
            for (int j = 0; j < NSLOT; j++)
                sm.scratch[w][j] = s[j];
        __syncthreads();
        if (w == 0) {
#pragma unroll
            for (int j = 0; j < NSLOT; j++) {
                Slot acc = lane < G / 32 ? sm.scratch[lane][j] : slot_empty();
                for (int o = 16; o > 0; o >>= 1) {
                    Slot b;
                    b.cnt = __shfl_xor_sync(FULL, acc.cnt, o);
                    b.min = __shfl_xor_sync(FULL, acc.min, o);
                    b.copies = __shfl_xor_sync(FULL, acc.copies, o);
                    b.mass = __shfl_xor_sync(FULL, acc.mass, o);
                    slot_add(acc, b);
                }
                if (lane == 0)
                    sm.scratch[G / 32][j] = acc;
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < NSLOT; j++)
            s[j] = sm.scratch[G / 32][j];
        __syncthreads();
    }
}

template <int G>
__device__ __forceinline__ uint32_t group_sum(uint32_t v, SearchSmem &sm)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL, v, o);
    if (G > 32) {
        if ((threadIdx.x & 31) == 0)
            sm.wcnt[threadIdx.x >> 5] = v;
        __syncthreads();
        v = 0;
        for (int i = 0; i < G / 32; i++)
            v += sm.wcnt[i];
        __syncthreads();
    }
    return v;
}

__device__ __forceinline__ void load4(const Src &s, int64_t item, uint32_t (&k)[4])
{
    const int64_t i = 4 * item;
    if (s.kind == 1) {
#pragma unroll
        for (int u = 0; u < 4; u++)
            k[u] = i + u < s.n ? tkp_order_key(s.row[i + u]) : 0u;
    } else {
        uint4 v = *reinterpret_cast<const uint4 *>(s.keys + i);
        k[0] = v.x;
        k[1] = i + 1 < s.n ? v.y : 0u;
        k[2] = i + 2 < s.n ? v.z : 0u;
        k[3] = i + 3 < s.n ? v.w : 0u;
    }
}

/* One pass over the source: the statistics of the keys above each of thr[0..ns) (ascending),
 * and optionally the keys in (glo, ghi] copied to dst (at most cap; *gtotal counts them all). */
template <int G>
__device__ void eval_pass(const Eng &e, const uint32_t (&thr)[NSLOT], int ns,
                          struct qrita_measure m, Slot (&res)[NSLOT], bool gather, uint32_t glo,
                          uint32_t ghi, uint32_t *dst, uint32_t cap, unsigned *gcnt,
                          SearchSmem &sm, uint32_t &gtotal)
{
    const int tid = G == 32 ? (threadIdx.x & 31) : threadIdx.x;
    const unsigned lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < NSLOT; j++)
        res[j] = slot_empty();
    if (gather && tid == 0)
        *gcnt = 0;
    gsync<G>();
    uint32_t wbase = 0; /* G == 32: the warp's running gather count (no atomics) */
    const int64_t items = (e.src.n + 3) / 4;
    for (int64_t base = 0; base < items; base += EVAL_UNROLL * G) {
        uint32_t kk[EVAL_UNROLL][4];
#pragma unroll
        for (int u = 0; u < EVAL_UNROLL; u++) {
            int64_t it = base + u * G + tid;
            if (it < items)
                load4(e.src, it, kk[u]);
            else
                kk[u][0] = kk[u][1] = kk[u][2] = kk[u][3] = 0u;
        }
#pragma unroll
        for (int u = 0; u < EVAL_UNROLL; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const uint32_t key = kk[u][c];
                const bool in = key > e.L && key <= e.H;
                if (in && key > thr[0]) {
                    const u64 w = qrita_measure_of(m, key);
#pragma unroll
                    for (int j = 0; j < NSLOT; j++)
                        if (j < ns && key > thr[j]) {
                            res[j].cnt++;
                            res[j].mass += w;
                            if (key < res[j].min) {
                                res[j].min = key;
                                res[j].copies = 1;
                            } else if (key == res[j].min) {
                                res[j].copies++;
                            }
                        }
                }
                if (gather) {
                    const bool g = in && key > glo && key <= ghi;
                    const unsigned mk = __ballot_sync(FULL, g);
                    if (G == 32) {
                        /* one warp: the running count is warp-uniform, no atomic round trip */
                        const uint32_t pos = wbase + __popc(mk & ((1u << lane) - 1u));
                        if (g && pos < cap)
                            dst[pos] = key;
                        wbase += __popc(mk);
                    } else if (mk) {
                        const int leader = __ffs(mk) - 1;
                        unsigned b = 0;
                        if ((int)lane == leader)
                            b = atomicAdd(gcnt, (unsigned)__popc(mk));
                        b = __shfl_sync(FULL, b, leader);
                        const unsigned pos = b + __popc(mk & ((1u << lane) - 1u));
                        if (g && pos < cap)
                            dst[pos] = key;
                    }
                }
            }
    }
    reduce_slots<G>(res, sm);
    if (gather) {
        gsync<G>();
        gtotal = G == 32 ? wbase : *gcnt;
        gsync<G>();
    }
}

__device__ __forceinline__ void eng_reset(Eng &e, const Src &s)
{
    e.src = s;
    e.L = 0;
    e.H = UINT32_MAX;
    e.agg = slot_empty();
    e.U = s.n;
    e.cur = 0;
}

/* Below this many candidates in shared memory a block-per-row search hands the rest of its
 * iterations to its first warp: no block-wide reductions, no __syncthreads. */
#define HANDOFF_N 1024

/* Iterations of qrita_pivot_search until it ends (false) or, with `handoff` > 0, until the
 * candidates are at most `handoff` keys in shared memory (true). */
template <int G, int CAP>
__device__ bool search_iterations(Eng &e, const struct qrita_query &q, int pivots, int max_iter,
                                  int dedup, SearchState &st_, uint32_t *pool, unsigned *gcnt,
                                  SearchSmem &sm, int handoff)
{
    for (; st_.it < max_iter && st_.lo <= st_.hi; st_.it++) {
        if (handoff && e.src.kind == 2 && e.src.n <= handoff)
            return true;
        /* qrita_place_pivots, unrolled (same arithmetic) so the pivots stay in registers */
        const uint32_t lo = st_.lo, hi = st_.hi;
        const uint64_t width = (uint64_t)hi - lo + 1;
        const int c = width <= (uint64_t)pivots ? (int)width : pivots;
        uint32_t thr[NSLOT];
        thr[0] = lo;
#pragma unroll
        for (int j = 0; j < 3; j++) {
            const uint64_t n = (uint64_t)j + 1;
            const uint32_t pj =
                width <= (uint64_t)pivots
                    ? lo + (uint32_t)j
                    : lo + (uint32_t)j +
                          (uint32_t)(n * (width - (uint64_t)pivots) / (uint64_t)(pivots + 1));
            thr[1 + j] = j < c ? pj : hi;
        }
        thr[4] = hi;
        /* slots: lo, the pivots (unused ones repeat hi), hi */
        const bool gather = e.U <= CAP;
        uint32_t *dst = pool + (1 - e.cur) * CAP;
        Slot res[NSLOT];
        uint32_t gtot = 0;
        eval_pass<G>(e, thr, NSLOT, q.measure, res, gather, lo, hi, dst,
                     CAP, gcnt, sm, gtot);
        if (st_.first) {
            st_.first_min = res[0].min;
            st_.first = false;
        }
        st_.iters++;
        int64_t lowc = res[0].cnt, highc = res[4].cnt;
        /* the statistics of each pivot as the CPU's qrita_evaluate gives them, then its verdicts
         * (unrolled over the three slots: no run-time indexing of register arrays) */
        const Slot agg = e.agg;
        bool done = false;
#pragma unroll
        for (int j = 0; j < 3; j++) {
            if (j < c && !done) {
                const Slot &pj = res[1 + j];
                struct qrita_pivot_stat st;
                st.count = (int64_t)agg.cnt + pj.cnt;
                st.mass = agg.mass + pj.mass;
                st.min_key = pj.cnt ? pj.min : agg.min;
                st.copies = pj.cnt ? pj.copies : agg.copies;
                st.copy_weight = st.count ? qrita_measure_of(q.measure, st.min_key) : 0;
                qrita_restrict(&st, q.set);
                enum qrita_verdict v = qrita_classify(&st, q.target, q.set_size);
                if (v == QRITA_PIVOT_ACCEPT) {
                    st_.acc_key = st.min_key;
                    st_.acc_keep = dedup ? qrita_copies_kept(&st, q.target) : QRITA_KEEP_ALL;
                    st_.accepted = true;
                    st_.acc_count = st.count;
                    done = true;
                } else if (v == QRITA_PIVOT_LOW) {
                    st_.floor_key = thr[1 + j];
                    st_.lo = thr[1 + j] + 1;
                    lowc = pj.cnt;
                } else {
                    st_.hi = thr[1 + j] - 1;
                    highc = pj.cnt;
                    done = true;
                }
            }
        }
        if (gather && gtot <= CAP) {
            slot_add(e.agg, res[4]);
            e.src.kind = 2;
            e.src.keys = dst;
            e.src.n = gtot;
            e.L = thr[0];
            e.H = thr[4];
            e.cur = 1 - e.cur;
        }
        if (st_.accepted)
            return false;
        e.U = lowc - highc;
    }
    return false;
}

/* qrita_pivot_search, replayed: the same pivots, the same statistics per pivot (agg + source),
 * the same verdicts. `accepted` says whether a pivot was accepted; `first_min` is the smallest
 * candidate key above q.lo seen by the first pass; `acc_count` the accepted pivot's count. */
template <int G, int CAP>
__device__ struct qrita_boundary search_stage(Eng &e, const struct qrita_query &q, int pivots,
                                              int max_iter, int dedup, int64_t &iters,
                                              bool &accepted, uint32_t &first_min,
                                              int64_t &acc_count, uint32_t *pool,
                                              unsigned *gcnt, SearchSmem &sm)
{
    SearchState st_;
    st_.lo = q.lo;
    st_.hi = q.hi - 1;
    st_.floor_key = q.lo;
    st_.first_min = UINT32_MAX;
    st_.acc_key = 0;
    st_.it = 0;
    st_.first = true;
    st_.accepted = false;
    st_.acc_count = st_.acc_keep = st_.iters = 0;
    if (G > 32) {
        if (search_iterations<G, CAP>(e, q, pivots, max_iter, dedup, st_, pool, gcnt, sm,
                                      HANDOFF_N)) {
            if (threadIdx.x < 32) {
                search_iterations<32, CAP>(e, q, pivots, max_iter, dedup, st_, pool, gcnt, sm,
                                           0);
                if (threadIdx.x == 0)
                    sm.hand = st_;
            }
            __syncthreads();
            st_ = sm.hand;
            __syncthreads();
        }
    } else {
        search_iterations<G, CAP>(e, q, pivots, max_iter, dedup, st_, pool, gcnt, sm, 0);
    }
    iters += st_.iters;
    accepted = st_.accepted;
    if (!st_.first)
        first_min = st_.first_min;
    if (st_.accepted) {
        acc_count = st_.acc_count;
        struct qrita_boundary b = { st_.acc_key, st_.acc_keep };
        return b;
    }
    struct qrita_boundary unresolved = { st_.floor_key, 0 };
    return unresolved;
}

template <int G, int CAP>
__global__ void __launch_bounds__(G == 32 ? 256 : G, G == 32 ? 2 : 1) qr_search(qr_args a)
{
    constexpr int GROUPS = G == 32 ? 8 : 1;
    extern __shared__ __align__(16) uint32_t qr_pool_smem[];
    __shared__ SearchSmem sm;
    const int g = G == 32 ? (int)(threadIdx.x >> 5) : 0;
    const int tid = G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
    const int64_t r = (int64_t)blockIdx.x * GROUPS + g;
    if (r >= a.batch)
        return;
    uint32_t *pool = qr_pool_smem + (size_t)g * 2 * CAP;
    unsigned *gcnt = &sm.gcnt[g];
    qr_row *row = a.rows + r;
    const int64_t V = a.vocab;
    const float *x = a.logits + r * a.stride;
    const int64_t valid = row->valid, gathered = row->gathered;
    const uint32_t max_key = row->max_key, min_key = ~row->inv_min, trunc_key = row->trunc_key;
    const unsigned flags = row->flags;
    const u64 total = row->total, above = row->above;
    const int32_t k = a.k[r];
    const float p = a.p[r];
    qrita_gpu_rstat rs = { 0, 0, 0, 0.0, 0 };
    const int topk = tkp_topk_on(k, V) && k < valid, topp = tkp_topp_on(p);
    uint32_t bkey = 0;
    int cut = -1, pool_ok = 0;
    int64_t pool_n_out = 0;
    if (valid > 0 && (topk || topp)) {
        const int truncate = (flags & 2) != 0, has = (flags & 1) != 0;
        int hit = 0;
        if (truncate) {
            const int fits = has && gathered <= a.cap_cpu;
            hit = a.trunc == QRITA_TRUNC_AUTO && fits &&
                  (topk ? gathered >= k
                        : gathered >= 1 && above >= tkp_topp_target(p, total));
            rs.counted = 1;
            rs.hit = hit;
            rs.outliers = gathered;
            if (!topk)
                rs.outlier_mass = (double)above / (double)total;
        }
        /* A row the CPU searches in full may still be searched on the buffer when the buffer is
         * complete and must hold the answer; the result is checked afterwards (README). */
        bool use_pool = hit, validate = false;
        int64_t pool_n = gathered;
        uint32_t lo_q = hit ? trunc_key : min_key - 1;
        if (!topk && a.trunc == QRITA_TRUNC_AUTO) {
            /* top-p alone: the buffer of qr_gather2 holds every key above lo2 (the CPU's q.lo
             * raised to the mass floor), the lower end of the CPU's search */
            pool_n = row->gathered2;
            lo_q = row->lo2;
            use_pool = pool_n <= a.cap_gpu;
        } else if (!hit && a.trunc == QRITA_TRUNC_AUTO && has && gathered <= a.cap_gpu &&
                   topk && gathered > k) {
            use_pool = true;
            validate = true;
        }
        pool_n_out = pool_n;
        const Src pool_src = { 0, a.keys + r * a.pitch, nullptr, pool_n };
        const Src row_src = { 1, nullptr, x, V };
        const int sort = a.search == QRITA_SORT;
        const int max_iter = sort ? 64 : a.max_iter;
        const int pivots = a.pivots, dedup = a.dedup == QRITA_ON;
        struct qrita_measure weight = { 0, tkp_key_value(max_key) };
        struct qrita_boundary b;
        int64_t iters;
        Eng e;
        for (;;) {
            iters = 0;
            const Src src = use_pool ? pool_src : row_src;
            struct qrita_query q = { lo_q, max_key, weight, 0, valid, qrita_all_valid() };
            bool accepted = false, failed = false;
            uint32_t first_min = UINT32_MAX;
            int64_t acc_count = 0;
            u64 row_total = total;
            b = qrita_all_valid();
            if (topk) {
                struct qrita_query qk = q;
                qk.measure.unit = 1;
                qk.target = (uint64_t)k;
                eng_reset(e, src);
                b = search_stage<G, CAP>(e, qk, pivots, max_iter, dedup, iters, accepted,
                                         first_min, acc_count, pool, gcnt, sm);
                failed = validate && !(accepted && b.key > first_min);
            }
            if (topp && !failed) {
                if (topk) {
                    /* enter_topk_set: one pass at b.key - 1 restricted to the top-k set */
                    eng_reset(e, src);
                    if (accepted)
                        e.U = acc_count;
                    uint32_t thr[NSLOT];
                    for (int j = 0; j < NSLOT; j++)
                        thr[j] = b.key - 1;
                    Slot res[NSLOT];
                    uint32_t gtot = 0;
                    const bool gather = e.U <= CAP;
                    uint32_t *dst = pool + (1 - e.cur) * CAP;
                    eval_pass<G>(e, thr, 1, q.measure, res, gather, b.key - 1, UINT32_MAX, dst,
                                 CAP, gcnt, sm, gtot);
                    struct qrita_pivot_stat st;
                    st.count = res[0].cnt;
                    st.mass = res[0].mass;
                    st.min_key = res[0].min;
                    st.copies = res[0].copies;
                    st.copy_weight = st.count ? qrita_measure_of(q.measure, st.min_key) : 0;
                    qrita_restrict(&st, b);
                    if (gather && gtot <= CAP) {
                        e.src.kind = 2;
                        e.src.keys = dst;
                        e.src.n = gtot;
                        e.L = b.key - 1;
                        e.cur = 1 - e.cur;
                        e.U = gtot;
                    }
                    q.lo = b.key - 1;
                    q.set_size = st.count;
                    q.set = b;
                    row_total = st.mass;
                } else {
                    eng_reset(e, src);
                }
                q.target = tkp_topp_target(p, row_total);
                bool acc2 = false;
                uint32_t fm2 = UINT32_MAX;
                int64_t ac2 = 0;
                b = search_stage<G, CAP>(e, q, pivots, max_iter, dedup, iters, acc2, fm2, ac2,
                                         pool, gcnt, sm);
                if (!topk)
                    failed = validate && !(acc2 && b.key > fm2);
            }
            if (!failed)
                break;
            use_pool = false; /* the buffer did not provably hold the answer: search the row */
            validate = false;
        }
        rs.iterations = sort ? 0 : iters;
        bkey = b.key;
        pool_ok = use_pool;
        /* The mask keeps key > bkey, and the copies of bkey with index <= cut. */
        if (b.keep == QRITA_KEEP_ALL) {
            cut = (int)V;
        } else if (b.keep == 0) {
            cut = -1;
        } else if (use_pool) {
            const uint32_t *pk = a.keys + r * a.pitch, *pi = a.idx + r * a.pitch;
            uint32_t c = 0;
            for (int64_t i = tid; i < pool_n; i += G)
                c += pk[i] == bkey;
            c = group_sum<G>(c, sm);
            if ((int64_t)c <= b.keep) {
                cut = (int)V;
            } else { /* the keep-th smallest index among the copies */
                int64_t lo_i = 0, hi_i = V - 1;
                while (lo_i < hi_i) {
                    const int64_t mid = (lo_i + hi_i) / 2;
                    uint32_t n = 0;
                    for (int64_t i = tid; i < pool_n; i += G)
                        n += pk[i] == bkey && (int64_t)pi[i] <= mid;
                    n = group_sum<G>(n, sm);
                    if ((int64_t)n >= b.keep)
                        hi_i = mid;
                    else
                        lo_i = mid + 1;
                }
                cut = (int)lo_i;
            }
        } else {
            /* walk the row in index order, a group-wide tile at a time */
            int64_t running = 0;
            cut = (int)V;
            const unsigned lane = threadIdx.x & 31;
            for (int64_t base = 0; base < V; base += G) {
                const int64_t i = base + tid;
                const bool eq = i < V && tkp_order_key(x[i]) == bkey;
                const unsigned mk = __ballot_sync(FULL, eq);
                unsigned before = __popc(mk & ((1u << lane) - 1u)), tile = __popc(mk);
                if (G > 32) {
                    const int w = threadIdx.x >> 5;
                    if (lane == 0)
                        sm.wcnt[w] = tile;
                    __syncthreads();
                    tile = 0;
                    for (int j = 0; j < G / 32; j++) {
                        if (j < w)
                            before += sm.wcnt[j];
                        tile += sm.wcnt[j];
                    }
                    __syncthreads();
                }
                if (running + tile >= b.keep) {
                    if (tid == 0)
                        sm.found[g] = UINT32_MAX;
                    gsync<G>();
                    if (eq && running + before + 1 == b.keep)
                        sm.found[g] = (uint32_t)i;
                    gsync<G>();
                    cut = (int)sm.found[g];
                    gsync<G>();
                    break;
                }
                running += tile;
            }
        }
    }
    if (tid == 0) {
        row->bkey = bkey;
        row->cut = cut;
        row->pool_ok = (unsigned)pool_ok;
        row->pool_n = (unsigned)pool_n_out;
        a.rstat[r] = rs;
    }
}

/* ---- qr_mask: every byte of the row's mask ---- */
__device__ __forceinline__ void zero_bytes(uint8_t *p, int64_t n)
{
    const int t = threadIdx.x;
    int64_t head = (int64_t)((16u - ((uintptr_t)p & 15u)) & 15u);
    if (head > n)
        head = n;
    for (int64_t i = t; i < head; i += NT)
        p[i] = 0;
    uint4 *pv = reinterpret_cast<uint4 *>(p + head);
    const int64_t nv = (n - head) >> 4;
    for (int64_t i = t; i < nv; i += NT)
        pv[i] = make_uint4(0u, 0u, 0u, 0u);
    for (int64_t i = head + 16 * nv + t; i < n; i += NT)
        p[i] = 0;
}

__global__ void __launch_bounds__(NT) qr_mask(qr_args a)
{
    const int64_t r = blockIdx.y, V = a.vocab;
    const float *x = a.logits + r * a.stride;
    uint8_t *kept = a.kept + r * V;
    const qr_row *row = a.rows + r;
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    int64_t h, nvec;
    row_geom(x, V, h, nvec);
    const int64_t v0 = (int64_t)blockIdx.x * a.vpc, v1 = min(nvec, v0 + a.vpc);
    const int64_t e0 = h + 4 * min(v0, nvec), e1 = h + 4 * v1, tail = h + 4 * nvec;
    const int64_t n = min((int64_t)row->pool_n, a.cap_gpu);
    const int64_t chunk = (e1 > e0 ? e1 - e0 : 0) + (blockIdx.x == 0 ? V - tail + h : 0);
    if (row->pool_ok && 8 * n <= chunk) {
        if (e1 > e0)
            zero_bytes(kept + e0, e1 - e0);
        if (blockIdx.x == 0) {
            zero_bytes(kept, h);
            zero_bytes(kept + tail, V - tail);
        }
        __syncthreads();
        const uint32_t *pk = a.keys + r * a.pitch, *pi = a.idx + r * a.pitch;
        for (int64_t i = threadIdx.x; i < n; i += NT) {
            const int64_t e = pi[i];
            const bool mine = (e >= e0 && e < e1) || (blockIdx.x == 0 && (e < h || e >= tail));
            const uint32_t key = pk[i];
            if (mine && (key > bkey || (key == bkey && e <= cut)))
                kept[e] = 1;
        }
    } else {
        auto f = [&](float v, int64_t e, bool ok) {
            if (ok) {
                const uint32_t key = tkp_order_key(v);
                kept[e] = (uint8_t)(key > bkey || (key == bkey && e <= cut));
            }
        };
        stream_chunk(x, V, a.vpc, f);
    }
}

/* ---- host ---- */
static size_t carve(size_t *cursor, size_t bytes)
{
    size_t at = (*cursor + 255) & ~(size_t)255;
    *cursor = at + bytes;
    return at;
}

extern "C" int qrita_gpu_plan(struct qrita_gpu_plan *pl, int64_t batch, int64_t vocab,
                              int64_t stride, unsigned ops, int truncation, int search, int dedup,
                              int autotune, double sigma_margin, int sample_block, int max_iter,
                              int64_t cpu_capacity, struct tkp_error *err)
{
    memset(pl, 0, sizeof *pl);
    pl->batch = batch;
    pl->vocab = vocab;
    pl->stride = stride;
    pl->truncation = truncation;
    pl->search = search;
    pl->dedup = dedup;
    pl->autotune = autotune;
    pl->sigma_margin = sigma_margin;
    pl->sample_block = sample_block;
    pl->max_iter = max_iter;
    /* sort: the exact boundary by a quaternary search (its iterations are not counted) */
    pl->pivots = search == QRITA_TERNARY ? 2 : search == QRITA_BINARY ? 1 : 3;
    /* a row with top-k on but k >= its valid count is searched as top-p alone: any top-p */
    pl->need_mass = (ops & (TKP_TOPP | TKP_TOPK_TOPP)) != 0;
    pl->cpu_capacity = cpu_capacity;
    int64_t capg = vocab / 2 > 4096 ? vocab / 2 : 4096;
    pl->gpu_capacity = capg < vocab ? capg : vocab;
    if (pl->gpu_capacity < cpu_capacity)
        pl->gpu_capacity = cpu_capacity;
    int dev = 0, sms = 132;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    pl->sm_count = sms;
    const int64_t nvec = vocab / 4 + 1;
    int64_t cpr;
    if (autotune == QRITA_ON) {
        int64_t want = (8 * (int64_t)sms + batch - 1) / batch; /* ~8 CTAs of 256 per SM */
        int64_t most = (nvec + NT - 1) / NT;                     /* at least a float4 a thread */
        cpr = want < 1 ? 1 : want > most ? most : want;
        pl->vec_per_cta = (nvec + cpr - 1) / cpr;
        /* a warp per row past B = #SMs; a 512-thread block per row below it, and for rows that
         * search the whole row (truncation off or forced fallback) */
        pl->group = (batch > sms && truncation == QRITA_TRUNC_AUTO) ? 32 : BLOCK_G;
    } else {
        pl->vec_per_cta = 1024; /* 4096-element tiles */
        pl->group = BLOCK_G;
    }
    cpr = (nvec + pl->vec_per_cta - 1) / pl->vec_per_cta;
    pl->cta_per_row = (int)cpr;
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<32, CAP_WARP>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      8 * 2 * CAP_WARP * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<BLOCK_G, CAP_BLOCK>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    size_t cur = 0;
    const int64_t pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    pl->ws_rows = carve(&cur, sizeof(qr_row) * (size_t)batch);
    pl->ws_rstat = carve(&cur, sizeof(qrita_gpu_rstat) * (size_t)batch);
    pl->ws_keys = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch));
    pl->ws_idx = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch));
    pl->ws_hist = carve(&cur, sizeof(u64) * QRITA_MASS_BINS * (size_t)batch);
    pl->ws_bytes = cur;
    return TKP_OK;
}

extern "C" int qrita_gpu_run(const struct qrita_gpu_plan *pl, const struct tkp_io *io,
                             void *workspace, void *stream, struct tkp_error *err)
{
    cudaStream_t st = (cudaStream_t)stream;
    char *ws = (char *)workspace;
    qr_args a;
    a.logits = io->logits;
    a.k = io->k;
    a.p = io->p;
    a.kept = io->kept;
    a.rows = (qr_row *)(ws + pl->ws_rows);
    a.rstat = (qrita_gpu_rstat *)(ws + pl->ws_rstat);
    a.keys = (uint32_t *)(ws + pl->ws_keys);
    a.idx = (uint32_t *)(ws + pl->ws_idx);
    a.hist = (u64 *)(ws + pl->ws_hist);
    a.gather2 = pl->need_mass && pl->truncation == QRITA_TRUNC_AUTO;
    a.batch = pl->batch;
    a.vocab = pl->vocab;
    a.stride = pl->stride;
    a.cap_gpu = pl->gpu_capacity;
    a.cap_cpu = pl->cpu_capacity;
    a.pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    a.vpc = pl->vec_per_cta;
    a.trunc = pl->truncation;
    a.search = pl->search;
    a.dedup = pl->dedup;
    a.sample_block = pl->sample_block;
    a.max_iter = pl->max_iter;
    a.pivots = pl->pivots;
    a.margin = pl->sigma_margin;
    if (pl->batch == 0)
        return TKP_OK;
    const dim3 grid((unsigned)pl->cta_per_row, (unsigned)pl->batch);
    qr_prep<<<(unsigned)pl->batch, NT, 0, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    qr_scan<<<grid, NT, 0, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    if (pl->need_mass) {
        qr_mass<<<grid, NT, 0, st>>>(a);
        TKP_LAUNCH_CHECK(err);
    }
    if (a.gather2) {
        qr_gather2<<<grid, NT, 0, st>>>(a);
        TKP_LAUNCH_CHECK(err);
    }
    if (pl->group == 32)
        qr_search<32, CAP_WARP><<<(unsigned)((pl->batch + 7) / 8), 256, 8 * 2 * CAP_WARP * 4, st>>>(a);
    else
        qr_search<BLOCK_G, CAP_BLOCK><<<(unsigned)pl->batch, BLOCK_G, 2 * CAP_BLOCK * 4, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    qr_mask<<<grid, NT, 0, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

extern "C" int qrita_gpu_stats(const struct qrita_gpu_plan *pl, const void *workspace,
                               struct tkp_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!workspace || pl->batch == 0)
        return TKP_OK;
    size_t n = (size_t)pl->batch;
    qrita_gpu_rstat *h = (qrita_gpu_rstat *)malloc(sizeof *h * n);
    if (!h)
        return TKP_ENOMEM;
    if (cudaMemcpy(h, (const char *)workspace + pl->ws_rstat, sizeof *h * n,
                   cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return TKP_EDEVICE;
    }
    out->rows = pl->batch;
    for (size_t r = 0; r < n; r++) {
        if (h[r].counted) {
            out->trunc_hits += h[r].hit;
            out->fallbacks += !h[r].hit;
            out->outliers += (double)h[r].outliers;
            out->outlier_mass += h[r].outlier_mass;
        }
        out->iterations += (double)h[r].iterations;
    }
    free(h);
    return TKP_OK;
}

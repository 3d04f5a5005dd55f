/* qrita_gpu.cu — Qrita on sm_90a. A chain of kernels per run, on one stream (README.md, "GPU"):
 *
 *  qr_prep   <<<B, 256>>>           zero the row's accumulators; sample statistics with the CPU's
 *                                   256-lane double fold; the gather threshold (qrita_rules.h);
 *  qr_scan   <<<(cpr, B), 256>>>    one streaming pass (float4, 4 loads in flight per thread):
 *                                   max/min key, valid count, and every (key, index) above the
 *                                   threshold appended to the row's bounded buffer (warp-aggregated
 *                                   atomic counter per row: buffer order is nondeterministic);
 *  qr_mass   <<<(cpr, B), 256>>>    only when some row is top-p alone: the row's fixed-point mass
 *                                   and that of its outliers (integer atomics: order independent);
 *  qr_gather2 <<<(cpr, B), 256>>>  only for top-p-alone rows (truncation=auto): every key above
 *                                   the mass floor (qrita_rules.h) into the buffer;
 *  qr_search <<<., 256 or 512>>>    per row (a warp per row, 8 rows per block, past B = #SMs; a
 *                                   512-thread block per row below): the CPU's decisions and its
 *                                   pivot search, replayed on the buffer (or on the row when it
 *                                   falls back), with the candidates compacted into shared memory
 *                                   as the search range shrinks; the boundary (key, last kept
 *                                   index among its copies) per row. A warp lists a row with more
 *                                   than HEAVY_N candidates instead, and
 *  qr_search_heavy <<<#SMs, 512>>>  searches the listed rows, a block each;
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
#define HEAVY_N 4096    /* warp-per-row search: rows with more candidates go to a block */

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
    uint32_t *heavy; /* [0] how many rows the warp-per-row search left, [1..] which */
    int gather2; /* qr_gather2 runs: top-p-alone rows skip the buffer writes of qr_scan */
    int64_t batch, vocab, stride, cap_gpu, cap_cpu, pitch, vpc;
    int trunc, search, dedup, sample_block, max_iter, pivots;
    double margin;
};

/* ---- streaming over one CTA's chunk of a row ----
 * The row is split at 16-byte alignment: h scalar head elements, nvec float4 vectors, a scalar
 * tail. CTA c of the row takes vectors [c vpc, (c + 1) vpc); CTA 0 also takes head and tail.
 * stream_batches calls f(a, e, ok, width) with a batch of 4 float4 per thread: a[u] holds the
 * elements e[u] .. e[u] + width - 1 when ok[u]; width is 4 in the body and 1 in the head/tail
 * step. Every other slot holds NaN (order key 0, weight 0). Every thread of the CTA calls f the
 * same number of times, so f may use warp votes. stream_chunk adapts it to f(value, index, ok)
 * per element. */
__device__ __forceinline__ void row_geom(const float *x, int64_t V, int64_t &h, int64_t &nvec)
{
    h = (int64_t)((((16u - ((uintptr_t)x & 15u)) & 15u)) >> 2);
    if (h > V)
        h = V;
    nvec = (V - h) >> 2;
}

/* Indices inside a row fit in 32 bits (V <= TKP_MAX_VOCAB = 2^23). */
template <typename F>
__device__ __forceinline__ void stream_batches(const float *__restrict__ x, int64_t V,
                                               int64_t vpc, F &f)
{
    int64_t h64, nvec64;
    row_geom(x, V, h64, nvec64);
    const int h = (int)h64, nvec = (int)nvec64;
    const int v0 = (int)blockIdx.x * (int)vpc, v1 = min(nvec, v0 + (int)vpc);
    const float4 *xv = reinterpret_cast<const float4 *>(x + h);
    const int t = threadIdx.x;
    const float4 pad = make_float4(NAN, NAN, NAN, NAN);
    for (int base = v0; base < v1; base += 4 * NT) {
        float4 a[4];
        int e[4];
        bool ok[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int j = base + u * NT + t;
            ok[u] = j < v1;
            e[u] = h + 4 * j;
            a[u] = ok[u] ? __ldg(xv + j) : pad;
        }
        f(a, e, ok, 4);
    }
    if (blockIdx.x == 0) {
        const int tail = h + 4 * nvec, extra = h + ((int)V - tail); /* at most 6 */
        for (int base = 0; base < extra; base += NT) {
            const int q = base + t;
            float4 a[4] = { pad, pad, pad, pad };
            int e[4] = { q < h ? q : tail + (q - h), 0, 0, 0 };
            bool ok[4] = { q < extra, false, false, false };
            if (ok[0])
                a[0].x = x[e[0]];
            f(a, e, ok, 1);
        }
    }
}

__device__ __forceinline__ float batch_elem(const float4 (&a)[4], int u, int c)
{
    return c == 0 ? a[u].x : c == 1 ? a[u].y : c == 2 ? a[u].z : a[u].w;
}

template <typename F>
__device__ __forceinline__ void stream_chunk(const float *__restrict__ x, int64_t V, int64_t vpc,
                                             F &f)
{
    auto each = [&](const float4 (&a)[4], const int (&e)[4], const bool (&ok)[4], int width) {
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                f(batch_elem(a, u, c), e[u] + c, ok[u] && c < width);
    };
    stream_batches(x, V, vpc, each);
}

/* Append every element of the batch whose key is > thr to the row's buffer (keys, idx; at most
 * cap entries) at positions taken from *counter: one atomic per warp, the positions by a warp
 * scan of the per-lane counts; predicated stores, no branch per element. keys[u][c] are the
 * batch's order keys (0 for padding). Returns the lane's count. Called by whole warps. */
__device__ __forceinline__ unsigned append_above(const uint32_t (&key)[4][4], const int (&e)[4],
                                                 uint32_t thr, unsigned *counter, uint32_t *keys,
                                                 uint32_t *idx, int64_t cap, bool write)
{
    unsigned hits = 0;
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            hits += key[u][c] > thr;
    if (!write || !__any_sync(FULL, hits))
        return hits;
    const unsigned lane = threadIdx.x & 31;
    unsigned incl = hits;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned y = __shfl_up_sync(FULL, incl, o);
        if (lane >= (unsigned)o)
            incl += y;
    }
    unsigned base = 0;
    if (lane == 31)
        base = atomicAdd(counter, incl);
    base = __shfl_sync(FULL, base, 31);
    if (hits) {
        const unsigned capu = (unsigned)cap; /* cap <= V <= 2^23 */
        const unsigned room = base < capu ? capu - base : 0u;
        unsigned pos = incl - hits; /* relative to base */
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const bool h = key[u][c] > thr;
                if (h && pos < room) {
                    keys[base + pos] = key[u][c];
                    idx[base + pos] = (uint32_t)(e[u] + c);
                }
                pos += h;
            }
    }
    return hits;
}

/* The order keys of a batch (0 for padding: NaN). */
__device__ __forceinline__ void batch_keys(const float4 (&a)[4], uint32_t (&key)[4][4])
{
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            key[u][c] = tkp_order_key(batch_elem(a, u, c));
}

/* Zero bytes [lo, hi) of a mask row with 16-byte stores where aligned. */
__device__ __forceinline__ void zero_bytes(uint8_t *m, int lo, int hi)
{
    if (lo >= hi)
        return;
    const int t = threadIdx.x;
    const int body = min(hi, lo + (int)((16u - ((uintptr_t)(m + lo) & 15u)) & 15u));
    for (int i = lo + t; i < body; i += NT)
        m[i] = 0;
    uint4 *v = reinterpret_cast<uint4 *>(m + body);
    const int nv = (hi - body) >> 4;
    for (int j = t; j < nv; j += NT)
        v[j] = make_uint4(0u, 0u, 0u, 0u);
    for (int i = body + 16 * nv + t; i < hi; i += NT)
        m[i] = 0;
}

/* Zero the CTA's share of a mask row: the bytes of its float4 vectors (and, for CTA 0, the
 * scalar head and tail). */
__device__ __forceinline__ void zero_chunk(uint8_t *kept, const float *x, int64_t V, int64_t vpc)
{
    int64_t h64, nvec64;
    row_geom(x, V, h64, nvec64);
    const int h = (int)h64, nvec = (int)nvec64;
    const int v0 = min(nvec, (int)blockIdx.x * (int)vpc), v1 = min(nvec, v0 + (int)vpc);
    zero_bytes(kept, h + 4 * v0, h + 4 * v1);
    if (blockIdx.x == 0) {
        zero_bytes(kept, 0, h);
        zero_bytes(kept, h + 4 * nvec, (int)V);
    }
}

/* ---- qr_prep: zero the accumulators, sample statistics, threshold ---- */

/* The CPU's fold of the 256 lanes (qrita_passes.c: lane[j] += lane[j + half], half = 128 .. 1):
 * the first three levels in shared memory, the last five (pairs inside one warp) by shuffles,
 * which add the same pairs in the same order. Every thread gets the total. */
__device__ double fold_lanes(double v, double *lane)
{
    const int t = threadIdx.x;
    lane[t] = v;
    __syncthreads();
    for (int half = QRITA_STAT_LANES / 2; half >= 32; half /= 2) {
        if (t < half)
            lane[t] += lane[t + half];
        __syncthreads();
    }
    if (t < 32) {
        double r = lane[t];
        for (int half = 16; half > 0; half /= 2)
            r += __shfl_down_sync(FULL, r, half);
        if (t == 0)
            lane[0] = r;
    }
    __syncthreads();
    const double total = lane[0];
    __syncthreads();
    return total;
}

/* The sum of one count per thread over a group of G threads (a warp, or a block of G / 32
 * warps with `part` holding G / 32 words of shared scratch). Every thread gets the sum. */
template <int G>
__device__ __forceinline__ uint32_t group_sum(uint32_t v, unsigned *part)
{
    v = __reduce_add_sync(FULL, v);
    if (G > 32) {
        if ((threadIdx.x & 31) == 0)
            part[threadIdx.x >> 5] = v;
        __syncthreads();
        v = 0;
        for (int i = 0; i < G / 32; i++)
            v += part[i];
        __syncthreads();
    }
    return v;
}

__global__ void __launch_bounds__(NT) qr_prep(qr_args a)
{
    tkp_allow_dependents(); /* qr_scan may start launching (it waits for this kernel) */
    static_assert(NT == QRITA_STAT_LANES, "one thread per statistics lane");
    const int64_t r = blockIdx.x, V = a.vocab;
    const float *x = a.logits + r * a.stride;
    qr_row *row = a.rows + r;
    const int t = threadIdx.x;
    __shared__ double lane[QRITA_STAT_LANES];
    __shared__ unsigned part[NT / 32];
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
        unsigned c = 0;
        auto load = [&](int64_t base) { /* v[u] = sample base + u * 256 + t (NaN past n) */
#pragma unroll
            for (int u = 0; u < PU; u++) {
                const int64_t i = base + u * QRITA_STAT_LANES + t;
                v[u] = i < n ? x[i] : NAN;
            }
        };
        for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
            load(base);
#pragma unroll
            for (int u = 0; u < PU; u++)
                if (isfinite(v[u])) {
                    s += (double)v[u];
                    c++;
                }
        }
        const unsigned count = group_sum<NT>(c, part);
        const double sum = fold_lanes(s, lane);
        if (count) {
            const double mean = sum / (double)count;
            double s2 = 0.0;
            for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
                if (!one)
                    load(base);
#pragma unroll
                for (int u = 0; u < PU; u++)
                    if (isfinite(v[u])) {
                        double d = (double)v[u] - mean;
                        s2 += d * d;
                    }
            }
            const double sd = sqrt(fold_lanes(s2, lane) / (double)count);
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
    if (t == 0 && r == 0)
        a.heavy[0] = 0;
    if (t == 0) {
        row->lo2 = row->gathered2 = row->pool_n = 0;
        row->max_key = row->inv_min = row->valid = row->gathered = 0;
        row->total = row->above = 0;
        row->trunc_key = thr;
        row->flags = (unsigned)has | ((unsigned)truncate << 1);
    }
}

/* ---- qr_scan: max, min, valid count, outlier gather; zeroes the row's mask chunk ---- */
__global__ void __launch_bounds__(NT, 6) qr_scan(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    const int64_t r = blockIdx.y;
    const float *x = a.logits + r * a.stride;
    qr_row *row = a.rows + r;
    const uint32_t thr = row->trunc_key;
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    uint8_t *kept = a.kept + r * a.vocab;
    const int64_t cap = a.cap_gpu;
    /* a top-p-alone row searches the buffer of qr_gather2: here its outliers are only counted */
    const bool count_only = a.gather2 && !tkp_topk_on(a.k[r], a.vocab) && tkp_topp_on(a.p[r]);
    /* min over valid keys as min(key - 1): an invalid key (0) wraps to UINT32_MAX */
    unsigned kmax = 0, kmin1 = UINT32_MAX, valid = 0, counted = 0;
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                valid += key[u][c] != 0;
                kmax = max(kmax, key[u][c]);
                kmin1 = min(kmin1, key[u][c] - 1u);
            }
        counted += append_above(key, e, thr, &row->gathered, keys, idx, cap, !count_only);
    };
    /* qr_mask writes only the kept tokens of a row searched on its buffer */
    zero_chunk(kept, x, a.vocab, a.vpc);
    stream_batches(x, a.vocab, a.vpc, f);
    kmax = __reduce_max_sync(FULL, kmax);
    kmin1 = __reduce_min_sync(FULL, kmin1);
    valid = __reduce_add_sync(FULL, valid);
    counted = __reduce_add_sync(FULL, counted);
    __shared__ unsigned sh[4][NT / 32];
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        sh[0][w] = kmax;
        sh[1][w] = kmin1;
        sh[2][w] = valid;
        sh[3][w] = counted;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < NT / 32; i++) {
            kmax = max(kmax, sh[0][i]);
            kmin1 = min(kmin1, sh[1][i]);
            valid += sh[2][i];
            counted += sh[3][i];
        }
        if (count_only && counted)
            atomicAdd(&row->gathered, counted);
        if (valid) {
            atomicMax(&row->max_key, kmax);
            atomicMax(&row->inv_min, ~(kmin1 + 1u));
            atomicAdd(&row->valid, valid);
        }
    }
}

/* ---- qr_mass: fixed-point mass of a top-p-alone row ---- */
__global__ void __launch_bounds__(NT) qr_mass(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
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
    tkp_allow_dependents();
    tkp_wait_prerequisite();
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
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
        append_above(key, e, lo, &row->gathered2, keys, idx, a.cap_gpu, true);
    };
    stream_batches(a.logits + r * a.stride, V, a.vpc, f);
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

/* One more key above the slot's threshold, of measure w. */
__device__ __forceinline__ void slot_push(Slot &s, uint32_t key, u64 w)
{
    s.cnt++;
    s.mass += w;
    if (key < s.min) {
        s.min = key;
        s.copies = 1;
    } else if (key == s.min) {
        s.copies++;
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

/* The exact 64-bit sum over the warp from three redux.sync sums of 24-, 24- and 16-bit fields
 * (each field sum stays below 2^32). */
__device__ __forceinline__ u64 warp_sum_u64(u64 m)
{
    const u64 lo = __reduce_add_sync(FULL, (unsigned)(m & 0xFFFFFFu));
    const u64 mid = __reduce_add_sync(FULL, (unsigned)((m >> 24) & 0xFFFFFFu));
    const u64 hi = __reduce_add_sync(FULL, (unsigned)(m >> 48));
    return lo + (mid << 24) + (hi << 48);
}

/* slot_add folded over the warp: sums, the smallest key and the copies of it. */
__device__ __forceinline__ Slot warp_slot_reduce(const Slot &s)
{
    Slot r;
    r.cnt = __reduce_add_sync(FULL, s.cnt);
    r.min = __reduce_min_sync(FULL, s.min);
    r.copies = __reduce_add_sync(FULL, s.min == r.min ? s.copies : 0u);
    r.mass = warp_sum_u64(s.mass);
    return r;
}

template <int G>
__device__ __forceinline__ void reduce_slots(Slot (&s)[NSLOT], SearchSmem &sm)
{
#pragma unroll
    for (int j = 0; j < NSLOT; j++)
        s[j] = warp_slot_reduce(s[j]);
    if constexpr (G > 32) {
        /* the G/32 warp results of slot j folded by warp j, the results broadcast through row
         * G/32 of the scratch */
        static_assert(G / 32 < 32 && G / 32 >= NSLOT, "scratch rows and one warp per slot");
        const int w = threadIdx.x >> 5;
        const unsigned lane = threadIdx.x & 31;
        if (lane == 0)
#pragma unroll
            for (int j = 0; j < NSLOT; j++)
                sm.scratch[w][j] = s[j];
        __syncthreads();
        if (w < NSLOT) {
            const Slot acc = warp_slot_reduce(lane < G / 32 ? sm.scratch[lane][w] : slot_empty());
            if (lane == 0)
                sm.scratch[G / 32][w] = acc;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < NSLOT; j++)
            s[j] = sm.scratch[G / 32][j];
        __syncthreads();
    }
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
                        if (j < ns && key > thr[j])
                            slot_push(res[j], key, w);
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
/* At most this many candidates per lane: the warp keeps them in registers for the rest of the
 * search (register_iterations). */
#define REG_KEYS 8

/* The pivots of one iteration (qrita_place_pivots): how many there are in [lo, hi], and the j-th
 * (0-based) of them. */
__device__ __forceinline__ int pivot_count(uint32_t lo, uint32_t hi, int pivots)
{
    const uint64_t width = (uint64_t)hi - lo + 1;
    return width <= (uint64_t)pivots ? (int)width : pivots;
}

__device__ __forceinline__ uint32_t pivot_at(uint32_t lo, uint32_t hi, int pivots, int j)
{
    const uint64_t width = (uint64_t)hi - lo + 1;
    if (width <= (uint64_t)pivots)
        return lo + (uint32_t)j;
    /* (j + 1) (width - pivots) / (pivots + 1), the divisor a constant per case */
    const uint64_t span = (uint64_t)(j + 1) * (width - (uint64_t)pivots);
    const uint64_t step = pivots == 3 ? span >> 2 : pivots == 1 ? span >> 1 : span / 3u;
    return lo + (uint32_t)j + (uint32_t)step;
}

/* All of them at once, in registers: thr[0] = lo, thr[1..3] the pivots (unused ones repeat hi),
 * thr[4] = hi. Returns how many. */
__device__ __forceinline__ int place_pivots(uint32_t lo, uint32_t hi, int pivots,
                                            uint32_t (&thr)[NSLOT])
{
    const int c = pivot_count(lo, hi, pivots);
    thr[0] = lo;
#pragma unroll
    for (int j = 0; j < 3; j++)
        thr[1 + j] = j < c ? pivot_at(lo, hi, pivots, j) : hi;
    thr[4] = hi;
    return c;
}

/* The CPU's verdict on one pivot `piv` of an iteration, given its statistics over the current
 * source (pj) and those of the keys above the source's window (agg). Updates the search state
 * (lowc/highc get the source counts at the new lo and hi); true when the iteration ends here. */
__device__ __forceinline__ bool judge_one(const Slot &pj, uint32_t piv, const Slot &agg,
                                          const struct qrita_query &q, int dedup,
                                          SearchState &st_, int64_t &lowc, int64_t &highc)
{
    struct qrita_pivot_stat st;
    st.count = (int64_t)agg.cnt + pj.cnt;
    st.mass = agg.mass + pj.mass;
    st.min_key = pj.cnt ? pj.min : agg.min;
    st.copies = pj.cnt ? pj.copies : agg.copies;
    st.copy_weight = st.count ? qrita_measure_of(q.measure, st.min_key) : 0;
    qrita_restrict(&st, q.set);
    const enum qrita_verdict v = qrita_classify(&st, q.target, q.set_size);
    if (v == QRITA_PIVOT_ACCEPT) {
        st_.acc_key = st.min_key;
        st_.acc_keep = dedup ? qrita_copies_kept(&st, q.target) : QRITA_KEEP_ALL;
        st_.accepted = true;
        st_.acc_count = st.count;
        return true;
    }
    if (v == QRITA_PIVOT_LOW) {
        st_.floor_key = piv;
        st_.lo = piv + 1;
        lowc = pj.cnt;
        return false;
    }
    st_.hi = piv - 1;
    highc = pj.cnt;
    return true;
}

/* The verdicts on the c pivots thr[1..c] of one iteration, in order (res[1..3]: their
 * statistics over the current source). */
__device__ __forceinline__ void judge_pivots(const Slot (&res)[NSLOT],
                                             const uint32_t (&thr)[NSLOT], int c, const Slot &agg,
                                             const struct qrita_query &q, int dedup,
                                             SearchState &st_, int64_t &lowc, int64_t &highc)
{
#pragma unroll
    for (int j = 0; j < 3; j++)
        if (j < c && judge_one(res[1 + j], thr[1 + j], agg, q, dedup, st_, lowc, highc))
            break;
}

/* The statistics of the lane-held keys above `piv`, over the warp. Keys outside the window are
 * held as 0, which is above no pivot. */
__device__ __forceinline__ Slot warp_slot(const uint32_t (&key)[REG_KEYS],
                                          const u64 (&w)[REG_KEYS], uint32_t piv)
{
    Slot s = slot_empty();
#pragma unroll
    for (int i = 0; i < REG_KEYS; i++)
        if (key[i] > piv)
            slot_push(s, key[i], w[i]);
    return warp_slot_reduce(s);
}

/* The rest of a search on at most 32 x REG_KEYS candidates (e.src.kind 0 or 2), by one warp
 * with the candidates in registers: the source no longer shrinks (its window and agg stay those
 * at entry), so every pivot's statistics are agg + the lane-held keys above it, the same numbers
 * the shrinking source gives. A pivot's statistics are computed only when it is judged (the
 * verdicts go in order and stop at the first that ends the iteration), and the loops stay
 * rolled: at small batch the search is bound by fetching its code (README, "GPU"). */
__device__ void register_iterations(const Eng &e, const struct qrita_query &q, int pivots,
                                    int max_iter, int dedup, SearchState &st_)
{
    const unsigned lane = threadIdx.x & 31;
    uint32_t key[REG_KEYS];
    u64 w[REG_KEYS];
#pragma unroll
    for (int i = 0; i < REG_KEYS; i++) {
        const int64_t j = lane + 32 * i;
        const uint32_t k = j < e.src.n ? e.src.keys[j] : 0u;
        key[i] = k > e.L && k <= e.H ? k : 0u;
    }
    /* the weights, one key at a time: the arrays rotate by one per step (static indices keep
     * them in registers; one copy of the weight's code) */
#pragma unroll 1
    for (int i = 0; i < REG_KEYS; i++) {
        const uint32_t k0 = key[0];
        const u64 w0 = k0 ? qrita_measure_of(q.measure, k0) : 0;
#pragma unroll
        for (int j = 0; j < REG_KEYS - 1; j++) {
            key[j] = key[j + 1];
            w[j] = w[j + 1];
        }
        key[REG_KEYS - 1] = k0;
        w[REG_KEYS - 1] = w0;
    }
#pragma unroll 1
    for (; st_.it < max_iter && st_.lo <= st_.hi; st_.it++) {
        const uint32_t lo = st_.lo, hi = st_.hi;
        const int c = pivot_count(lo, hi, pivots);
        st_.iters++;
        int64_t lowc = 0, highc = 0;
        /* j = -1: the first pass's statistics at lo (only its smallest key is used) */
#pragma unroll 1
        for (int j = st_.first ? -1 : 0; j < c; j++) {
            const uint32_t piv = j < 0 ? lo : pivot_at(lo, hi, pivots, j);
            const Slot sj = warp_slot(key, w, piv);
            if (j < 0) {
                st_.first_min = sj.min;
                st_.first = false;
            } else if (judge_one(sj, piv, e.agg, q, dedup, st_, lowc, highc)) {
                break;
            }
        }
        if (st_.accepted)
            return;
    }
}

/* Iterations of qrita_pivot_search until it ends (false) or, with `handoff` > 0, until the
 * candidates are at most `handoff` keys in shared memory (true). */
template <int G, int CAP>
__device__ bool search_iterations(Eng &e, const struct qrita_query &q, int pivots, int max_iter,
                                  int dedup, SearchState &st_, uint32_t *pool, unsigned *gcnt,
                                  SearchSmem &sm, int handoff)
{
    for (; st_.it < max_iter && st_.lo <= st_.hi; st_.it++) {
        /* few candidates left: the warp's register search (a block hands off to its warp) */
        const bool few = e.src.kind != 1 && e.src.n <= 32 * REG_KEYS;
        if (handoff && (few || (e.src.kind == 2 && e.src.n <= handoff)))
            return true;
        if (G == 32 && few) {
            register_iterations(e, q, pivots, max_iter, dedup, st_);
            return false;
        }
        const uint32_t lo = st_.lo, hi = st_.hi;
        uint32_t thr[NSLOT];
        const int c = place_pivots(lo, hi, pivots, thr);
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
        judge_pivots(res, thr, c, e.agg, q, dedup, st_, lowc, highc);
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

/* Row r's search by the G threads of group g (tid: the thread's index in the group; pool: the
 * group's 2 x CAP words of shared memory). A warp (G = 32) leaves a row with more than HEAVY_N
 * candidates to qr_search_heavy: it only lists it. */
template <int G, int CAP>
__device__ __forceinline__ void search_row(const qr_args &a, int64_t r, int g, int tid,
                                           uint32_t *pool, SearchSmem &sm)
{
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
        if (G == 32 && (use_pool ? pool_n : V) > HEAVY_N) {
            if (tid == 0)
                a.heavy[1 + atomicAdd(&a.heavy[0], 1u)] = (uint32_t)r;
            return;
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
            c = group_sum<G>(c, sm.wcnt);
            if ((int64_t)c <= b.keep) {
                cut = (int)V;
            } else { /* the keep-th smallest index among the copies */
                int64_t lo_i = 0, hi_i = V - 1;
                while (lo_i < hi_i) {
                    const int64_t mid = (lo_i + hi_i) / 2;
                    uint32_t n = 0;
                    for (int64_t i = tid; i < pool_n; i += G)
                        n += pk[i] == bkey && (int64_t)pi[i] <= mid;
                    n = group_sum<G>(n, sm.wcnt);
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

/* A warp per row (8 rows per block) past B = #SMs, a 512-thread block per row below. */
template <int G, int CAP>
__global__ void __launch_bounds__(G == 32 ? 256 : G, G == 32 ? 2 : 1) qr_search(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    constexpr int GROUPS = G == 32 ? 8 : 1;
    extern __shared__ __align__(16) uint32_t qr_pool_smem[];
    __shared__ SearchSmem sm;
    const int g = G == 32 ? (int)(threadIdx.x >> 5) : 0;
    const int64_t r = (int64_t)blockIdx.x * GROUPS + g;
    if (r >= a.batch)
        return;
    search_row<G, CAP>(a, r, g, G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x,
                       qr_pool_smem + (size_t)g * 2 * CAP, sm);
}

/* After the warp-per-row search: the rows it listed, a 512-thread block each (a grid of one
 * block per SM takes them in turn). Which block takes which row does not matter: a row's
 * result depends on its data only. */
__global__ void __launch_bounds__(BLOCK_G, 1) qr_search_heavy(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    extern __shared__ __align__(16) uint32_t qr_pool_smem[];
    __shared__ SearchSmem sm;
    const unsigned n = a.heavy[0];
    for (unsigned i = blockIdx.x; i < n; i += gridDim.x) {
        search_row<BLOCK_G, CAP_BLOCK>(a, a.heavy[1 + i], 0, (int)threadIdx.x, qr_pool_smem, sm);
        __syncthreads(); /* the next row reuses the shared memory */
    }
}

/* ---- qr_mask: the row's mask ----
 * A row searched on its buffer: qr_scan zeroed the mask, so only the kept tokens (all in the
 * buffer) are written, the buffer shared out over the row's CTAs. Any other row: every byte of
 * the CTA's chunk, in one pass over the logits. */
__global__ void __launch_bounds__(NT) qr_mask(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    const int64_t r = blockIdx.y, V = a.vocab;
    const float *x = a.logits + r * a.stride;
    uint8_t *kept = a.kept + r * V;
    const qr_row *row = a.rows + r;
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    if (row->pool_ok) {
        const int64_t n = min((int64_t)row->pool_n, a.cap_gpu);
        const uint32_t *pk = a.keys + r * a.pitch, *pi = a.idx + r * a.pitch;
        for (int64_t i = (int64_t)blockIdx.x * NT + threadIdx.x; i < n; i += (int64_t)gridDim.x * NT) {
            const uint32_t key = pk[i];
            const int64_t e = pi[i];
            if (key > bkey || (key == bkey && e <= cut))
                kept[e] = 1;
        }
        return;
    }
    auto f = [&](float v, int64_t e, bool ok) {
        if (ok) {
            const uint32_t key = tkp_order_key(v);
            kept[e] = (uint8_t)(key > bkey || (key == bkey && e <= cut));
        }
    };
    stream_chunk(x, V, a.vpc, f);
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
        /* CTAs per row: the fewest whole batches of 4 float4 per thread (the streaming
         * kernels' step) that waste the least of the resident waves of qr_scan */
        int per_sm = 0;
        TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, qr_scan, NT, 0), err);
        const int64_t resident = (int64_t)(per_sm > 0 ? per_sm : 1) * sms;
        const int64_t most = (nvec + 4 * NT - 1) / (4 * NT);
        double best = 0.0;
        cpr = 1;
        for (int64_t c = 1; c <= most && c <= 64; c++) {
            const double waves = (double)((batch * c + resident - 1) / resident) / (double)c;
            if (c == 1 || waves < best * 0.95) {
                best = waves;
                cpr = c;
            }
        }
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
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search_heavy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    size_t cur = 0;
    const int64_t pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    pl->ws_rows = carve(&cur, sizeof(qr_row) * (size_t)batch);
    pl->ws_rstat = carve(&cur, sizeof(qrita_gpu_rstat) * (size_t)batch);
    pl->ws_keys = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch));
    pl->ws_idx = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch));
    pl->ws_hist = carve(&cur, sizeof(u64) * QRITA_MASS_BINS * (size_t)batch);
    pl->ws_heavy = carve(&cur, sizeof(uint32_t) * (size_t)(batch + 1));
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
    a.heavy = (uint32_t *)(ws + pl->ws_heavy);
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
    /* qr_prep follows whatever came before on the stream; the rest are chained by programmatic
     * dependent launch (each waits for its predecessor before reading its results) */
    const dim3 grid((unsigned)pl->cta_per_row, (unsigned)pl->batch), nt(NT);
    qr_prep<<<(unsigned)pl->batch, NT, 0, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    TKP_CUDA_TRY(tkp_launch_dependent(qr_scan, grid, nt, 0, st, a), err);
    if (pl->need_mass)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_mass, grid, nt, 0, st, a), err);
    if (a.gather2)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_gather2, grid, nt, 0, st, a), err);
    if (pl->group == 32) {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<32, CAP_WARP>,
                                          dim3((unsigned)((pl->batch + 7) / 8)), dim3(256),
                                          8 * 2 * CAP_WARP * 4, st, a), err);
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search_heavy, dim3((unsigned)pl->sm_count),
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    } else
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<BLOCK_G, CAP_BLOCK>, dim3((unsigned)pl->batch),
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    TKP_CUDA_TRY(tkp_launch_dependent(qr_mask, grid, nt, 0, st, a), err);
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

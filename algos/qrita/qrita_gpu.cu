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
 * masses, the smallest key and its copies, the k-th smallest index), never on their order.
 * The streaming helpers are in qrita_gpu_stream.cuh, the pivot search in qrita_gpu_search.cuh. */
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

#include "qrita_gpu_stream.cuh"

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

#include "qrita_gpu_search.cuh"

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

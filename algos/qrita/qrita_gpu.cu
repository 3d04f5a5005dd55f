/* qrita_gpu.cu — Qrita on sm_90a. A chain of kernels per run, on one stream (README.md, "GPU"):
 *
 *  qr_prep   <<<B, 256>>>           zero the row's accumulators; sample statistics with the CPU's
 *                                   256-lane double fold; the gather threshold (qrita_rules.h);
 *  qr_scan   <<<(cpr, B), 256>>>    one streaming pass (float4, 4 loads in flight per thread):
 *                                   max/min key, valid count, and every (key, index) above the
 *                                   threshold appended to the row's bounded buffer (warp-aggregated
 *                                   atomic counter per row: buffer order is nondeterministic). A
 *                                   top-p-alone row (truncation=auto) needs no threshold here: its
 *                                   CTAs run while qr_prep still runs and leave their max, min and
 *                                   count in per-CTA partials (qr_mass folds them);
 *  qr_mass   <<<(cpr, B), 256>>>    only when some row is top-p alone: the row's fixed-point mass
 *                                   and that of its outliers, and their number (integer atomics:
 *                                   order independent); and the row's window: its keys within
 *                                   WIN_BINS mass bins of its max (at most WIN_ROW). For the
 *                                   fused batches below, when its grid is resident at once, it
 *                                   does qr_scan's work first (no qr_scan launch): the CTAs of
 *                                   a row meet after the scan (a ticket) and read their chunk
 *                                   again from L1;
 *  qr_gather2 <<<(cpr, B), 256>>>  only for top-p-alone rows (truncation=auto): the mass floor
 *                                   (qrita_rules.h; one warp, a 33-way search); every key above
 *                                   it into the buffer, unless the window holds them all (the
 *                                   floor's bin inside it: on model-like rows) and the search
 *                                   reads the window;
 *  qr_search <<<., 256 or 512>>>    per row (a warp per row, 8 rows per block, past B = #SMs; a
 *                                   512-thread block per row below): the CPU's decisions and its
 *                                   pivot search, replayed on the buffer (or on the row when it
 *                                   falls back), with the candidates compacted into shared memory
 *                                   as the search range shrinks; the boundary (key, last kept
 *                                   index among its copies) per row. A warp lists a row with more
 *                                   than HEAVY_N candidates instead. At B <= 4 top-p alone,
 *                                   block 0 first searches a synthetic row (the same code) while
 *                                   the kernels before it run: a row it then searches itself
 *                                   finds its code fetched; and those batches are fused: a
 *                                   grid of (cpr, B) blocks does qr_gather2's work (CTA 0
 *                                   searches a row whose window holds its candidates, else the
 *                                   last CTA to finish gathering) and qr_mask's (the searching
 *                                   CTA). And
 *  qr_search_heavy <<<#SMs, 512>>>  searches the listed rows, a block each;
 *  qr_mask   <<<(cpr, B), 256>>>    (not fused) writes every byte of the mask: zero-fill +
 *                                   scatter from the buffer, or one pass over the row chunk.
 *
 * Determinism: every decision depends on the SET of buffered entries only (counts, integer
 * masses, the smallest key and its copies, the k-th smallest index), never on their order.
 * The streaming helpers are in qrita_gpu_stream.cuh, the pivot search in qrita_gpu_search.cuh. */
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_segmented_radix_sort.cuh>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu.h"

typedef unsigned long long u64;

__constant__ double qr_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;
static const double host_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;

#define NT 256 /* threads of the streaming kernels */
#define FULL 0xffffffffu
#define CAP_WARP 1024   /* shared-memory candidates per half, warp-per-row search */
#define CAP_BLOCK 16384 /* shared-memory candidates per half, block-per-row search */
#define BLOCK_G 512     /* threads of the block-per-row search */
#define HEAVY_N 4096    /* warp-per-row search: rows with more candidates go to a block */
#define WARM_N 8        /* keys of the warm-up row of the block-per-row search */
#define WARM_MAX_BATCH 4 /* ... for top-p-alone batches up to this size (measured: a loss from
                          * B = 16, and with top-k); the same batches fuse qr_gather2 into
                          * qr_search */
#define WIN_BINS 16 /* the window of a top-p-alone row: its keys of mass bin < WIN_BINS */
#define WIN_CTA 64  /* ... at most this many per CTA of qr_mass (more: the window overflows) */
#define WIN_ROW 256 /* ... and per row */
#define WS_TARGET ((size_t)8 << 20) /* workspace the buffers fill up to (README, "Workspace") */
#define POOL_MIN 512   /* ... but at least this many buffer entries per row */
#define POOL_PER_K 8   /* ... and this many per entry of the largest top-k set */

struct qr_row {
    unsigned max_key, inv_min, valid, gathered; /* qr_scan; qr_mass for a top-p-alone row */
    u64 total, above;                           /* qr_mass (all zeroed by qr_prep) */
    unsigned trunc_key, flags;                  /* qr_prep: flags 1 = threshold, 2 = truncate */
    unsigned bkey, pool_ok;                     /* qr_search: pool_ok 1 = buffer, 2 = window */
    int cut, pool_win;                          /* pool_win: the window holds the candidates */
    unsigned lo2, gathered2;                    /* qr_gather2 or the fused search (top-p alone,
                                                 * truncation=auto) */
    unsigned pool_n, win_n;                     /* qr_search: entries of the buffer in use;
                                                 * qr_mass: entries of the window */
    unsigned ticket, met;                       /* fused search: CTAs of the row done gathering;
                                                 * qr_mass (a.scan_in_mass): CTAs done scanning */
    unsigned gather_key, pooled;                /* qr_prep: the key above which qr_scan buffers
                                                 * (trunc_key unless a.tight); qr_scan: how many
                                                 * keys are above it (the buffer's write counter;
                                                 * `gathered` counts those above trunc_key) */
};

/* One CTA's max key, ~(min key) and valid count of a top-p-alone row (qr_scan -> qr_mass). */
struct qr_part {
    unsigned max_key, inv_min, valid, above; /* above: keys above the CPU's threshold */
};

struct qr_args {
    const float *logits;
    const int32_t *k;
    const float *p;
    uint8_t *kept;
    qr_row *rows;
    qrita_gpu_rstat *rstat;
    uint32_t *keys, *idx;
    uint32_t *wkeys, *widx; /* WIN_ROW per row: the window of qr_mass */
    u64 *hist; /* TKP_MASS_BINS per row */
    qr_part *part; /* cta_per_row per row */
    uint32_t *heavy; /* [0] how many rows the warp-per-row search left, [1..] which */
    uint32_t *sort_in, *sort_out; /* search=sort: vocab entries per row (qrita_gpu_sort.cuh) */
    int *sort_begin, *sort_end;   /* ... each row's segment of them (absolute offsets) */
    int gather2; /* top-p-alone rows take the second-level truncation: they skip the buffer
                  * writes of qr_scan, qr_mass keeps their window, qr_gather2 runs */
    int fuse;    /* qr_gather2's and qr_mask's work is done by qr_search<., ., true>, a grid of
                  * (cpr, B) blocks, whose block 0 first warms up on row `batch` (rows, rstat,
                  * keys, idx hold batch + 1 rows) */
    int mass;         /* some row may be searched as top-p alone: hist, wkeys and widx exist */
    int tight;        /* top-k rows gather above gather_key, not the CPU's threshold (README,
                       * "Workspace") */
    int scan_in_mass; /* a fused batch whose qr_mass grid is resident at once: qr_mass does
                       * qr_scan's work, then the CTAs of a row meet (no qr_scan launch) */
    int64_t batch, vocab, stride, cap_gpu, cap_cpu, pitch, vpc, cpr;
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
    uint32_t thr = UINT32_MAX, gthr = UINT32_MAX;
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
                /* The tight gather (README, "Workspace"): only where the sample predicts that
                 * the CPU's buffer would fill more than half of the GPU's; then above the key
                 * that the sample predicts half of the GPU's buffer above: its m-th largest
                 * key, found bit by bit (integer counts: order-free) */
                if (a.tight && tkp_topk_on(k, V)) {
                    auto at_least = [&](uint32_t key) { /* sample keys >= key, block-wide */
                        unsigned c = 0;
                        for (int64_t base = 0; base < n; base += PU * QRITA_STAT_LANES) {
                            if (!one)
                                load(base);
#pragma unroll
                            for (int u = 0; u < PU; u++)
                                c += tkp_order_key(v[u]) >= key;
                        }
                        return group_sum<NT>(c, part);
                    };
                    const double per_sample = (double)V / (double)n;
                    const double half = 0.5 * (double)a.cap_gpu;
                    if (thr < UINT32_MAX && at_least(thr + 1) * per_sample > half) {
                        const unsigned m = half / per_sample > 1.0 ? (unsigned)(half / per_sample)
                                                                   : 1u;
                        uint32_t sel = 0;
                        for (int bit = 31; bit >= 0; bit--)
                            if (at_least(sel | (1u << bit)) >= m)
                                sel |= 1u << bit;
                        gthr = sel > thr + 1 ? sel - 1 : thr;
                    }
                }
            }
        }
    }
    if (a.mass && t < TKP_MASS_BINS)
        a.hist[r * TKP_MASS_BINS + t] = 0;
    if (t == 0 && r == 0)
        a.heavy[0] = 0;
    if (t == 0 && a.sort_end)
        a.sort_begin[r] = a.sort_end[r] = (int)(r * V);
    if (t == 0) {
        row->lo2 = row->gathered2 = row->pool_n = row->win_n = row->ticket = row->met = 0;
        row->pool_win = 0;
        row->max_key = row->inv_min = row->valid = row->gathered = 0;
        row->total = row->above = 0;
        row->trunc_key = thr;
        row->gather_key = gthr != UINT32_MAX ? gthr : thr;
        row->pooled = 0;
        row->flags = (unsigned)has | ((unsigned)truncate << 1);
    }
}

/* ---- qr_scan: max, min, valid count, outlier gather; zeroes the row's mask chunk ---- */

/* One CTA's scan of its chunk of row r: the chunk's mask bytes zeroed, every key > thr appended
 * to the row's buffer (thr = UINT32_MAX: none), and the chunk's max key, ~(min key), valid
 * count and number of keys > count_thr (`pad`; count_thr <= thr), which thread 0 returns
 * (inv_min 0: no valid key). */
template <bool TIGHT = false>
__device__ qr_part scan_chunk(const qr_args &a, int64_t r, uint32_t thr, uint32_t count_thr)
{
    const float *x = a.logits + r * a.stride;
    qr_row *row = a.rows + r;
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    const int64_t cap = a.cap_gpu;
    /* min over valid keys as min(key - 1): an invalid key (0) wraps to UINT32_MAX */
    unsigned kmax = 0, kmin1 = UINT32_MAX, valid = 0, above = 0;
    /* the count is not the buffer's (only in a tight plan, whose buffer has its own counter) */
    const bool apart = TIGHT && count_thr != thr;
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
                if (apart)
                    above += key[u][c] > count_thr;
            }
        if (thr != UINT32_MAX) {
            const unsigned hits = append_above(key, e, thr, TIGHT ? &row->pooled : &row->gathered,
                                               keys, idx, cap, true);
            if (TIGHT && !apart)
                above += hits;
        }
    };
    /* qr_mask (or the fused search) writes only the kept tokens of a row searched on its buffer */
    zero_chunk(a.kept + r * a.vocab, x, a.vocab, a.vpc);
    stream_batches(x, a.vocab, a.vpc, f);
    kmax = __reduce_max_sync(FULL, kmax);
    kmin1 = __reduce_min_sync(FULL, kmin1);
    valid = __reduce_add_sync(FULL, valid);
    if (TIGHT)
        above = __reduce_add_sync(FULL, above);
    __shared__ unsigned sh[4][NT / 32];
    const int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        sh[0][w] = kmax;
        sh[1][w] = kmin1;
        sh[2][w] = valid;
        if (TIGHT)
            sh[3][w] = above;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int i = 1; i < NT / 32; i++) {
            kmax = max(kmax, sh[0][i]);
            kmin1 = min(kmin1, sh[1][i]);
            valid += sh[2][i];
            if (TIGHT)
                above += sh[3][i];
        }
    const qr_part pt = { kmax, valid ? ~(kmin1 + 1u) : 0u, valid, above };
    return pt;
}

/* Fold a CTA's part into its row (after qr_prep has zeroed the row; thread 0). */
__device__ __forceinline__ void publish_part(qr_row *row, const qr_part &pt)
{
    if (pt.valid) {
        atomicMax(&row->max_key, pt.max_key);
        atomicMax(&row->inv_min, pt.inv_min);
        atomicAdd(&row->valid, pt.valid);
    }
    if (pt.above)
        atomicAdd(&row->gathered, pt.above);
}

/* TIGHT (a.tight): top-k rows buffer the keys above gather_key (counter `pooled`) and count
 * those above the CPU's threshold apart (`gathered`); otherwise `gathered` is both. */
template <bool TIGHT>
__global__ void __launch_bounds__(NT, 6) qr_scan(qr_args a)
{
    tkp_allow_dependents();
    const int64_t r = blockIdx.y;
    qr_row *row = a.rows + r;
    /* a top-p-alone row searches the buffer of qr_gather2 (or qr_mass's window) and qr_mass
     * counts its outliers: it reads nothing of qr_prep, and waits for it only at the end (so
     * that qr_prep has finished when qr_scan has) */
    const bool topp_alone = a.gather2 && !tkp_topk_on(a.k[r], a.vocab) && tkp_topp_on(a.p[r]);
    if (!topp_alone)
        tkp_wait_prerequisite();
    const uint32_t thr = topp_alone ? UINT32_MAX : row->trunc_key;
    const qr_part pt = scan_chunk<TIGHT>(a, r, TIGHT && !topp_alone ? row->gather_key : thr, thr);
    if (threadIdx.x == 0) {
        if (topp_alone)
            a.part[r * a.cpr + blockIdx.x] = pt;
        else
            publish_part(row, pt);
    }
    if (topp_alone)
        tkp_wait_prerequisite();
}

/* ---- qr_mass: fixed-point mass of a top-p-alone row ---- */

/* A row searched as top-p alone: top-p on, and top-k off or at least its valid count (the
 * second form needs the row's valid count; the first is the row's filters alone). */
__device__ __forceinline__ bool qr_topp_alone(const qr_row *row, int32_t k, float p, int64_t V)
{
    const int64_t valid = row->valid;
    return valid > 0 && !(tkp_topk_on(k, V) && k < valid) && tkp_topp_on(p);
}

/* The row fields qr_scan leaves in per-CTA partials for a top-p-alone row: every CTA of qr_mass
 * folds them (warp 0), and CTA 0 stores them in the row for the kernels after. */
__device__ __forceinline__ void fold_parts(const qr_args &a, int64_t r, qr_row *row,
                                           qr_part &folded)
{
    if (threadIdx.x < 32) {
        unsigned kmax = 0, inv_min = 0, valid = 0;
        /* two partials per lane per step, both loads in flight */
#pragma unroll 1
        for (int64_t c0 = threadIdx.x; c0 < a.cpr; c0 += 64) {
            qr_part pt[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const qr_part none = { 0u, 0u, 0u, 0u };
                pt[h] = c0 + 32 * h < a.cpr ? a.part[r * a.cpr + c0 + 32 * h] : none;
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                kmax = max(kmax, pt[h].max_key);
                inv_min = max(inv_min, pt[h].inv_min);
                valid += pt[h].valid;
            }
        }
        kmax = __reduce_max_sync(FULL, kmax);
        inv_min = __reduce_max_sync(FULL, inv_min);
        valid = __reduce_add_sync(FULL, valid);
        if (threadIdx.x == 0) {
            const qr_part f = { kmax, inv_min, valid, 0u }; /* inv_min 0: no valid key */
            folded = f;
            if (blockIdx.x == 0) {
                row->max_key = f.max_key;
                row->inv_min = f.inv_min;
                row->valid = f.valid;
            }
        }
    }
    __syncthreads();
}

/* qr_scan's work inside qr_mass (a.scan_in_mass: small top-p batches, whose (cpr, B) grid the
 * plan found resident at once): every CTA scans its chunk (no row of such a batch gathers in
 * qr_scan), waits for qr_prep (which zeroes the row), folds its part into the row, and meets
 * the other CTAs of its row (a ticket after a fence; spinning is safe since they all run). The
 * row's fold lands in `whole`; the chunk is then read a second time from L1. */
__device__ void scan_and_meet(const qr_args &a, int64_t r, qr_row *row, qr_part &whole)
{
    const qr_part pt = scan_chunk(a, r, UINT32_MAX, UINT32_MAX);
    tkp_wait_prerequisite();
    if (threadIdx.x == 0) {
        publish_part(row, pt);
        __threadfence();
        atomicAdd(&row->met, 1u);
        while (*(volatile unsigned *)&row->met < (unsigned)a.cpr)
            __nanosleep(32);
        __threadfence();
        const qr_part f = { __ldcg(&row->max_key), __ldcg(&row->inv_min), __ldcg(&row->valid),
                            0u };
        whole = f;
    }
    __syncthreads();
}

__global__ void __launch_bounds__(NT) qr_mass(qr_args a)
{
    tkp_allow_dependents();
    const int64_t r = blockIdx.y, V = a.vocab;
    qr_row *row = a.rows + r;
    __shared__ qr_part whole;
    if (a.scan_in_mass)
        scan_and_meet(a, r, row, whole);
    else
        tkp_wait_prerequisite();
    const int32_t k = a.k[r];
    /* a top-p-alone row: qr_scan leaves its outliers to this kernel to count, and its max,
     * min and count in per-CTA partials (to fold here) unless this kernel scanned it */
    const bool topp_alone = a.gather2 && !tkp_topk_on(k, V) && tkp_topp_on(a.p[r]);
    const bool fold_max = topp_alone && !a.scan_in_mass;
    int64_t valid = 0;
    float m = 0.0f;
    if (!fold_max) {
        const qr_part known = a.scan_in_mass ? whole : qr_part{ row->max_key, 0u, row->valid, 0u };
        valid = known.valid;
        if (valid == 0 || (tkp_topk_on(k, V) && k < valid) || !tkp_topp_on(a.p[r]))
            return;
        m = tkp_key_value(known.max_key);
    }
    const uint32_t thr = row->trunc_key;
    __shared__ u64 hs[TKP_MASS_BINS];
    /* the CTA's part of the window (keys of mass bin < WIN_BINS) of a row that qr_gather2 or
     * the fused search truncates again: qr_gather2 skips its pass when the window holds the
     * candidates (on model-like rows a handful of keys) */
    __shared__ uint32_t win_key[WIN_CTA], win_idx[WIN_CTA];
    __shared__ unsigned win_cnt;
    const bool window = a.gather2; /* every row that gets here is searched as top-p alone */
    if (threadIdx.x < TKP_MASS_BINS)
        hs[threadIdx.x] = 0;
    if (threadIdx.x == 0)
        win_cnt = 0;
    /* a max still in qr_scan's partials is folded while the CTA's first batch is loading; the
     * barrier in it (or here) also orders the zeroing of hs */
    bool first = true;
    auto start = [&]() {
        if (fold_max) {
            fold_parts(a, r, row, whole);
            valid = whole.valid;
            m = tkp_key_value(whole.max_key);
        } else {
            __syncthreads();
        }
        first = false;
    };
    u64 tot = 0, ab = 0;
    unsigned n_above = 0; /* a top-p-alone row's outliers (qr_scan counts the others') */
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&ok)[4], int) {
        if (first)
            start();
        const int e0 = e[0]; /* v[u].x is token e0 + 4 NT u (head or tail step: only u = 0) */
        /* padding is NaN: weight 0, key 0. A float4 at a time, its four weights interleaved:
         * a CTA runs this once per row chunk, so it is bound by fetching its instructions, and
         * a rolled loop fetches a quarter of them (README, "Where the time goes") */
        float4 q[4] = { v[0], v[1], v[2], v[3] };
        /* the float4 slots some lane of the warp holds (ok[u] falls with u): a small chunk
         * (many CTAs per row at small batch) skips the padding */
        const unsigned mine = (unsigned)ok[0] | (unsigned)ok[1] << 1 | (unsigned)ok[2] << 2 |
                              (unsigned)ok[3] << 3;
        const unsigned live = __reduce_or_sync(FULL, mine);
        const int slots = 32 - __clz(live);
#pragma unroll 1
        for (int u = 0; u < slots; u++) {
            const float x[4] = { q[0].x, q[0].y, q[0].z, q[0].w };
            q[0] = q[1]; /* the next float4 to the front: static indices stay in registers */
            q[1] = q[2];
            q[2] = q[3];
            u64 w[4];
#pragma unroll
            for (int c = 0; c < 4; c++)
                w[c] = tkp_weight(x[c], m);
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const bool up = tkp_order_key(x[c]) > thr;
                tot += w[c];
                ab += up ? w[c] : 0u;
                n_above += up;
            }
#pragma unroll
            for (int c = 0; c < 4; c++) /* only the tokens near max: few shared atomics */
                if (w[c]) {
                    const int bin = tkp_mass_bin(x[c], m);
                    if (bin < TKP_MASS_BINS)
                        tkp_shared_add_u64(&hs[bin], w[c]);
                    if (window && bin < WIN_BINS) {
                        const unsigned pos = atomicAdd(&win_cnt, 1u);
                        if (pos < WIN_CTA) {
                            win_key[pos] = tkp_order_key(x[c]);
                            win_idx[pos] = (uint32_t)(e0 + 4 * NT * u + c);
                        }
                    }
                }
        }
    };
    stream_batches(a.logits + r * a.stride, V, a.vpc, f);
    if (first) /* a CTA with nothing to read */
        start();
    if (valid == 0)
        return;
    for (int o = 16; o > 0; o >>= 1) {
        tot += __shfl_xor_sync(FULL, tot, o);
        ab += __shfl_xor_sync(FULL, ab, o);
    }
    n_above = __reduce_add_sync(FULL, n_above);
    __shared__ u64 sh[2][NT / 32];
    __shared__ unsigned shn[NT / 32];
    if ((threadIdx.x & 31) == 0) {
        sh[0][threadIdx.x >> 5] = tot;
        sh[1][threadIdx.x >> 5] = ab;
        shn[threadIdx.x >> 5] = n_above;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < NT / 32; i++) {
            tot += sh[0][i];
            ab += sh[1][i];
            n_above += shn[i];
        }
        if (tot)
            atomicAdd(&row->total, tot);
        if (ab)
            atomicAdd(&row->above, ab);
        if (n_above && topp_alone)
            atomicAdd(&row->gathered, n_above);
    }
    if (window && threadIdx.x >= 32 && threadIdx.x < 64) { /* warp 1: the CTA's window */
        const unsigned n = win_cnt, lane = threadIdx.x & 31;
        if (n) {
            unsigned base = 0;
            if (lane == 0) /* an overflowing CTA pushes the row's count past WIN_ROW */
                base = atomicAdd(&row->win_n, n <= WIN_CTA ? n : WIN_ROW + 1u);
            base = __shfl_sync(FULL, base, 0);
            for (unsigned i = lane; n <= WIN_CTA && i < n && base + i < WIN_ROW; i += 32) {
                a.wkeys[r * WIN_ROW + base + i] = win_key[i];
                a.widx[r * WIN_ROW + base + i] = win_idx[i];
            }
        }
    }
    if (threadIdx.x < TKP_MASS_BINS && hs[threadIdx.x])
        atomicAdd(&a.hist[r * TKP_MASS_BINS + threadIdx.x], hs[threadIdx.x]);
}

/* ---- qr_gather2: the second-level truncation of top-p-alone rows (truncation=auto) ----
 * The search of such a row starts at lo2 = the CPU's q.lo raised to the mass floor
 * (tkp_mass_floor); every key > lo2 (with its index) goes to the row's buffer, replacing the
 * sigma outliers (which qr_scan only counted), unless qr_mass's window already holds them. */

/* tkp_mass_floor by one warp (every lane gets the result): the first bin whose running mass
 * reaches the target by a warp scan (two bins per lane), then the smallest key of bin <= b by a
 * 33-way search (7 rounds instead of 32 bisection steps). The bin is non-increasing in the key,
 * so any exact search for that key returns the CPU's. `bin` gets b (TKP_MASS_BINS: none). */
__device__ uint32_t warp_mass_floor(const u64 *hist, u64 target, float max, uint32_t min_key,
                                    uint32_t max_key, int &bin)
{
    static_assert(TKP_MASS_BINS == 64, "two bins per lane");
    const unsigned lane = threadIdx.x & 31;
    const u64 h0 = hist[2 * lane], h1 = hist[2 * lane + 1];
    u64 acc = h0 + h1;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u64 y = __shfl_up_sync(FULL, acc, o);
        if (lane >= (unsigned)o)
            acc += y;
    }
    const u64 before = acc - h0 - h1; /* the mass of bins < 2 lane */
    const unsigned reach0 = __ballot_sync(FULL, before + h0 >= target);
    const unsigned reach1 = __ballot_sync(FULL, acc >= target);
    bin = TKP_MASS_BINS;
    if (!reach1)
        return min_key - 1;
    const int l0 = __ffs(reach0) - 1, l1 = __ffs(reach1) - 1;
    const int b = reach0 && l0 <= l1 ? 2 * l0 : 2 * l1 + 1;
    bin = b;
    /* the first key in [lo, hi] with bin <= b; hi always qualifies (bin(max_key) = 0) */
    uint32_t lo = min_key, hi = max_key;
    while (lo < hi) {
        const uint64_t width = (uint64_t)hi - lo;
        const uint32_t probe = lo + (uint32_t)(width * (lane + 1) / 33); /* < hi */
        const unsigned ok = __ballot_sync(FULL, tkp_mass_bin(tkp_key_value(probe), max) <= b);
        /* the lowest qualifying probe bounds hi; the probe below it (or lo) bounds lo */
        const int first = ok ? __ffs(ok) - 1 : 32;
        const uint32_t below = first == 0 ? lo : __shfl_sync(FULL, probe, (first + 31) & 31) + 1;
        const uint32_t above = first < 32 ? __shfl_sync(FULL, probe, first & 31) : hi;
        lo = first == 0 ? lo : below;
        hi = above;
    }
    return lo - 1;
}

/* The second level of a top-p-alone row, by one warp (every lane gets it): lo, the CPU's q.lo
 * (qrita_row: hit ? trunc_key : min_key - 1) raised to the mass floor, and whether qr_mass's
 * window holds every key > lo: the floor's bin is inside it (keys > floor have bin <= its bin)
 * and no CTA overflowed it. */
struct Second {
    uint32_t lo;
    bool window;
};

__device__ Second second_level(const qr_args &a, int64_t r, const qr_row *row, float p)
{
    const unsigned flags = row->flags;
    const int64_t gathered = row->gathered;
    const u64 total = row->total, target = tkp_topp_target(p, total);
    const uint32_t max_key = row->max_key, min_key = ~row->inv_min;
    const unsigned win_n = row->win_n;
    const int hit = (flags & 2) && (flags & 1) && gathered <= a.cap_cpu && gathered >= 1 &&
                    row->above >= target;
    const uint32_t lo = hit ? row->trunc_key : min_key - 1;
    int bin;
    const uint32_t mf = warp_mass_floor(a.hist + r * TKP_MASS_BINS, target,
                                        tkp_key_value(max_key), min_key, max_key, bin);
    Second s;
    s.lo = mf > lo ? mf : lo;
    s.window = bin < WIN_BINS && win_n <= WIN_ROW;
    return s;
}

/* A CTA's share of the second-level gather (threads [0, NT) of the CTA): every key > lo of its
 * chunk into the row's buffer. */
__device__ __forceinline__ void gather_above(const qr_args &a, int64_t r, qr_row *row,
                                             uint32_t lo)
{
    uint32_t *keys = a.keys + r * a.pitch, *idx = a.idx + r * a.pitch;
    auto f = [&](const float4 (&v)[4], const int (&e)[4], const bool (&)[4], int) {
        uint32_t key[4][4];
        batch_keys(v, key);
        append_above(key, e, lo, &row->gathered2, keys, idx, a.cap_gpu, true);
    };
    stream_batches(a.logits + r * a.stride, a.vocab, a.vpc, f);
}

__global__ void __launch_bounds__(NT) qr_gather2(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    const int64_t r = blockIdx.y, V = a.vocab;
    qr_row *row = a.rows + r;
    const float p = a.p[r];
    if (!qr_topp_alone(row, a.k[r], p, V))
        return;
    __shared__ Second sec;
    if (threadIdx.x < 32) {
        const Second s = second_level(a, r, row, p);
        if (threadIdx.x == 0) {
            sec = s;
            if (blockIdx.x == 0) {
                row->lo2 = s.lo;
                row->pool_win = s.window;
            }
        }
    }
    __syncthreads();
    if (!sec.window)
        gather_above(a, r, row, sec.lo);
}

/* The candidates of a row searched on a buffer: the window of qr_mass, or the buffer. */
__device__ __forceinline__ const uint32_t *pool_keys(const qr_args &a, int64_t r, bool win)
{
    return win ? a.wkeys + r * WIN_ROW : a.keys + r * a.pitch;
}

__device__ __forceinline__ const uint32_t *pool_idx(const qr_args &a, int64_t r, bool win)
{
    return win ? a.widx + r * WIN_ROW : a.idx + r * a.pitch;
}

/* A word of a buffer; `fresh`: other CTAs of this kernel appended to it (the fused search's
 * gather), so it is read past L1, which may hold lines this SM read before they were written. */
__device__ __forceinline__ uint32_t pool_word(const uint32_t *p, bool fresh)
{
    return fresh ? __ldcg(p) : *p;
}

/* The mask of a row searched on a buffer (scan_chunk zeroed it): its kept entries, taken by the
 * threads first, first + step, ... (`fresh` as for pool_word). */
__device__ __forceinline__ void mask_from_pool(const qr_args &a, int64_t r, const qr_row *row,
                                               int64_t first, int64_t step, bool fresh)
{
    const int64_t n = min((int64_t)row->pool_n, a.cap_gpu);
    const bool win = row->pool_ok == 2;
    const uint32_t *pk = pool_keys(a, r, win), *pi = pool_idx(a, r, win);
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    uint8_t *kept = a.kept + r * a.vocab;
    for (int64_t i = first; i < n; i += step) {
        const uint32_t key = pool_word(pk + i, fresh);
        const int64_t e = pool_word(pi + i, fresh);
        if (key > bkey || (key == bkey && e <= cut))
            kept[e] = 1;
    }
}

/* The mask byte of token e of value v, given the row's boundary: keys above bkey, and the copies
 * of bkey up to index cut. */
__device__ __forceinline__ uint8_t kept_byte(float v, int64_t e, uint32_t bkey, int64_t cut)
{
    const uint32_t key = tkp_order_key(v);
    return (uint8_t)(key > bkey || (key == bkey && e <= cut));
}

#include "qrita_gpu_search.cuh"

/* Where row r's boundary search looks, from what the streaming kernels left in its row: the
 * CPU's truncation verdict (its statistics), the candidates (the buffer, the window, or the
 * row) and the lower end of the CPU's query. qr_sort_keys and the search decide alike. */
struct RowPlan {
    bool work;                 /* a valid token and a filter: a boundary to find */
    int topk, topp;
    bool use_pool, validate;   /* validate: the buffer may not hold the answer (checked after) */
    bool in_win;               /* the candidates are qr_mass's window */
    int64_t pool_n;            /* entries of the buffer (or window) searched */
    uint32_t lo_q;             /* the query's lower end: every candidate key is above it */
    qrita_gpu_rstat rs;        /* the row's truncation statistics */
};

__device__ __forceinline__ RowPlan row_plan(const qr_args &a, const qr_row *row, int32_t k,
                                            float p)
{
    const int64_t V = a.vocab;
    const int64_t valid = row->valid, gathered = row->gathered;
    const uint32_t min_key = ~row->inv_min, trunc_key = row->trunc_key;
    const unsigned flags = row->flags;
    const u64 total = row->total, above = row->above;
    RowPlan pl = {};
    pl.topk = tkp_topk_on(k, V) && k < valid;
    pl.topp = tkp_topp_on(p);
    pl.work = valid > 0 && (pl.topk || pl.topp);
    if (!pl.work)
        return pl;
    const int truncate = (flags & 2) != 0, has = (flags & 1) != 0;
    int hit = 0;
    if (truncate) {
        const int fits = has && gathered <= a.cap_cpu;
        hit = a.trunc == QRITA_TRUNC_AUTO && fits &&
              (pl.topk ? gathered >= k : gathered >= 1 && above >= tkp_topp_target(p, total));
        pl.rs.counted = 1;
        pl.rs.hit = hit;
        pl.rs.outliers = gathered;
        if (!pl.topk)
            pl.rs.outlier_mass = (double)above / (double)total;
    }
    /* The buffer holds every key above gather_key when it did not overflow. Equal to the CPU's
     * buffer (gather_key = trunc_key) on a hit, it is searched as the CPU searches it.
     * Otherwise (a row the CPU searches in full, or a buffer gathered above a tighter key) the
     * CPU's query runs on it when it may hold the answer, and the result is checked afterwards
     * (README, "Buffer bound" and "Workspace"); a full buffer, or a failed check, sends the row
     * to the CPU's query over the whole row. search=sort sorts the CPU's candidates: never a
     * buffer the CPU would not search. */
    const int64_t pooled = a.tight ? row->pooled : gathered;
    const bool complete = has && pooled <= a.cap_gpu;
    const bool cpu_pool = row->gather_key == trunc_key;
    pl.use_pool = hit && cpu_pool && complete;
    pl.pool_n = pooled;
    pl.lo_q = hit ? trunc_key : min_key - 1;
    if (!pl.topk && a.trunc == QRITA_TRUNC_AUTO) {
        /* top-p alone: the buffer of qr_gather2 (or the window) holds every key above lo2
         * (the CPU's q.lo raised to the mass floor), the lower end of the CPU's search */
        pl.in_win = row->pool_win != 0;
        pl.pool_n = pl.in_win ? row->win_n : pool_word(&row->gathered2, a.fuse);
        pl.lo_q = row->lo2;
        pl.use_pool = pl.pool_n <= a.cap_gpu;
    } else if (!pl.use_pool && a.trunc == QRITA_TRUNC_AUTO && complete && pl.topk &&
               pooled > k && a.search != QRITA_SORT) {
        pl.use_pool = true;
        pl.validate = true;
    }
    return pl;
}

#include "qrita_gpu_sort.cuh"

/* Row r's search with filters k and p by the G threads of group g (tid: the thread's index in
 * the group; pool: the group's 2 x CAP words of shared memory); r = batch is the warm-up row of
 * qr_search. A warp (G = 32) leaves a row with more than HEAVY_N candidates to qr_search_heavy:
 * it only lists it. */
template <int G, int CAP>
__device__ __forceinline__ void search_row(const qr_args &a, int64_t r, int32_t k, float p, int g,
                                           int tid, uint32_t *pool, SearchSmem &sm)
{
    unsigned *gcnt = &sm.gcnt[g];
    qr_row *row = a.rows + r;
    const int64_t V = a.vocab;
    const float *x = a.logits + r * a.stride;
    const uint32_t max_key = row->max_key;
    const u64 total = row->total;
    const RowPlan plan = row_plan(a, row, k, p);
    qrita_gpu_rstat rs = plan.rs;
    const int topk = plan.topk, topp = plan.topp;
    uint32_t bkey = 0;
    int cut = -1, pool_ok = 0;
    int64_t pool_n_out = 0;
    if (plan.work) {
        const int64_t valid = row->valid;
        bool use_pool = plan.use_pool, validate = plan.validate;
        const int64_t pool_n = plan.pool_n;
        const uint32_t lo_q = plan.lo_q;
        if (G == 32 && (use_pool ? pool_n : V) > HEAVY_N) {
            if (tid == 0)
                a.heavy[1 + atomicAdd(&a.heavy[0], 1u)] = (uint32_t)r;
            return;
        }
        pool_n_out = pool_n;
        const bool in_win = plan.in_win;
        /* fused, not the window: other CTAs of this kernel gathered the buffer */
        const Src pool_src = { a.fuse && !in_win ? 3 : 0, pool_keys(a, r, in_win), nullptr,
                               pool_n };
        const Src row_src = { 1, nullptr, x, V };
        const int sort = a.search == QRITA_SORT;
        const int max_iter = a.max_iter;
        /* search=sort: qr_sort_keys and the segmented sort left the candidates above lo_q
         * sorted in descending order */
        const uint32_t *sorted = sort ? a.sort_out + r * V : nullptr;
        const int64_t n_sorted = sort ? a.sort_end[r] - r * V : 0;
        rs.sorted = n_sorted;
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
                b = sort ? sorted_boundary<G>(sorted, n_sorted, qk, dedup, tid)
                         : search_stage<G, CAP>(e, qk, pivots, max_iter, dedup, iters, accepted,
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
                b = sort ? sorted_boundary<G>(sorted, n_sorted, q, dedup, tid)
                         : search_stage<G, CAP>(e, q, pivots, max_iter, dedup, iters, acc2, fm2,
                                                ac2, pool, gcnt, sm);
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
        pool_ok = use_pool ? 1 + in_win : 0;
        /* The mask keeps key > bkey, and the copies of bkey with index <= cut. */
        if (b.keep == QRITA_KEEP_ALL) {
            cut = (int)V;
        } else if (b.keep == 0) {
            cut = -1;
        } else if (use_pool) {
            const uint32_t *pk = pool_keys(a, r, in_win), *pi = pool_idx(a, r, in_win);
            const bool fresh = pool_src.kind == 3;
            uint32_t c = 0;
            for (int64_t i = tid; i < pool_n; i += G)
                c += pool_word(pk + i, fresh) == bkey;
            c = group_sum<G>(c, sm.wcnt);
            if ((int64_t)c <= b.keep) {
                cut = (int)V;
            } else { /* the keep-th smallest index among the copies */
                int64_t lo_i = 0, hi_i = V - 1;
                while (lo_i < hi_i) {
                    const int64_t mid = (lo_i + hi_i) / 2;
                    uint32_t n = 0;
                    for (int64_t i = tid; i < pool_n; i += G)
                        n += pool_word(pk + i, fresh) == bkey &&
                             (int64_t)pool_word(pi + i, fresh) <= mid;
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

/* The warm-up row (r = batch, past the batch's rows in every per-row array): WARM_N distinct
 * keys of a truncation hit (the buffer complete, its mass the row's). Reads only inputs and
 * writes only that row, as long as the buffer holds WARM_N keys (V >= WARM_N: the caller
 * checks; else the search would read the row, past the logits). */
__device__ __forceinline__ void warm_up_row(const qr_args &a)
{
    const int t = threadIdx.x;
    const float top = 8.0f, step = 0.5f;
    uint32_t *keys = a.keys + a.batch * a.pitch, *idx = a.idx + a.batch * a.pitch;
    qr_row *row = a.rows + a.batch;
    if (t < 32) {
        const uint32_t key = t < WARM_N ? tkp_order_key(top - step * (float)t) : 0u;
        const u64 w = warp_sum_u64(t < WARM_N ? tkp_weight(top - step * (float)t, top) : 0u);
        if (t < WARM_N) {
            keys[t] = key;
            idx[t] = (uint32_t)t;
        }
        if (t == 0) {
            const uint32_t low = tkp_order_key(top - step * (float)WARM_N);
            row->valid = (unsigned)a.vocab;
            row->gathered = row->gathered2 = row->pooled = WARM_N;
            row->pool_win = 0;
            row->max_key = tkp_order_key(top);
            row->inv_min = ~low;
            row->trunc_key = row->lo2 = row->gather_key = low;
            row->flags = 3;
            row->total = row->above = w;
        }
    }
    __syncthreads();
}

/* Fused (a.fuse): the cpr CTAs of row r do qr_gather2's work for it. The window holds the
 * candidates: CTA 0 searches, the others leave. Otherwise each CTA gathers its chunk and the
 * last one to finish (a ticket after a fence: it sees every append) searches. Returns whether
 * this CTA searches row r. Called by the whole block. */
__device__ bool fused_second_level(const qr_args &a, int64_t r)
{
    qr_row *row = a.rows + r;
    const float p = a.p[r];
    __shared__ Second sec;
    __shared__ bool last;
    if (!qr_topp_alone(row, a.k[r], p, a.vocab))
        return blockIdx.x == 0;
    if (threadIdx.x < 32) {
        const Second s = second_level(a, r, row, p);
        if (threadIdx.x == 0)
            sec = s;
    }
    __syncthreads();
    const Second s = sec;
    if (s.window) {
        if (blockIdx.x != 0)
            return false;
    } else {
        if (threadIdx.x < NT)
            gather_above(a, r, row, s.lo);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(&row->ticket, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (!last)
            return false;
        __threadfence();
    }
    if (threadIdx.x == 0) {
        row->lo2 = s.lo;
        row->pool_win = s.window;
    }
    __syncthreads();
    return true;
}

/* Fused: qr_mask's work for row r, by the CTA that searched it: the kept entries of its buffer,
 * or (a row searched in full, or without a filter) every byte of the row. */
__device__ void fused_mask(const qr_args &a, int64_t r)
{
    const qr_row *row = a.rows + r;
    if (row->pool_ok) {
        mask_from_pool(a, r, row, threadIdx.x, blockDim.x, row->pool_ok == 1); /* gathered here */
        return;
    }
    const float *x = a.logits + r * a.stride;
    uint8_t *kept = a.kept + r * a.vocab;
    const uint32_t bkey = row->bkey;
    const int64_t cut = row->cut;
    int64_t h, nvec;
    row_geom(x, a.vocab, h, nvec);
    const int64_t tail = h + 4 * nvec, extra = h + (a.vocab - tail);
    for (int64_t q = threadIdx.x; q < extra; q += blockDim.x) { /* the scalar head and tail */
        const int64_t i = q < h ? q : tail + (q - h);
        kept[i] = kept_byte(x[i], i, bkey, cut);
    }
    /* the float4 body, 4 loads in flight per thread */
    const float4 *xv = reinterpret_cast<const float4 *>(x + h);
    for (int64_t base = threadIdx.x; base < nvec; base += 4 * (int64_t)blockDim.x) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t j = base + u * (int64_t)blockDim.x;
            v[u] = j < nvec ? __ldg(xv + j) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t j = base + u * (int64_t)blockDim.x;
            if (j < nvec) {
                const int64_t e = h + 4 * j;
                kept[e] = kept_byte(v[u].x, e, bkey, cut);
                kept[e + 1] = kept_byte(v[u].y, e + 1, bkey, cut);
                kept[e + 2] = kept_byte(v[u].z, e + 2, bkey, cut);
                kept[e + 3] = kept_byte(v[u].w, e + 3, bkey, cut);
            }
        }
    }
}

/* A warp per row (8 rows per block) past B = #SMs, a 512-thread block per row below. FUSED
 * (a.fuse, its own instantiation so that the other searches carry none of its code: at small
 * batch a search is bound by fetching its code, README "GPU"): a grid of cpr x B blocks
 * (above), and block 0 first runs the same search code on the warm-up row while the streaming
 * kernels before it still run. */
template <int G, int CAP, bool FUSED>
__global__ void __launch_bounds__(G == 32 ? 256 : G, G == 32 ? 2 : 1) qr_search(qr_args a)
{
    static_assert(!FUSED || G > 32, "the fused search is block-per-row");
    tkp_allow_dependents();
    constexpr int GROUPS = G == 32 ? 8 : 1;
    extern __shared__ __align__(16) uint32_t qr_pool_smem[];
    __shared__ SearchSmem sm;
    const int g = G == 32 ? (int)(threadIdx.x >> 5) : 0;
    const int64_t r = FUSED ? (int64_t)blockIdx.y : (int64_t)blockIdx.x * GROUPS + g;
    /* launched when a.fuse; a buffer below WARM_N keys (V < WARM_N) cannot hold the warm-up
     * row, whose search would then read a row past the batch (such a row needs no warming) */
    const bool warm = FUSED && blockIdx.x == 0 && blockIdx.y == 0 && a.cap_gpu >= WARM_N;
    /* pass 0: the warm-up row with row 0's p (a warm-up batch has no top-k row); pass 1: row r */
#pragma unroll 1
    for (int pass = warm ? 0 : 1; pass < 2; pass++) {
        int64_t row = a.batch;
        int32_t k = 0;
        if (pass == 0) {
            warm_up_row(a);
        } else {
            tkp_wait_prerequisite();
            if (r >= a.batch)
                return;
            if (FUSED && !fused_second_level(a, r))
                return;
            row = r;
            k = a.k[r];
        }
        search_row<G, CAP>(a, row, k, a.p[pass ? r : 0], g,
                           G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x,
                           qr_pool_smem + (size_t)g * 2 * CAP, sm);
        if (G > 32)
            __syncthreads();
    }
    if (FUSED)
        fused_mask(a, r);
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
        const int64_t r = a.heavy[1 + i];
        search_row<BLOCK_G, CAP_BLOCK>(a, r, a.k[r], a.p[r], 0, (int)threadIdx.x, qr_pool_smem, sm);
        __syncthreads(); /* the next row reuses the shared memory */
    }
}

/* ---- qr_mask: the row's mask ----
 * A row searched on its buffer: scan_chunk zeroed the mask, so only the kept tokens (all in the
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
        mask_from_pool(a, r, row, (int64_t)blockIdx.x * NT + threadIdx.x, (int64_t)gridDim.x * NT,
                       false);
        return;
    }
    auto f = [&](float v, int64_t e, bool ok) {
        if (ok)
            kept[e] = kept_byte(v, e, bkey, cut);
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

/* The GPU's buffer entries per row (README, "Buffer bound and workspace"): max(4096, V/2),
 * never more than V (more than the CPU's max(4096, V/4)), while the batch's buffers fit
 * WS_TARGET bytes beside the
 * other per-row arrays (`fixed`); past that, what fits, but at least POOL_MIN entries and
 * POOL_PER_K per top-k entry; `whole`: max(4096, V/2) whatever the batch. TKP_QRITA_POOL=N
 * forces N (tests: the tight gather on small problems). */
static int64_t full_capacity(int64_t vocab)
{
    const int64_t full = vocab / 2 > 4096 ? vocab / 2 : 4096;
    return full < vocab ? full : vocab;
}

static int64_t pool_capacity(int64_t batch, int64_t vocab, int32_t k_max, size_t fixed,
                             bool whole)
{
    const int64_t full = full_capacity(vocab);
    const char *forced = getenv("TKP_QRITA_POOL");
    if (forced && *forced) {
        const long long n = atoll(forced);
        return n < 1 ? 1 : n < full ? n : full;
    }
    if (batch <= 0 || whole)
        return full;
    /* two arrays of `pitch` (the entries rounded up to 4) words per row and WARM_N more */
    const size_t tail = 2 * sizeof(uint32_t) * WARM_N;
    const int64_t room =
        fixed + tail < WS_TARGET ? (int64_t)((WS_TARGET - fixed - tail) / (8 * (size_t)batch)) - 3
                                 : 0;
    int64_t least = (int64_t)POOL_PER_K * (k_max > 0 ? k_max : 0);
    least = least > POOL_MIN ? least : POOL_MIN;
    int64_t cap = room > least ? room : least;
    cap = cap < full ? cap : full;
    return cap > WARM_N ? cap : (full < WARM_N ? full : WARM_N);
}

/* search=sort's workspace: each row's segment bounds, its keys twice (in, sorted) and the
 * segmented sort's scratch, whose size CUB reports. CUB counts keys in an int. */
static int sort_workspace(struct qrita_gpu_plan *pl, size_t *cur, struct tkp_error *err)
{
    const int64_t items = pl->batch * pl->vocab;
    if (items > INT32_MAX) {
        tkp_error_set(err, "qrita: search=sort on the GPU sorts at most %d keys per run "
                      "(batch x vocab = %lld); use a smaller batch", INT32_MAX, (long long)items);
        return TKP_EINVAL;
    }
    size_t scratch = 0;
    TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                     nullptr, scratch, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                     (int)items, (int)pl->batch, (const int *)nullptr, (const int *)nullptr),
                 err);
    pl->ws_sort_begin = carve(cur, sizeof(int) * (size_t)pl->batch);
    pl->ws_sort_end = carve(cur, sizeof(int) * (size_t)pl->batch);
    pl->ws_sort_in = carve(cur, sizeof(uint32_t) * (size_t)items);
    pl->ws_sort_out = carve(cur, sizeof(uint32_t) * (size_t)items);
    pl->ws_sort_tmp = carve(cur, scratch);
    pl->sort_tmp_bytes = scratch;
    return TKP_OK;
}

extern "C" int qrita_gpu_plan(struct qrita_gpu_plan *pl, int64_t batch, int64_t vocab,
                              int64_t stride, unsigned ops, int32_t k_max, int truncation,
                              int search, int dedup,
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
    /* search=sort walks sorted candidates (qrita_gpu_sort.cuh): no pivots */
    pl->pivots = search == QRITA_TERNARY ? 2 : search == QRITA_BINARY ? 1 : 3;
    /* a row with top-k on but k >= its valid count is searched as top-p alone: any top-p */
    pl->need_mass = (ops & (TKP_TOPP | TKP_TOPK_TOPP)) != 0;
    pl->ops = ops;
    pl->cpu_capacity = cpu_capacity;
    int dev = 0, sms = 132;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    pl->sm_count = sms;
    const int64_t nvec = vocab / 4 + 1;
    int64_t cpr;
    if (autotune == QRITA_ON) {
        /* CTAs per row: the fewest that waste the least of the resident waves of qr_scan (a
         * larger count must gain 5%), in chunks down to one float4 per thread and at most 64
         * steps' worth of CTAs (64, or 256 of one float4 per thread). Small chunks shorten each
         * thread's chain of instructions in qr_mass's weights. Measured: at B <= 4 (the fused
         * search, one 512-thread CTA per chunk) chunks below a whole step of 4 float4 per
         * thread lose (top-p alone, B = 1: 25.3 -> 32.2 us); past it they gain. */
        int per_sm = 0;
        TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, qr_scan<false>, NT, 0),
                     err);
        const int64_t resident = (int64_t)(per_sm > 0 ? per_sm : 1) * sms;
        const int64_t chunk = batch <= WARM_MAX_BATCH ? 4 * NT : NT;
        const int64_t most = (nvec + chunk - 1) / chunk;
        double best = 0.0;
        cpr = 1;
        for (int64_t c = 1; c <= most && c <= 64 * 4 * NT / chunk; c++) {
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
    int mass_per_sm = 0;
    TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&mass_per_sm, qr_mass, NT, 0), err);
    pl->mass_resident = (int64_t)mass_per_sm * sms;
    /* tests: the fused batches with qr_scan launched apart, as on a device too small to hold
     * qr_mass's grid at once */
    const char *apart = getenv("TKP_QRITA_SCAN_APART");
    pl->scan_apart = apart && *apart && strcmp(apart, "0") != 0;

    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<32, CAP_WARP, false>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      8 * 2 * CAP_WARP * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<BLOCK_G, CAP_BLOCK, false>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<BLOCK_G, CAP_BLOCK, true>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search_heavy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    /* the per-row arrays first (their size decides the buffers' room), the buffers last;
     * one row more: the warm-up row of qr_search (WARM_N keys) */
    size_t cur = 0;
    pl->ws_rows = carve(&cur, sizeof(qr_row) * (size_t)(batch + 1));
    pl->ws_rstat = carve(&cur, sizeof(qrita_gpu_rstat) * (size_t)(batch + 1));
    /* the window and the mass histogram serve only rows searched as top-p alone */
    const size_t mass_rows = pl->need_mass ? (size_t)batch : 0;
    pl->ws_wkeys = carve(&cur, sizeof(uint32_t) * WIN_ROW * mass_rows);
    pl->ws_widx = carve(&cur, sizeof(uint32_t) * WIN_ROW * mass_rows);
    pl->ws_hist = carve(&cur, sizeof(u64) * TKP_MASS_BINS * mass_rows);
    pl->ws_part = carve(&cur, sizeof(qr_part) * (size_t)(cpr * batch));
    pl->ws_heavy = carve(&cur, sizeof(uint32_t) * (size_t)(batch + 1));
    /* search=sort sorts the CPU's candidates: a buffer that holds every hit (its workspace is
     * a sort's, two keys per token, whatever the buffer takes). So does a batch with
     * top-p-alone rows: the 8 MiB buffers sent the flat rows of model-like logits (a top-p set
     * of ~14000 tokens) to a search of the whole row, and a batch waits for its slowest row
     * (README, "Workspace": Figure 2 at B = 64, 164 -> 432 us) */
    const bool whole = search == QRITA_SORT || (ops & TKP_TOPP) != 0;
    pl->gpu_capacity = pool_capacity(batch, vocab, k_max, cur + 2 * 256, whole);
    /* tight possible where the buffer is smaller than the CPU's and some row has a top-k
     * threshold; each such row decides from its sample (qr_prep) */
    const double cpu = qrita_delta_topk(k_max, vocab, host_quantile);
    pl->tight = search != QRITA_SORT && pl->gpu_capacity < cpu_capacity && k_max > 0 &&
                isfinite(cpu);
    const int64_t pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    pl->ws_keys = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch + WARM_N));
    pl->ws_idx = carve(&cur, sizeof(uint32_t) * (size_t)(pitch * batch + WARM_N));
    if (search == QRITA_SORT) {
        const int rc = sort_workspace(pl, &cur, err);
        if (rc != TKP_OK)
            return rc;
    }
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
    a.wkeys = (uint32_t *)(ws + pl->ws_wkeys);
    a.widx = (uint32_t *)(ws + pl->ws_widx);
    a.hist = (u64 *)(ws + pl->ws_hist);
    a.part = (qr_part *)(ws + pl->ws_part);
    a.heavy = (uint32_t *)(ws + pl->ws_heavy);
    const bool sort = pl->search == QRITA_SORT;
    a.sort_in = sort ? (uint32_t *)(ws + pl->ws_sort_in) : nullptr;
    a.sort_out = sort ? (uint32_t *)(ws + pl->ws_sort_out) : nullptr;
    a.sort_begin = sort ? (int *)(ws + pl->ws_sort_begin) : nullptr;
    a.sort_end = sort ? (int *)(ws + pl->ws_sort_end) : nullptr;
    a.mass = pl->need_mass;
    a.tight = pl->tight;
    a.gather2 = pl->need_mass && pl->truncation == QRITA_TRUNC_AUTO;
    /* small top-p-alone batches searched on a buffer (truncation auto), a block per row */
    a.fuse = pl->group == BLOCK_G && pl->truncation == QRITA_TRUNC_AUTO && pl->ops == TKP_TOPP &&
             pl->batch <= WARM_MAX_BATCH && !sort;
    /* qr_mass's CTAs of a row wait for each other: only when all of them (and qr_prep's, which
     * may still run) fit on the device at once. Assumes nothing else holds the SMs for good
     * (another such run in flight, a persistent kernel, an MPS share: README "fourth round") */
    a.scan_in_mass = a.fuse && pl->cta_per_row * pl->batch + pl->batch <= pl->mass_resident &&
                     !pl->scan_apart;
    a.batch = pl->batch;
    a.vocab = pl->vocab;
    a.stride = pl->stride;
    a.cap_gpu = pl->gpu_capacity;
    a.cap_cpu = pl->cpu_capacity;
    a.pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    a.vpc = pl->vec_per_cta;
    a.cpr = pl->cta_per_row;
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
    if (!a.scan_in_mass)
        TKP_CUDA_TRY(pl->tight ? tkp_launch_dependent(qr_scan<true>, grid, nt, 0, st, a)
                               : tkp_launch_dependent(qr_scan<false>, grid, nt, 0, st, a),
                     err);
    if (pl->need_mass)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_mass, grid, nt, 0, st, a), err);
    if (a.gather2 && !a.fuse)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_gather2, grid, nt, 0, st, a), err);
    if (sort) { /* the candidates sorted (plain launches: each waits for all before it) */
        qr_sort_keys<<<grid, nt, 0, st>>>(a);
        TKP_LAUNCH_CHECK(err);
        size_t scratch = pl->sort_tmp_bytes;
        TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                         ws + pl->ws_sort_tmp, scratch, a.sort_in, a.sort_out,
                         (int)(pl->batch * pl->vocab), (int)pl->batch, a.sort_begin, a.sort_end,
                         0, 32, st),
                     err);
    }
    if (pl->group == 32) {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<32, CAP_WARP, false>,
                                          dim3((unsigned)((pl->batch + 7) / 8)), dim3(256),
                                          8 * 2 * CAP_WARP * 4, st, a), err);
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search_heavy, dim3((unsigned)pl->sm_count),
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    } else if (a.fuse) {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<BLOCK_G, CAP_BLOCK, true>, grid,
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    } else {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<BLOCK_G, CAP_BLOCK, false>,
                                          dim3((unsigned)pl->batch), dim3(BLOCK_G),
                                          2 * CAP_BLOCK * 4, st, a), err);
    }
    if (!a.fuse) /* fused: the search writes the masks */
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
        out->sorted += (double)h[r].sorted;
    }
    free(h);
    return TKP_OK;
}

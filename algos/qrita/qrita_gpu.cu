/* qrita_gpu.cu — Qrita on sm_90a. A chain of kernels per run, on one stream (README.md, "GPU"):
 *
 *  qr_prep   <<<B, 256>>>           zero the row's accumulators; a row of min-p and top-k off
 *                                   counts its k' first (qrita_gpu_minp.cuh); sample statistics
 *                                   with the CPU's 256-lane double fold; the gather threshold
 *                                   (qrita_rules.h);
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
 *                                   512-thread block per row below): min-p with top-k folded
 *                                   into k (qrita_gpu_minp.cuh); the CPU's decisions and its
 *                                   pivot search, replayed on the buffer (or on the row when it
 *                                   falls back), with the candidates compacted into shared memory
 *                                   as the search range shrinks; the boundary (key, last kept
 *                                   index among its copies) per row. A warp lists a row with more
 *                                   than heavy_n (HEAVY_N) candidates instead. At B <= 4 top-p
 *                                   alone, block 0 first searches a synthetic row (the same code)
 *                                   while the kernels before it run: a row it then searches itself
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
 * The kernels and the host side are here; the device code they call is in one header per
 * layer (README.md, "GPU source layout"). */
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_segmented_radix_sort.cuh>

#include "../common/cuda_util.h"
#include "../common/gpu_block.cuh"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_minp.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/prob.h"
#include "qrita.h"
#include "qrita_gpu.h"
#include "qrita_gpu_types.cuh"
#include "qrita_gpu_group.cuh"
#include "qrita_gpu_stream.cuh"
#include "qrita_gpu_prep.cuh"
#include "qrita_gpu_scan.cuh"
#include "qrita_gpu_mass.cuh"
#include "qrita_gpu_second.cuh"
#include "qrita_gpu_mask.cuh"
#include "qrita_gpu_slot.cuh"
#include "qrita_gpu_minp.cuh"
#include "qrita_gpu_search.cuh"
#include "qrita_gpu_row_plan.cuh"
#include "qrita_gpu_sort.cuh"
#include "qrita_gpu_boundary.cuh"
#include "qrita_gpu_workspace.cuh"

static const double host_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;

/* Host-side shape of the run (device constants: qrita_gpu_types.cuh; workspace:
 * qrita_gpu_workspace.cuh). */
#define WARM_MAX_BATCH 4 /* the warm-up of the block-per-row search runs for top-p-alone batches
                          * up to this size (measured: a loss from B = 16, and with top-k); the
                          * same batches fuse qr_gather2 into qr_search */

/* ---- qr_prep: zero the accumulators, sample statistics, threshold ---- */

template <class E>
__global__ void __launch_bounds__(NT) qr_prep(qr_args a)
{
    tkp_allow_dependents(); /* qr_scan may start launching (it waits for this kernel) */
    static_assert(NT == QRITA_STAT_LANES, "one thread per statistics lane");
    const int64_t r = blockIdx.x, V = a.vocab;
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    qr_row *row = a.rows + r;
    const int t = threadIdx.x;
    __shared__ double lane[QRITA_STAT_LANES];
    __shared__ unsigned part[NT / 32];
    const float p = a.io.p[r];
    /* min-p with top-k off: k' first, the threshold from it (qrita_gpu_minp.cuh) */
    const int32_t k = qr_minp_first(a, r, a.io.k[r])
                          ? prep_minp_fold<E>(x, V, a.io.k[r], a.io.min_p[r])
                          : a.io.k[r];
    const int truncate = a.trunc != QRITA_TRUNC_OFF && (tkp_topk_on(k, V) || tkp_topp_on(p));
    uint32_t thr = UINT32_MAX, gthr = UINT32_MAX;
    const int has = truncate ? sample_thresholds<E>(a, x, k, p, lane, part, thr, gthr) : 0;
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
        row->k_trunc = k;
        row->flags = (unsigned)has | ((unsigned)truncate << 1);
    }
}

/* ---- qr_scan: max, min, valid count, outlier gather; zeroes the row's mask chunk ---- */

/* CTAs of qr_scan per SM: float32 at 6 (40 registers); a 16-bit row keeps two batches of
 * vectors in flight (stream_depth), which spills under 40 registers: 5 (48 registers). */
template <class E> __host__ __device__ constexpr int scan_min_blocks(void)
{
    return stream_depth<E>() == 1 ? 6 : 5;
}

/* Is row r top-p alone in qr_scan (and qr_mass)? Before qr_prep has finished (prepped false),
 * false for a row whose k qr_prep folds min-p into (its k_trunc is not there yet). */
__device__ __forceinline__ bool scan_topp_alone(const qr_args &a, int64_t r, const qr_row *row,
                                                bool prepped)
{
    int32_t k = a.io.k[r];
    if (qr_minp_first(a, r, k)) {
        if (!prepped)
            return false;
        k = row->k_trunc;
    }
    return a.gather2 && !tkp_topk_on(k, a.vocab) && tkp_topp_on(a.io.p[r]);
}

/* TIGHT (a.tight): top-k rows buffer the keys above gather_key (counter `pooled`) and count
 * those above the CPU's threshold apart (`gathered`); otherwise `gathered` is both. */
template <bool TIGHT, class E>
__global__ void __launch_bounds__(NT, scan_min_blocks<E>()) qr_scan(qr_args a)
{
    tkp_allow_dependents();
    const int64_t r = blockIdx.y;
    qr_row *row = a.rows + r;
    /* a top-p-alone row searches the buffer of qr_gather2 (or qr_mass's window) and qr_mass
     * counts its outliers: it reads nothing of qr_prep, and waits for it only at the end (so
     * that qr_prep has finished when qr_scan has); but a row whose k qr_prep folds min-p into
     * is top-p alone only if its k' is (qrita_gpu_minp.cuh) */
    bool topp_alone = scan_topp_alone(a, r, row, false);
    if (!topp_alone)
        tkp_wait_prerequisite();
    topp_alone = scan_topp_alone(a, r, row, true);
    const uint32_t thr = topp_alone ? UINT32_MAX : row->trunc_key;
    const uint32_t gather_thr = TIGHT && !topp_alone ? row->gather_key : thr;
    const qr_part pt = scan_chunk<E, TIGHT>(a, r, gather_thr, thr);
    topp_alone = scan_topp_alone(a, r, row, true); /* read again: no register held over the scan */
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

template <class E>
__global__ void __launch_bounds__(NT) qr_mass(qr_args a)
{
    tkp_allow_dependents();
    const int64_t r = blockIdx.y, V = a.vocab;
    qr_row *row = a.rows + r;
    __shared__ qr_part whole;
    if (a.scan_in_mass)
        scan_and_meet<E>(a, r, row, whole);
    else
        tkp_wait_prerequisite();
    const int32_t k = row->k_trunc;
    /* a top-p-alone row: qr_scan leaves its outliers to this kernel to count, and its max,
     * min and count in per-CTA partials (to fold here) unless this kernel scanned it */
    const bool topp_alone = a.gather2 && !tkp_topk_on(k, V) && tkp_topp_on(a.io.p[r]);
    const bool fold_max = topp_alone && !a.scan_in_mass;
    int64_t valid = 0;
    float m = 0.0f;
    if (!fold_max) {
        const qr_part known = a.scan_in_mass ? whole : qr_part{ row->max_key, 0u, row->valid, 0u };
        valid = known.valid;
        if (valid == 0 || (tkp_topk_on(k, V) && k < valid) || !tkp_topp_on(a.io.p[r]))
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
        mass_of_batch(v, e, ok, m, thr, window, tot, ab, n_above, hs, win_key, win_idx,
                      &win_cnt);
    };
    stream_batches<E>(tkp_row_ptr<E>(a.io.logits, a.stride, r), V, a.vpc, f);
    if (first) /* a CTA with nothing to read */
        start();
    if (valid == 0)
        return;
    __shared__ u64 sh[2][NT / 32];
    __shared__ unsigned shn[NT / 32];
    add_row_mass(row, tot, ab, n_above, topp_alone, sh, shn);
    if (window && threadIdx.x >= 32 && threadIdx.x < 64) /* warp 1: the CTA's window */
        publish_window(a, r, row, win_key, win_idx, win_cnt);
    if (threadIdx.x < TKP_MASS_BINS && hs[threadIdx.x])
        atomicAdd(&a.hist[r * TKP_MASS_BINS + threadIdx.x], hs[threadIdx.x]);
}

/* ---- qr_gather2: the second-level truncation of top-p-alone rows (truncation=auto) ----
 * (qrita_gpu_second.cuh) */

template <class E>
__global__ void __launch_bounds__(NT) qr_gather2(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    const int64_t r = blockIdx.y, V = a.vocab;
    qr_row *row = a.rows + r;
    const float p = a.io.p[r];
    if (!qr_topp_alone(row, row->k_trunc, p, V))
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
        gather_above<E>(a, r, row, sec.lo);
}

/* ---- qr_sort_keys: search=sort's candidates (qrita_gpu_sort.cuh) ---- */

/* search=sort, before the sort: the keys of row r's candidates (row_plan: the buffer, the
 * window or the row) above the query's lower end, appended to the row's segment of sort_in
 * (sort_end[r] starts at the segment's first entry and ends past its last). A grid of
 * (cpr, B) CTAs shares each row's candidates out; a CTA compacts a tile by a block scan and
 * reserves its place with one atomic: the order within a segment is the atomics', which the
 * sort then removes. */
template <class E>
__global__ void __launch_bounds__(NT) qr_sort_keys(qr_args a)
{
    __shared__ uint32_t scan[NT / 32];
    __shared__ int base;
    const int64_t r = blockIdx.y;
    const RowPlan pl = sort_plan(a, r);
    if (!pl.work)
        return;
    const int64_t n = pl.use_pool ? pl.pool_n : a.vocab;
    const int64_t span = (n + gridDim.x - 1) / gridDim.x;
    const int64_t first = (int64_t)blockIdx.x * span, last = min(n, first + span);
    const uint32_t *pk = pool_keys(a, r, pl.in_win);
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    for (int64_t t0 = first; t0 < last; t0 += NT) {
        const int64_t i = t0 + threadIdx.x;
        const uint32_t key = i >= last ? 0u : pl.use_pool ? pk[i] : tkp_order_key(qr_elem<E>(x, i));
        const uint32_t take = key > pl.lo_q; /* never an invalid key (0): lo_q >= 0 */
        uint32_t at, total;
        at = tkp_block_excl_scan_total<NT / 32>(take, scan, total);
        if (threadIdx.x == 0 && total)
            base = atomicAdd(&a.sort_end[r], (int)total);
        __syncthreads();
        if (take)
            a.sort_in[base + at] = key;
        __syncthreads();
    }
}

/* ---- qr_search: the CPU's decisions and searches, per row (qrita_gpu_boundary.cuh) ---- */

/* A warp per row (8 rows per block) past B = #SMs, a 512-thread block per row below. FUSED
 * (a.fuse, its own instantiation so that the other searches carry none of its code: at small
 * batch a search is bound by fetching its code, README "GPU"): a grid of cpr x B blocks
 * (above), and block 0 first runs the same search code on the warm-up row while the streaming
 * kernels before it still run. */
template <int G, int CAP, bool FUSED, class E>
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
        float min_p = 0.0f;
        if (pass == 0) {
            warm_up_row(a);
        } else {
            tkp_wait_prerequisite();
            if (r >= a.batch)
                return;
            if (FUSED && !fused_second_level<E>(a, r))
                return;
            row = r;
            k = a.io.k[r];
            min_p = qr_min_p(a, r);
        }
        search_row<G, CAP, E>(a, row, k, a.io.p[pass ? r : 0], min_p, g,
                           G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x,
                           qr_pool_smem + (size_t)g * 2 * CAP, sm);
        if (G > 32)
            __syncthreads();
    }
    if (FUSED)
        fused_mask<E>(a, r);
}

/* After the warp-per-row search: the rows it listed, a 512-thread block each (a grid of one
 * block per SM takes them in turn). Which block takes which row does not matter: a row's
 * result depends on its data only. */
template <class E>
__global__ void __launch_bounds__(BLOCK_G, 1) qr_search_heavy(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    extern __shared__ __align__(16) uint32_t qr_pool_smem[];
    __shared__ SearchSmem sm;
    const unsigned n = a.heavy[0];
    for (unsigned i = blockIdx.x; i < n; i += gridDim.x) {
        const int64_t r = a.heavy[1 + i];
        search_row<BLOCK_G, CAP_BLOCK, E>(a, r, a.io.k[r], a.io.p[r], qr_min_p(a, r), 0,
                                          (int)threadIdx.x, qr_pool_smem, sm);
        __syncthreads(); /* the next row reuses the shared memory */
    }
}

/* ---- qr_mask: the row's mask ----
 * A row searched on its buffer: scan_chunk zeroed the mask, so only the kept tokens (all in the
 * buffer) are written, the buffer shared out over the row's CTAs. Any other row: every byte of
 * the CTA's chunk, in one pass over the logits. */
template <class E>
__global__ void __launch_bounds__(NT) qr_mask(qr_args a)
{
    tkp_allow_dependents();
    tkp_wait_prerequisite();
    const int64_t r = blockIdx.y, V = a.vocab;
    const void *x = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    uint8_t *kept = a.io.kept + r * V;
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
    stream_chunk<E>(x, V, a.vpc, f);
}

/* ---- host ---- */

/* An element type outside enum tkp_dtype (the harness refuses it first: tkp_capable). */
static int bad_dtype(enum tkp_dtype dtype, struct tkp_error *err)
{
    tkp_error_set(err, "qrita: GPU logits of element type %d (not f32, bf16 or fp16)", (int)dtype);
    return TKP_EINVAL;
}

/* The search kernels of element type E allowed their dynamic shared memory; *mass_per_sm: how
 * many CTAs of its qr_mass an SM holds at once (the fused batches' meeting needs them all). */
template <class E> static int prepare_kernels(int *mass_per_sm, struct tkp_error *err)
{
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<32, CAP_WARP, false, E>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      8 * 2 * CAP_WARP * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<BLOCK_G, CAP_BLOCK, false, E>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search<BLOCK_G, CAP_BLOCK, true, E>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    TKP_CUDA_TRY(cudaFuncSetAttribute(qr_search_heavy<E>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * CAP_BLOCK * 4), err);
    TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(mass_per_sm, qr_mass<E>, NT, 0),
                 err);
    return TKP_OK;
}

/* The GPU's refusals (qrita_gpu.h): the kernels index a row with 32 bits, and search=sort
 * hands the whole batch to CUB's segmented sort, which counts keys in an int. */
extern "C" int qrita_gpu_supports(const struct tkp_problem *pb, const void *opts,
                                  const char **why)
{
    const struct qrita_opts *o = (const struct qrita_opts *)opts;
    if (pb->vocab >= ((int64_t)1 << 31)) {
        *why = "qrita: the GPU kernels index a row with 32 bits";
        return 0;
    }
    if (o->search == QRITA_SORT && pb->batch * pb->vocab > INT32_MAX) {
        *why = "qrita: search=sort on the GPU sorts at most 2^31 - 1 keys per run (batch x "
               "vocab); use a smaller batch";
        return 0;
    }
    return 1;
}

/* The launch shape: CTAs per row of the streaming kernels, the search's group, the kernels of
 * the problem's element type prepared (qrita_gpu.h, struct qrita_gpu_plan). */
static int plan_launch(struct qrita_gpu_plan *pl, struct tkp_error *err)
{
    const int64_t batch = pl->pb.batch;
    int dev = 0, sms = 132;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    pl->sm_count = sms;
    const int64_t nvec = pl->pb.vocab / 4 + 1;
    if (pl->opts.autotune == QRITA_ON) {
        /* the float32 scan's residency whatever the element type: one launch shape per
         * problem shape (README, "GPU") */
        int per_sm = 0;
        TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, qr_scan<false, TkpF32>,
                                                                   NT, 0),
                     err);
        const int64_t resident = (int64_t)(per_sm > 0 ? per_sm : 1) * sms;
        /* at B <= 4 (the fused search, one 512-thread CTA per chunk) a chunk holds at least a
         * whole step of 4 vectors per thread */
        const int64_t chunk = batch <= WARM_MAX_BATCH ? 4 * NT : NT;
        const int64_t cpr = autotune_cta_per_row(batch, nvec, resident, chunk);
        pl->vec_per_cta = (nvec + cpr - 1) / cpr;
        /* a warp per row past B = #SMs; a 512-thread block per row below it, and for rows that
         * search the whole row (truncation off or forced fallback) */
        pl->group = (batch > sms && pl->opts.truncation == QRITA_TRUNC_AUTO) ? 32 : BLOCK_G;
    } else {
        pl->vec_per_cta = 1024; /* 4096-element tiles */
        pl->group = BLOCK_G;
    }
    pl->cta_per_row = (int)((nvec + pl->vec_per_cta - 1) / pl->vec_per_cta);
    int mass_per_sm = 0, rc = TKP_OK;
    auto prepare = [&](auto e) { rc = prepare_kernels<decltype(e)>(&mass_per_sm, err); };
    if (!tkp_with_dtype(pl->pb.dtype, prepare))
        return bad_dtype(pl->pb.dtype, err);
    if (rc != TKP_OK)
        return rc;
    pl->mass_resident = (int64_t)mass_per_sm * sms;
    /* tests: the fused batches with qr_scan launched apart, as on a device too small to hold
     * qr_mass's grid at once */
    const char *apart = getenv("TKP_QRITA_SCAN_APART");
    pl->scan_apart = apart && *apart && strcmp(apart, "0") != 0;
    return TKP_OK;
}

/* The workspace: the per-row arrays first (their size decides the buffers' room), the buffers
 * last; one row more: the warm-up row of qr_search (WARM_N keys). */
static int plan_workspace(struct qrita_gpu_plan *pl, struct tkp_error *err)
{
    const int64_t batch = pl->pb.batch, vocab = pl->pb.vocab;
    const int32_t k_max = pl->pb.k_max;
    const int search = pl->opts.search;
    size_t cur = 0;
    pl->ws_rows = carve(&cur, sizeof(qr_row) * (size_t)(batch + 1));
    pl->ws_rstat = carve(&cur, sizeof(qrita_gpu_rstat) * (size_t)(batch + 1));
    /* the window and the mass histogram serve only rows searched as top-p alone */
    const size_t mass_rows = pl->need_mass ? (size_t)batch : 0;
    pl->ws_wkeys = carve(&cur, sizeof(uint32_t) * WIN_ROW * mass_rows);
    pl->ws_widx = carve(&cur, sizeof(uint32_t) * WIN_ROW * mass_rows);
    pl->ws_hist = carve(&cur, sizeof(u64) * TKP_MASS_BINS * mass_rows);
    pl->ws_part = carve(&cur, sizeof(qr_part) * (size_t)(pl->cta_per_row * batch));
    pl->ws_heavy = carve(&cur, sizeof(uint32_t) * (size_t)(batch + 1));
    /* search=sort sorts the CPU's candidates: a buffer that holds every hit (its workspace is
     * a sort's, two keys per token, whatever the buffer takes). So does a batch with
     * top-p-alone rows: the 8 MiB buffers sent the flat rows of model-like logits (a top-p set
     * of ~14000 tokens) to a search of the whole row, and a batch waits for its slowest row
     * (README, "Workspace": Figure 2 at B = 64, 164 -> 432 us) */
    const bool whole = search == QRITA_SORT || (pl->pb.ops & TKP_TOPP) != 0;
    pl->gpu_capacity = pool_capacity(batch, vocab, k_max, cur + 2 * 256, whole);
    /* tight possible where the buffer is smaller than the CPU's and some row has a top-k
     * threshold; each such row decides from its sample (qr_prep) */
    const double cpu = qrita_delta_topk(k_max, vocab, host_quantile);
    pl->tight = search != QRITA_SORT && pl->gpu_capacity < pl->cpu_capacity && k_max > 0 &&
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

/* qrita_gpu.h: the plan of one problem with options of struct qrita_opts. */
extern "C" int qrita_gpu_plan(const struct tkp_problem *pb, const void *opts, void *plan,
                              size_t *workspace_bytes, struct tkp_error *err)
{
    struct qrita_gpu_plan *pl = (struct qrita_gpu_plan *)plan;
    memset(pl, 0, sizeof *pl);
    pl->pb = *pb;
    pl->opts = *(const struct qrita_opts *)opts;
    /* search=sort walks sorted candidates (qrita_gpu_sort.cuh): no pivots */
    pl->pivots = pl->opts.search == QRITA_TERNARY ? 2 : pl->opts.search == QRITA_BINARY ? 1 : 3;
    /* a row with top-k on but k >= its valid count is searched as top-p alone: any top-p */
    pl->need_mass = (pb->ops & (TKP_TOPP | TKP_TOPK_TOPP)) != 0;
    pl->cpu_capacity = qrita_outlier_capacity(pb->vocab);
    int rc = plan_launch(pl, err);
    if (rc == TKP_OK)
        rc = plan_workspace(pl, err);
    *workspace_bytes = pl->ws_bytes;
    return rc;
}

/* The kernels of one run, instantiated for element type E, on stream st (qr_prep follows
 * whatever came before on it; the rest are chained by programmatic dependent launch, each
 * waiting for its predecessor before reading its results). */
template <class E>
static int launch_chain(const struct qrita_gpu_plan *pl, const qr_args &a, cudaStream_t st,
                        char *ws, struct tkp_error *err)
{
    const bool sort = pl->opts.search == QRITA_SORT;
    const dim3 grid((unsigned)pl->cta_per_row, (unsigned)pl->pb.batch), nt(NT);
    qr_prep<E><<<(unsigned)pl->pb.batch, NT, 0, st>>>(a);
    TKP_LAUNCH_CHECK(err);
    if (!a.scan_in_mass)
        TKP_CUDA_TRY(pl->tight ? tkp_launch_dependent(qr_scan<true, E>, grid, nt, 0, st, a)
                               : tkp_launch_dependent(qr_scan<false, E>, grid, nt, 0, st, a),
                     err);
    if (pl->need_mass)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_mass<E>, grid, nt, 0, st, a), err);
    if (a.gather2 && !a.fuse)
        TKP_CUDA_TRY(tkp_launch_dependent(qr_gather2<E>, grid, nt, 0, st, a), err);
    if (sort) { /* the candidates sorted (plain launches: each waits for all before it) */
        qr_sort_keys<E><<<grid, nt, 0, st>>>(a);
        TKP_LAUNCH_CHECK(err);
        size_t scratch = pl->sort_tmp_bytes;
        TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                         ws + pl->ws_sort_tmp, scratch, a.sort_in, a.sort_out,
                         (int)(pl->pb.batch * pl->pb.vocab), (int)pl->pb.batch, a.sort_begin,
                         a.sort_end, 0, 32, st),
                     err);
    }
    if (pl->group == 32) {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<32, CAP_WARP, false, E>,
                                          dim3((unsigned)((pl->pb.batch + 7) / 8)), dim3(256),
                                          8 * 2 * CAP_WARP * 4, st, a), err);
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search_heavy<E>, dim3((unsigned)pl->sm_count),
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    } else if (a.fuse) {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<BLOCK_G, CAP_BLOCK, true, E>, grid,
                                          dim3(BLOCK_G), 2 * CAP_BLOCK * 4, st, a), err);
    } else {
        TKP_CUDA_TRY(tkp_launch_dependent(qr_search<BLOCK_G, CAP_BLOCK, false, E>,
                                          dim3((unsigned)pl->pb.batch), dim3(BLOCK_G),
                                          2 * CAP_BLOCK * 4, st, a), err);
    }
    if (!a.fuse) /* fused: the search writes the masks */
        TKP_CUDA_TRY(tkp_launch_dependent(qr_mask<E>, grid, nt, 0, st, a), err);
    return TKP_OK;
}

/* The candidates past which a warp-per-row search hands a row to qr_search_heavy: the option
 * heavy_n=0|1024|4096 when given, else TKP_QRITA_HEAVY_N in [0, HEAVY_N] (the tests of the
 * hand-off on every cell), else auto: 0 (every row a block's) up to qrita_block_rows_per_sm
 * rows a SM (qrita.c), HEAVY_N past it; -1 with err set for another value of the variable. */
static int qr_heavy_n_of(const struct qrita_gpu_plan *pl, struct tkp_error *err)
{
    const int chosen = qrita_heavy_n_chosen(&pl->opts);
    if (chosen >= 0)
        return chosen;
    const int64_t block_rows = qrita_block_rows_per_sm(&pl->pb) * pl->sm_count;
    long n = pl->pb.batch <= block_rows ? 0 : HEAVY_N;
    const char *v;
    if (tkp_env_long("TKP_QRITA_HEAVY_N", 0, HEAVY_N, &n, &v) < 0) {
        tkp_error_set(err, "qrita (gpu): TKP_QRITA_HEAVY_N=%s: expected an integer in [0, %d]", v,
                      HEAVY_N);
        return -1;
    }
    return (int)n;
}

extern "C" int qrita_gpu_run(const void *plan, const struct tkp_io *io, void *workspace,
                             void *stream, struct tkp_error *err)
{
    const struct qrita_gpu_plan *pl = (const struct qrita_gpu_plan *)plan;
    cudaStream_t st = (cudaStream_t)stream;
    char *ws = (char *)workspace;
    qr_args a;
    a.io = *io;
    a.rows = (qr_row *)(ws + pl->ws_rows);
    a.rstat = (qrita_gpu_rstat *)(ws + pl->ws_rstat);
    a.keys = (uint32_t *)(ws + pl->ws_keys);
    a.idx = (uint32_t *)(ws + pl->ws_idx);
    a.wkeys = (uint32_t *)(ws + pl->ws_wkeys);
    a.widx = (uint32_t *)(ws + pl->ws_widx);
    a.hist = (u64 *)(ws + pl->ws_hist);
    a.part = (qr_part *)(ws + pl->ws_part);
    a.heavy = (uint32_t *)(ws + pl->ws_heavy);
    const bool sort = pl->opts.search == QRITA_SORT;
    a.sort_in = sort ? (uint32_t *)(ws + pl->ws_sort_in) : nullptr;
    a.sort_out = sort ? (uint32_t *)(ws + pl->ws_sort_out) : nullptr;
    a.sort_begin = sort ? (int *)(ws + pl->ws_sort_begin) : nullptr;
    a.sort_end = sort ? (int *)(ws + pl->ws_sort_end) : nullptr;
    a.mass = pl->need_mass;
    a.tight = pl->tight;
    a.gather2 = pl->need_mass && pl->opts.truncation == QRITA_TRUNC_AUTO;
    /* small top-p-alone batches searched on a buffer (truncation auto), a block per row; not
     * with min-p, which may switch top-k on (qrita_gpu_minp.cuh) */
    a.fuse = pl->group == BLOCK_G && pl->opts.truncation == QRITA_TRUNC_AUTO &&
             pl->pb.ops == TKP_TOPP && pl->pb.batch <= WARM_MAX_BATCH && !sort && !io->min_p;
    /* qr_mass's CTAs of a row wait for each other: only when all of them (and qr_prep's, which
     * may still run) fit on the device at once. Assumes nothing else holds the SMs for good
     * (another such run in flight, a persistent kernel, an MPS share: README "fourth round") */
    a.scan_in_mass = a.fuse && pl->cta_per_row * pl->pb.batch + pl->pb.batch <= pl->mass_resident &&
                     !pl->scan_apart;
    a.minp_force = io->min_p && tkp_minp_force_count();
    if ((a.heavy_n = qr_heavy_n_of(pl, err)) < 0)
        return TKP_EINVAL;
    a.batch = pl->pb.batch;
    a.vocab = pl->pb.vocab;
    a.stride = pl->pb.stride;
    a.cap_gpu = pl->gpu_capacity;
    a.cap_cpu = pl->cpu_capacity;
    a.pitch = (pl->gpu_capacity + 3) & ~(int64_t)3;
    a.vpc = pl->vec_per_cta;
    a.cpr = pl->cta_per_row;
    a.trunc = pl->opts.truncation;
    a.search = pl->opts.search;
    a.dedup = pl->opts.dedup;
    a.sample_block = pl->opts.sample_block;
    a.max_iter = pl->opts.max_iter;
    a.pivots = pl->pivots;
    a.margin = pl->opts.sigma_margin;
    if (pl->pb.batch == 0)
        return TKP_OK;
    int rc = TKP_OK;
    auto launch = [&](auto e) { rc = launch_chain<decltype(e)>(pl, a, st, ws, err); };
    return tkp_with_dtype(pl->pb.dtype, launch) ? rc : bad_dtype(pl->pb.dtype, err);
}

/* qrita_gpu_workspace.cuh — the host side of qrita's GPU workspace (qrita_gpu_plan in
 * qrita_gpu.cu; README.md, "Buffer bound and workspace"): the aligned carving of the workspace,
 * the buffer entries per row, search=sort's segments and CUB scratch, and the read-back of the
 * per-row statistics (qrita_gpu_stats). */
#ifndef QRITA_GPU_WORKSPACE_CUH
#define QRITA_GPU_WORKSPACE_CUH

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_segmented_radix_sort.cuh>

#include "../common/cuda_util.h"
#include "qrita.h"
#include "qrita_gpu.h"
#include "qrita_gpu_types.cuh"

#define WS_TARGET ((size_t)8 << 20) /* workspace the buffers fill up to (README, "Workspace") */
#define POOL_MIN 512   /* ... but at least this many buffer entries per row */
#define POOL_PER_K 8   /* ... and this many per entry of the largest top-k set */

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

/* autotune=on: the CTAs per row of nvec vectors, the fewest that waste the least of the
 * `resident` CTAs of qr_scan's waves (a larger count must gain 5%), in chunks down to `chunk`
 * vectors (one per thread, or a step of 4 per thread at B <= 4) and at most 64 steps' worth
 * of CTAs (64, or 256 of one vector per thread). Small chunks shorten each thread's chain of
 * instructions in qr_mass's weights. Measured: at B <= 4 (the fused search, one 512-thread CTA
 * per chunk) chunks below a whole step of 4 float4 per thread lose (top-p alone, B = 1:
 * 25.3 -> 32.2 us); past it they gain. */
static int64_t autotune_cta_per_row(int64_t batch, int64_t nvec, int64_t resident, int64_t chunk)
{
    const int64_t most = (nvec + chunk - 1) / chunk;
    double best = 0.0;
    int64_t cpr = 1;
    for (int64_t c = 1; c <= most && c <= 64 * 4 * NT / chunk; c++) {
        const double waves = (double)((batch * c + resident - 1) / resident) / (double)c;
        if (c == 1 || waves < best * 0.95) {
            best = waves;
            cpr = c;
        }
    }
    return cpr;
}

/* search=sort's workspace: each row's segment bounds, its keys twice (in, sorted) and the
 * segmented sort's scratch, whose size CUB reports. CUB counts keys in an int. */
static int sort_workspace(struct qrita_gpu_plan *pl, size_t *cur, struct tkp_error *err)
{
    const int64_t items = pl->pb.batch * pl->pb.vocab;
    if (items > INT32_MAX) {
        tkp_error_set(err, "qrita: search=sort on the GPU sorts at most %d keys per run "
                      "(batch x vocab = %lld); use a smaller batch", INT32_MAX, (long long)items);
        return TKP_EINVAL;
    }
    size_t scratch = 0;
    TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                     nullptr, scratch, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                     (int)items, (int)pl->pb.batch, (const int *)nullptr, (const int *)nullptr),
                 err);
    pl->ws_sort_begin = carve(cur, sizeof(int) * (size_t)pl->pb.batch);
    pl->ws_sort_end = carve(cur, sizeof(int) * (size_t)pl->pb.batch);
    pl->ws_sort_in = carve(cur, sizeof(uint32_t) * (size_t)items);
    pl->ws_sort_out = carve(cur, sizeof(uint32_t) * (size_t)items);
    pl->ws_sort_tmp = carve(cur, scratch);
    pl->sort_tmp_bytes = scratch;
    return TKP_OK;
}

/* qrita_gpu.h: the per-row statistics of the last run, read back and summed in row order. */
extern "C" int qrita_gpu_stats(const void *plan, const void *workspace, void *stream,
                               struct tkp_stats *out)
{
    const struct qrita_gpu_plan *pl = (const struct qrita_gpu_plan *)plan;
    memset(out, 0, sizeof *out);
    if (!workspace || pl->pb.batch == 0)
        return TKP_OK;
    size_t n = (size_t)pl->pb.batch;
    qrita_gpu_rstat *h = (qrita_gpu_rstat *)malloc(sizeof *h * n);
    if (!h)
        return TKP_ENOMEM;
    /* On the run's stream, then wait for it: the stream may not synchronise with the legacy
     * default stream, so a plain cudaMemcpy could read the rows before the run wrote them. */
    if (cudaMemcpyAsync(h, (const char *)workspace + pl->ws_rstat, sizeof *h * n,
                        cudaMemcpyDeviceToHost, (cudaStream_t)stream) != cudaSuccess ||
        cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess) {
        free(h);
        return TKP_EDEVICE;
    }
    out->rows = pl->pb.batch;
    for (size_t r = 0; r < n; r++) {
        if (h[r].counted) {
            out->total[QRITA_STAT_HIT_RATE] += h[r].hit;
            out->total[QRITA_STAT_FALLBACKS] += !h[r].hit;
            out->total[QRITA_STAT_OUTLIERS] += (double)h[r].outliers;
            out->total[QRITA_STAT_OUTLIER_MASS] += h[r].outlier_mass;
        }
        out->total[QRITA_STAT_ITERATIONS] += (double)h[r].iterations;
        out->total[QRITA_STAT_SORTED] += (double)h[r].sorted;
    }
    free(h);
    out->reported = qrita_reported(&pl->pb, &pl->opts);
    return TKP_OK;
}

#endif

/* qrita_gpu.h — the CUDA half of the qrita module (qrita_gpu.cu), called from qrita.c when the
 * build has CUDA (TKP_HAVE_CUDA). See README.md, section "GPU". */
#ifndef QRITA_GPU_H
#define QRITA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-row statistics the search kernel writes (summed on the host in row order). */
struct qrita_gpu_rstat {
    int32_t counted, hit;   /* counted: the row tried truncation (CPU's `truncate` branch) */
    int64_t outliers;       /* N_t */
    double outlier_mass;    /* S_t of a top-p-alone row, else 0 */
    int64_t iterations;
    int64_t sorted;         /* search=sort: keys sorted */
};

/* The launch shape chosen at init for one problem. */
struct qrita_gpu_plan {
    int64_t batch, vocab, stride;
    enum tkp_dtype dtype;               /* the logits' element type: the kernels' instantiation */
    int64_t cpu_capacity, gpu_capacity; /* outlier buffer: the CPU's bound, the GPU's */
    int tight;                          /* gpu_capacity < cpu_capacity: top-k rows gather above
                                         * a tighter key than the CPU's (README, "Workspace") */
    int64_t vec_per_cta;                /* four-element vectors per CTA of the streaming kernels */
    int cta_per_row;                    /* CTAs per row of the streaming kernels */
    int group;                          /* search: threads per row (32 or 512) */
    int need_mass;                      /* some row may be searched as top-p alone */
    unsigned ops;                       /* the filters of the batch (TKP_TOPK ...) */
    int sm_count;
    int64_t mass_resident;              /* CTAs of qr_mass that the device holds at once */
    int scan_apart;                     /* TKP_QRITA_SCAN_APART set: qr_scan always launched */
    /* options */
    int truncation, search, dedup, autotune, sample_block, max_iter, pivots;
    double sigma_margin;
    size_t ws_rows, ws_rstat, ws_keys, ws_idx, ws_wkeys, ws_widx, ws_hist, ws_part, ws_heavy;
    size_t ws_sort_begin, ws_sort_end, ws_sort_in, ws_sort_out, ws_sort_tmp; /* search=sort */
    size_t sort_tmp_bytes; /* ... the segmented radix sort's scratch */
    size_t ws_bytes; /* workspace offsets and size */
};

/* Host side, once per problem: options, launch shape, workspace size (may call the CUDA runtime
 * for the device's SM count and to raise the search kernels' shared-memory limit). */
int qrita_gpu_plan(struct qrita_gpu_plan *plan, int64_t batch, int64_t vocab, int64_t stride,
                   enum tkp_dtype dtype, unsigned ops, int32_t k_max, int truncation, int search,
                   int dedup, int autotune, double sigma_margin, int sample_block, int max_iter,
                   int64_t cpu_capacity, struct tkp_error *err);

/* Enqueue the whole of qrita on `stream`: no allocation, no synchronisation. */
int qrita_gpu_run(const struct qrita_gpu_plan *plan, const struct tkp_io *io, void *workspace,
                  void *stream, struct tkp_error *err);

/* Download the per-row statistics of the last run (synchronises) and sum them in row order. */
int qrita_gpu_stats(const struct qrita_gpu_plan *plan, const void *workspace, void *stream,
                    struct tkp_stats *out);

#ifdef __cplusplus
}
#endif
#endif

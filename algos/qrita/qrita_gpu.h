/* qrita_gpu.h — the CUDA half of the qrita module (qrita_gpu.cu), called from qrita.c when the
 * build has CUDA (TKP_HAVE_CUDA). See README.md, section "GPU". */
#ifndef QRITA_GPU_H
#define QRITA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/gpu_impl.h"
#include "../tkp.h"
#include "qrita.h"

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
    struct tkp_problem pb;              /* the problem (pb.dtype: the kernels' instantiation) */
    struct qrita_opts opts;             /* its options */
    int64_t cpu_capacity, gpu_capacity; /* outlier buffer: the CPU's bound, the GPU's */
    int tight;                          /* gpu_capacity < cpu_capacity: top-k rows gather above
                                         * a tighter key than the CPU's (README, "Workspace") */
    int64_t vec_per_cta;                /* four-element vectors per CTA of the streaming kernels */
    int cta_per_row;                    /* CTAs per row of the streaming kernels */
    int group;                          /* search: threads per row (32 or 512) */
    int need_mass;                      /* some row may be searched as top-p alone */
    int sm_count;
    int64_t mass_resident;              /* CTAs of qr_mass that the device holds at once */
    int scan_apart;                     /* TKP_QRITA_SCAN_APART set: qr_scan always launched */
    int pivots;                         /* of the search: 1, 2 or 3 (from opts.search) */
    size_t ws_rows, ws_rstat, ws_keys, ws_idx, ws_wkeys, ws_widx, ws_hist, ws_part, ws_heavy;
    size_t ws_sort_begin, ws_sort_end, ws_sort_in, ws_sort_out, ws_sort_tmp; /* search=sort */
    size_t sort_tmp_bytes; /* ... the segmented radix sort's scratch */
    size_t ws_bytes; /* workspace offsets and size */
};

/* The launcher (algos/common/gpu_impl.h): the plan, once per problem, with options of struct
 * qrita_opts (may call the CUDA runtime for the device's SM count and to raise the search
 * kernels' shared-memory limit); a run, enqueued on a stream; the per-row statistics of the
 * last run, downloaded (synchronises) and summed in row order. */
tkp_gpu_plan_fn qrita_gpu_plan;
tkp_gpu_run_fn qrita_gpu_run;
tkp_gpu_stats_fn qrita_gpu_stats;

/* The GPU's refusals beyond qrita.c's (struct tkp_impl, supports). */
int qrita_gpu_supports(const struct tkp_problem *pb, const void *opts, const char **why);

#ifdef __cplusplus
}
#endif
#endif

/* cake_gpu.h — the CUDA half of the cake module (cake_gpu.cu), called from cake.c when the
 * build has CUDA (TKP_HAVE_CUDA). See README.md, section "GPU". */
#ifndef TKP_CAKE_GPU_H
#define TKP_CAKE_GPU_H

#include <stdint.h>

#include "../common/gpu_impl.h"
#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where top-p, the mask's ones and the draws run (option `topp_launch`). */
enum cake_topp_launch { CAKE_TOPP_FUSED, CAKE_TOPP_CHAINED };

/* The launch shape chosen at init for one problem. */
struct cake_gpu_plan {
    struct tkp_problem pb; /* the problem (pb.dtype: which cake_kernel instantiation runs) */
    int cluster;           /* CTAs per row: 1, 2, 4, 8 or 16 (16: non-portable size) */
    int threads;           /* per CTA: 512, or 256 (two CTAs a SM): option threads, or auto */
    int chained;           /* 1: a second kernel (programmatic dependent launch) sorts the
                            * gathered entries and does top-p, mask and draws; 0: rank 0 of
                            * each cluster does, in the same launch */
    size_t workspace_bytes; /* chained: the gathered entries and their counts per row; then
                             * the rows' k with min-p folded in (gpu_minp.cuh) */
    uint32_t slice;        /* tokens per CTA (a multiple of 16) */
    size_t smem_bytes;     /* dynamic shared memory per CTA */
    int sm_count;          /* of the current device */
    int max_clusters[5];   /* co-resident clusters of 1, 2, 4, 8, 16 CTAs (0: not launchable) */
};

/* The launcher (algos/common/gpu_impl.h). The plan, once per problem, with options of struct
 * cake_opts (cake_impl.h; may call the CUDA runtime, never inside run): raise the
 * shared-memory limit of the kernel reading logits of the problem's dtype, measure how many
 * clusters of each size fit on the device and pick the cluster size for (batch, vocab); only
 * the chained launch (option topp_launch) needs a device workspace. A run enqueues the whole of
 * cake (slab, top-p, kept mask, samples) for every row: one launch (two when chained); kept
 * and samples may be NULL. No statistic is reported (the per-row pass counts stay on the
 * device). */
tkp_gpu_plan_fn cake_gpu_plan;
tkp_gpu_run_fn cake_gpu_run;

#ifdef __cplusplus
}
#endif
#endif

/* cake_gpu.h — the CUDA half of the cake module (cake_gpu.cu), called from cake.c when the
 * build has CUDA (TKP_HAVE_CUDA). See README.md, section "GPU". */
#ifndef TKP_CAKE_GPU_H
#define TKP_CAKE_GPU_H

#include <stdint.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where top-p, the mask's ones and the draws run (option `topp_launch`). */
enum cake_topp_launch { CAKE_TOPP_FUSED, CAKE_TOPP_CHAINED };

/* The launch shape chosen at init for one problem (batch, vocabulary). */
struct cake_gpu_plan {
    int cluster;           /* CTAs per row: 1, 2, 4, 8 or 16 (16: non-portable size) */
    int chained;           /* 1: a second kernel (programmatic dependent launch) sorts the
                            * gathered entries and does top-p, mask and draws; 0: rank 0 of
                            * each cluster does, in the same launch */
    size_t workspace_bytes; /* chained: the gathered entries and their counts per row */
    uint32_t slice;        /* tokens per CTA (a multiple of 16) */
    size_t smem_bytes;     /* dynamic shared memory per CTA */
    int sm_count;          /* of the current device */
    int max_clusters[5];   /* co-resident clusters of 1, 2, 4, 8, 16 CTAs (0: not launchable) */
    enum tkp_dtype dtype;  /* the logits' element type: which cake_kernel instantiation runs */
};

/* Host side, once per problem (may call the CUDA runtime; never inside run): raise the
 * shared-memory limit of the kernel reading logits of `dtype`, measure how many clusters of
 * each size fit on the device and pick the cluster size for (batch, vocab); topp_launch is an
 * enum cake_topp_launch. Only the chained launch needs a device workspace
 * (plan->workspace_bytes). */
int cake_gpu_plan(int64_t batch, int64_t vocab, enum tkp_dtype dtype, int topp_launch,
                  struct cake_gpu_plan *plan, struct tkp_error *err);

/* Enqueue the whole of cake (slab, top-p, kept mask, samples) for every row on `stream`
 * (a cudaStream_t): one launch (two when chained), no allocation, no synchronisation. io
 * holds device pointers; kept and samples may be NULL; workspace has
 * plan->workspace_bytes. */
int cake_gpu_run(const struct cake_gpu_plan *plan, int64_t batch, int64_t vocab,
                 int64_t stride, int32_t draws, const struct tkp_io *io, void *workspace,
                 void *stream, struct tkp_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* rejection_gpu.h — the CUDA launcher of the dual-pivot rejection sampler (rejection_gpu.cu),
 * called from rejection.c when the problem's backend is TKP_GPU. */
#ifndef REJECTION_GPU_H
#define REJECTION_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The launch shape of one problem, fixed at init. */
struct rej_gpu_plan {
    int threads;          /* threads per CTA: 1024 or 512 */
    int cluster;          /* CTAs per row and group: 1, or a thread-block cluster of 2 .. 16 */
    int groups;           /* CTAs (clusters) per row; group g draws d = g, g + groups, ... */
    int slice;            /* cluster: tokens of the row per CTA */
    size_t smem;          /* cluster: dynamic shared memory per CTA */
    int64_t slots;        /* per-CTA statistics slots: batch * groups * cluster */
    size_t workspace;     /* device bytes: the statistics slots */
};

/* Plan a problem (queries the device's SM count; falls back to 132 without a device).
 * forced_cluster: 0, or a cluster size to take where it fits (TKP_REJ_CLUSTER, tests). */
void rej_gpu_plan_for(const struct tkp_problem *pb, int forced_cluster, struct rej_gpu_plan *plan);

/* Enqueue the sampler on `stream` (no allocation, no synchronisation). `io` holds device
 * pointers; `workspace` is the device workspace of plan->workspace bytes. */
int rej_gpu_run(const struct tkp_problem *pb, const struct rej_gpu_plan *plan, int max_rounds,
                const struct tkp_io *io, void *workspace, void *stream, struct tkp_error *err);

/* Wait for `stream` and sum the per-CTA statistics of the latest run (rounds, fallbacks,
 * iterations) into *out. Returns 0, or -1 when the copy failed (out left unchanged). */
int rej_gpu_stats(const struct rej_gpu_plan *plan, const void *workspace, void *stream,
                  struct tkp_stats *out);

#ifdef __cplusplus
}
#endif
#endif

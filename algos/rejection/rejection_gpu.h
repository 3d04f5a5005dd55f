/* rejection_gpu.h — the CUDA launcher of the dual-pivot rejection sampler (rejection_gpu.cu),
 * called from rejection.c when the problem's backend is TKP_GPU. */
#ifndef REJECTION_GPU_H
#define REJECTION_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/gpu_impl.h"
#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The launch shape of one problem, fixed at init. */
struct rej_gpu_plan {
    struct tkp_problem pb;
    int max_rounds;       /* option: rejection rounds before the exact fallback */
    int threads;          /* threads per CTA: 1024, 512 or 256 */
    int cluster;          /* CTAs per row and group: 1, or a thread-block cluster of 2 .. 16 */
    int groups;           /* CTAs (clusters) per row; group g draws d = g, g + groups, ... */
    int slice;            /* cluster: tokens of the row per CTA */
    size_t smem;          /* dynamic shared memory per CTA: the cluster's slice, or one
                           * CTA's big list */
    int list_cap;         /* one CTA a row: the room of pass 1's list (rej_list_cap) */
    int64_t slots;        /* per-CTA statistics slots: batch * groups * cluster */
    size_t workspace;     /* device bytes: the statistics slots, then the rows' k with min-p
                           * folded in (gpu_minp.cuh) */
};

/* Plan a problem (queries the device's SM count; falls back to 132 without a device).
 * forced_cluster: 0, or a cluster size to take where it fits (TKP_REJ_CLUSTER, tests);
 * forced_threads: 0, or the threads of a CTA where one takes a row (option threads,
 * TKP_REJ_THREADS). */
void rej_gpu_plan_for(const struct tkp_problem *pb, int forced_cluster, int forced_threads,
                      struct rej_gpu_plan *plan);

/* The launcher (algos/common/gpu_impl.h): the plan, with options of struct rej_opts (the
 * cluster size TKP_REJ_CLUSTER forces, for tests and experiments, is read here; the workspace:
 * the statistics slots); a run, enqueuing the sampler (nothing without samples); the per-CTA
 * statistics of the last run (rounds, fallbacks, iterations), waiting for its stream. */
tkp_gpu_plan_fn rej_gpu_plan;
tkp_gpu_run_fn rej_gpu_run;
tkp_gpu_stats_fn rej_gpu_stats;

#ifdef __cplusplus
}
#endif
#endif

/* gpu_impl.h — the host interface every module's CUDA launcher offers (algos/<m>/<m>_gpu.h), from
 * which one table (algos/common/tkp_gpu_impl.c) makes each module's GPU implementation (struct
 * tkp_impl, algos/tkp.h). A plan is built from (problem, options) once per problem and holds all
 * a run needs; a run enqueues on a stream (no allocation, no synchronisation); stats reads the
 * last run's statistics back (synchronises). C linkage, so the .cu files define them. */
#ifndef TKP_GPU_IMPL_H
#define TKP_GPU_IMPL_H

#include <stddef.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill *plan (the module's plan struct) for problem pb with options opts (the module's options
 * struct, or NULL: the defaults) and set *workspace_bytes: the device workspace each run needs.
 * May call the CUDA runtime (device attributes, kernel attributes); never enqueues. */
typedef int tkp_gpu_plan_fn(const struct tkp_problem *pb, const void *opts, void *plan,
                            size_t *workspace_bytes, struct tkp_error *err);

/* Enqueue one run of the plan's problem on `stream` (a cudaStream_t): io holds device pointers,
 * workspace has the bytes the plan asked for. */
typedef int tkp_gpu_run_fn(const void *plan, const struct tkp_io *io, void *workspace,
                           void *stream, struct tkp_error *err);

/* The statistics of the last run, whose workspace and stream are given (waits for the stream):
 * *out zeroed then filled, `reported` included; out->rows is set by the caller. */
typedef int tkp_gpu_stats_fn(const void *plan, const void *workspace, void *stream,
                             struct tkp_stats *out);

#ifdef __cplusplus
}
#endif
#endif

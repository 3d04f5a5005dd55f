/* rtopk_gpu.h — the CUDA backend of rtopk (rtopk_gpu.cu), called from rtopk.c. C linkage;
 * only compiled in when TKP_HAVE_CUDA is defined. */
#ifndef TKP_RTOPK_GPU_H
#define TKP_RTOPK_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launch shape: each row is split over `group` CTAs (one thread-block cluster), each CTA
 * owning `chunk` consecutive tokens (a multiple of 4); `cached`: the CTA keeps its chunk in
 * `smem` bytes of dynamic shared memory for all passes (else every pass re-reads it). */
struct rtopk_gpu_plan {
    int group, chunk, cached;
    size_t smem;
};

/* Choose the shape for pb on the current device; *workspace_bytes: the per-row iteration
 * counters. */
int rtopk_gpu_plan(const struct tkp_problem *pb, struct rtopk_gpu_plan *plan,
                   size_t *workspace_bytes, struct tkp_error *err);

/* Enqueue the batch on `stream`: no allocation, no synchronisation. */
int rtopk_gpu_run(const struct rtopk_gpu_plan *plan, const struct tkp_problem *pb,
                  const struct tkp_io *io, int max_iter, void *workspace, void *stream,
                  struct tkp_error *err);

/* The search iterations of the last run, summed over its rows (synchronises `stream`). */
int rtopk_gpu_iterations(const void *workspace, int64_t batch, void *stream, double *out,
                         struct tkp_error *err);

#ifdef __cplusplus
}
#endif
#endif

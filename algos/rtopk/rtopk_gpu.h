/* rtopk_gpu.h — the CUDA backend of rtopk (rtopk_gpu.cu), called from rtopk.c. C linkage;
 * only compiled in when TKP_HAVE_CUDA is defined. */
#ifndef TKP_RTOPK_GPU_H
#define TKP_RTOPK_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/gpu_impl.h"
#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launch shape: each row is split over `group` CTAs (one thread-block cluster), each CTA
 * owning `chunk` consecutive tokens (a multiple of 4); `cached`: the CTA keeps its chunk in
 * `smem` bytes of dynamic shared memory for all passes (else every pass re-reads it). */
struct rtopk_gpu_plan {
    struct tkp_problem pb;
    int max_iter; /* option: the search's iteration cap (0: none) */
    int group, chunk, cached;
    size_t smem;
};

/* The launcher (algos/common/gpu_impl.h): the plan, the shape for the problem on the current
 * device with options of struct rtopk_opts (the workspace: one iteration counter per row); a
 * run, enqueuing the batch; the search iterations of the last run, summed over its rows
 * (synchronises the stream). */
tkp_gpu_plan_fn rtopk_gpu_plan;
tkp_gpu_run_fn rtopk_gpu_run;
tkp_gpu_stats_fn rtopk_gpu_stats;

#ifdef __cplusplus
}
#endif
#endif

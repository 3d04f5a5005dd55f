/* naive_sort_gpu.h — the CUDA backend of naive_sort (naive_sort_gpu.cu), called from
 * naive_sort.c. C linkage; only compiled in when TKP_HAVE_CUDA is defined. */
#ifndef TKP_NAIVE_SORT_GPU_H
#define TKP_NAIVE_SORT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../common/gpu_impl.h"
#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of one problem on the GPU: rows are sorted in chunks of `chunk_rows` (so that a
 * chunk's key count fits CUB's int and the workspace stays bounded); `temp_bytes` is CUB's
 * temporary storage for one chunk; `workspace` the total device bytes run needs. */
struct naive_gpu_plan {
    struct tkp_problem pb;
    int64_t chunk_rows;
    size_t temp_bytes, workspace;
};

/* The launcher (algos/common/gpu_impl.h): the plan of a problem (naive_sort has no option; CUB's
 * temporary storage sized once), and a run enqueuing the whole batch. The sort reports no
 * statistic. */
tkp_gpu_plan_fn naive_gpu_plan;
tkp_gpu_run_fn naive_gpu_run;

#ifdef __cplusplus
}
#endif
#endif

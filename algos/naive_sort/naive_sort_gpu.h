/* naive_sort_gpu.h — the CUDA backend of naive_sort (naive_sort_gpu.cu), called from
 * naive_sort.c. C linkage; only compiled in when TKP_HAVE_CUDA is defined. */
#ifndef TKP_NAIVE_SORT_GPU_H
#define TKP_NAIVE_SORT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../tkp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of one problem on the GPU: rows are sorted in chunks of `chunk_rows` (so that a
 * chunk's key count fits CUB's int and the workspace stays bounded); `temp_bytes` is CUB's
 * temporary storage for one chunk; `workspace` the total device bytes run needs. */
struct naive_gpu_plan {
    int64_t chunk_rows;
    size_t temp_bytes, workspace;
};

int naive_gpu_plan(const struct tkp_problem *pb, struct naive_gpu_plan *plan,
                   struct tkp_error *err);

/* Enqueue the whole batch on `stream`: no allocation, no synchronisation. */
int naive_gpu_run(const struct naive_gpu_plan *plan, const struct tkp_problem *pb,
                  const struct tkp_io *io, void *workspace, void *stream, struct tkp_error *err);

#ifdef __cplusplus
}
#endif
#endif

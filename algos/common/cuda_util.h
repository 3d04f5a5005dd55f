/* cuda_util.h — for .cu files: turn a failed CUDA call or launch into a TKP_EDEVICE status
 * with a message naming the file, line and call (never an abort in the middle of a sweep),
 * and the host-side arithmetic of workspaces and row slices. Device primitives are in
 * gpu_warp.cuh, launch helpers in gpu_launch.cuh. */
#ifndef TKP_CUDA_UTIL_H
#define TKP_CUDA_UTIL_H

#include <cuda_runtime.h>

#include "../tkp.h"

#define TKP_CUDA_TRY(call, err)                                                            \
    do {                                                                                   \
        cudaError_t tkp_e_ = (call);                                                       \
        if (tkp_e_ != cudaSuccess) {                                                       \
            tkp_error_set((err), "%s:%d: %s: %s", __FILE__, __LINE__, #call,               \
                          cudaGetErrorString(tkp_e_));                                     \
            return TKP_EDEVICE;                                                            \
        }                                                                                  \
    } while (0)

/* After a kernel launch: a bad configuration shows up here. */
#define TKP_LAUNCH_CHECK(err) TKP_CUDA_TRY(cudaPeekAtLastError(), err)

/* Tokens per CTA when a row of `vocab` tokens is split over `c` CTAs, rounded up to a
 * multiple of `align` (a power of two, so that every slice starts as aligned as the row). */
static inline int64_t tkp_slice_of(int64_t vocab, int c, int64_t align)
{
    return ((vocab + c - 1) / c + align - 1) & ~(align - 1);
}

/* Carve aligned sub-buffers out of the harness-owned workspace, the same way in the
 * workspace-size computation (base == NULL) and in the run. */
static inline void *tkp_carve(char **cursor, size_t bytes)
{
    char *p = (char *)(((uintptr_t)*cursor + 255) & ~(uintptr_t)255);
    *cursor = p + bytes;
    return p;
}

#endif

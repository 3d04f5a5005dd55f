/* cuda_util.h — for .cu files: turn a failed CUDA call or launch into a TKP_EDEVICE status
 * with a message naming the file, line and call (never an abort in the middle of a sweep). */
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

/* Carve aligned sub-buffers out of the harness-owned workspace, the same way in the
 * workspace-size computation (base == NULL) and in the run. */
static inline void *tkp_carve(char **cursor, size_t bytes)
{
    char *p = (char *)(((uintptr_t)*cursor + 255) & ~(uintptr_t)255);
    *cursor = p + bytes;
    return p;
}

#endif

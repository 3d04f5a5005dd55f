/* cuda_util.h — for .cu files: turn a failed CUDA call or launch into a TKP_EDEVICE status
 * with a message naming the file, line and call (never an abort in the middle of a sweep),
 * the host-side arithmetic of workspaces and row slices, and the launchers' experiment
 * variables (tkp_env_long). Device primitives are in
 * gpu_warp.cuh, launch helpers in gpu_launch.cuh. */
#ifndef TKP_CUDA_UTIL_H
#define TKP_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stdlib.h>

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

/* An integer environment variable of a launcher's experiment (TKP_CAKE_THREADS, ...): 0 when
 * `name` is unset or empty (*out untouched), 1 when it is an integer in [lo, hi] (*out set),
 * -1 otherwise; *text is its value for the caller's message. */
static inline int tkp_env_long(const char *name, long lo, long hi, long *out, const char **text)
{
    const char *v = getenv(name);
    *text = v ? v : "";
    if (!v || !*v)
        return 0;
    char *end = NULL;
    const long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi)
        return -1;
    *out = n;
    return 1;
}

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

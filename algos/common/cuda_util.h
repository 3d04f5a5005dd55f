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

/* *s += w on a 64-bit shared-memory word by two native 32-bit atomics (a 64-bit shared
 * atomicAdd is a compare-and-swap loop on sm_90, which many adds to one word serialise): the
 * low word's wrap, seen in the value its add returned, is carried into the high word. Exact
 * and order independent, like the 64-bit add. */
__device__ __forceinline__ void tkp_shared_add_u64(unsigned long long *s, unsigned long long w)
{
    unsigned *word = reinterpret_cast<unsigned *>(s); /* little endian: low word first */
    const unsigned lo = (unsigned)w, old = atomicAdd(word, lo);
    const unsigned up = (unsigned)(w >> 32) + (old + lo < old);
    if (up)
        atomicAdd(word + 1, up);
}

/* The first of c consecutive slots of the shared counter *counter for this lane: a warp
 * inclusive scan of c and one atomic per warp. Called by all 32 lanes of the warp. */
__device__ __forceinline__ unsigned tkp_warp_reserve(unsigned c, unsigned *counter)
{
    const unsigned lane = threadIdx.x & 31;
    unsigned incl = c;
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
        const unsigned y = __shfl_up_sync(0xFFFFFFFFu, incl, d);
        if (lane >= d)
            incl += y;
    }
    unsigned base = 0;
    if (lane == 31)
        base = atomicAdd(counter, incl);
    return __shfl_sync(0xFFFFFFFFu, base, 31) + incl - c;
}

/* Tokens per CTA when a row of `vocab` tokens is split over `c` CTAs, rounded up to a
 * multiple of `align` (a power of two, so that every slice starts as aligned as the row). */
static inline int64_t tkp_slice_of(int64_t vocab, int c, int64_t align)
{
    return ((vocab + c - 1) / c + align - 1) & ~(align - 1);
}

/* The cluster rule both samplers measured on the H200 (cake's and rejection's READMEs): a
 * batch in clusters of 4 or more CTAs per row takes at most half the SMs; bigger clusters
 * filling the device lost to smaller ones or to one CTA per row at every measured shape. */
static inline bool tkp_cluster_leaves_half(int c, int64_t batch, int sms)
{
    return c < 4 || (int64_t)c * batch <= sms / 2;
}

/* Carve aligned sub-buffers out of the harness-owned workspace, the same way in the
 * workspace-size computation (base == NULL) and in the run. */
static inline void *tkp_carve(char **cursor, size_t bytes)
{
    char *p = (char *)(((uintptr_t)*cursor + 255) & ~(uintptr_t)255);
    *cursor = p + bytes;
    return p;
}

/* Programmatic dependent launch (sm_90): a kernel launched with tkp_launch_dependent may start
 * while the kernel before it on the stream is still running, once every CTA of that one has
 * called tkp_allow_dependents(); it must call tkp_wait_prerequisite() before it reads anything
 * the earlier kernel writes (the wait returns when that kernel has completed and its writes
 * are visible; without the launch attribute both are no-ops). Hides the launch latency between
 * the short kernels of one run. */
__device__ __forceinline__ void tkp_allow_dependents(void)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void tkp_wait_prerequisite(void)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

/* A launch configuration with one attribute. */
static inline cudaLaunchConfig_t tkp_config(cudaLaunchAttribute *attr, dim3 grid, dim3 block,
                                            size_t smem, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

template <typename... Params, typename... Args>
static inline cudaError_t tkp_launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block,
                                               size_t smem, cudaStream_t stream, Args... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t cfg = tkp_config(attr, grid, block, smem, stream);
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

/* Thread-block clusters along x: the launch attribute, a launch, and how many clusters of
 * `cluster` CTAs (`threads` threads, `smem` dynamic bytes) can be co-resident (0 when none can,
 * or the query fails; the failure is cleared). */
static inline cudaLaunchAttribute tkp_cluster_attr(int cluster)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = (unsigned)cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    return attr;
}

template <typename... Params, typename... Args>
static inline cudaError_t tkp_launch_cluster(void (*kernel)(Params...), int cluster, dim3 grid,
                                             dim3 block, size_t smem, cudaStream_t stream,
                                             Args... args)
{
    cudaLaunchAttribute attr[1] = { tkp_cluster_attr(cluster) };
    const cudaLaunchConfig_t cfg = tkp_config(attr, grid, block, smem, stream);
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <typename... Params>
static inline int tkp_active_clusters(void (*kernel)(Params...), int cluster, int threads,
                                      size_t smem)
{
    cudaLaunchAttribute attr[1] = { tkp_cluster_attr(cluster) };
    const cudaLaunchConfig_t cfg =
        tkp_config(attr, dim3((unsigned)cluster * 64u), dim3((unsigned)threads), smem, 0);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        n = 0;
    }
    return n;
}

#endif

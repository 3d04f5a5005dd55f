/* gpu_launch.cuh — launch helpers for .cu files: programmatic dependent launches (sm_90; the
 * launch and its two device-side calls), thread-block cluster launches and their occupancy,
 * and the H200 cluster rule the samplers share. */
#ifndef TKP_GPU_LAUNCH_CUH
#define TKP_GPU_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* The cluster rule both samplers measured on the H200 (cake's and rejection's READMEs): a
 * batch in clusters of 4 or more CTAs per row takes at most half the SMs; bigger clusters
 * filling the device lost to smaller ones or to one CTA per row at every measured shape. */
static inline bool tkp_cluster_leaves_half(int c, int64_t batch, int sms)
{
    return c < 4 || (int64_t)c * batch <= sms / 2;
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

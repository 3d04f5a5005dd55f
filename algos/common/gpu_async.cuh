/* gpu_async.cuh — asynchronous copies of a few bytes from global to shared memory (sm_80+
 * `cp.async`): a thread issues them early, goes on with its work without waiting, and waits
 * only where the values are used. For a row's scalar inputs that a kernel reads at its very end
 * (cake's tail: p, min_p, the row's seed and offset), whose global loads there would add a
 * DRAM latency to every row's critical path. */
#ifndef TKP_GPU_ASYNC_CUH
#define TKP_GPU_ASYNC_CUH

#include <stdint.h>

/* Copy 4 or 8 bytes (BYTES) at src (global, aligned to BYTES) to dst (shared, aligned). */
template <int BYTES> __device__ __forceinline__ void tkp_copy_async(void *dst, const void *src)
{
    static_assert(BYTES == 4 || BYTES == 8, "cp.async.ca copies 4, 8 or 16 bytes");
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(BYTES)
                 : "memory");
}

/* Close the group of this thread's copies issued so far. */
__device__ __forceinline__ void tkp_copy_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until every copy group this thread committed has landed (visible to this thread; a
 * barrier after it makes them visible to the others). */
__device__ __forceinline__ void tkp_copy_async_wait_all()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

#endif

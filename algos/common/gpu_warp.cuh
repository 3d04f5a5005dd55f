/* gpu_warp.cuh — warp-level integer primitives every kernel shares: sums, maxima and scans
 * over the 32 lanes, a warp-aggregated histogram increment, slot reservation in a shared
 * counter and a 64-bit shared add. All are exact on integers, so their results do not depend
 * on the order of the lanes' additions (docs/SEMANTICS.md, "Determinism"). Every function is
 * called by all 32 lanes of a warp. */
#ifndef TKP_GPU_WARP_CUH
#define TKP_GPU_WARP_CUH

#include <cuda_runtime.h>

constexpr unsigned kTkpFullWarp = 0xFFFFFFFFu;

__device__ __forceinline__ unsigned tkp_lane(void) { return threadIdx.x & 31; }

/* The sum of v over the warp, returned to every lane. */
template <class T> __device__ __forceinline__ T tkp_warp_sum(T v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(kTkpFullWarp, v, o);
    return v;
}

/* The largest v over the warp, returned to every lane. */
template <class T> __device__ __forceinline__ T tkp_warp_max(T v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const T w = __shfl_xor_sync(kTkpFullWarp, v, o);
        v = w > v ? w : v;
    }
    return v;
}

/* Inclusive scan of v over the lanes in lane order. */
template <class T> __device__ __forceinline__ T tkp_warp_incl_scan(T v)
{
    const unsigned lane = tkp_lane();
#pragma unroll
    for (unsigned o = 1; o < 32; o <<= 1) {
        const T w = __shfl_up_sync(kTkpFullWarp, v, o);
        if (lane >= o)
            v += w;
    }
    return v;
}

/* hist[bucket] += 1 for each lane, with one atomic per distinct bucket of the warp; a bucket
 * >= nbins adds nothing. */
__device__ __forceinline__ void tkp_warp_hist_add(unsigned *hist, unsigned bucket,
                                                  unsigned nbins)
{
    const unsigned peers = __match_any_sync(kTkpFullWarp, bucket);
    const int leader = __ffs(peers) - 1;
    if ((int)tkp_lane() == leader && bucket < nbins)
        atomicAdd(&hist[bucket], (unsigned)__popc(peers));
}

/* The first of c consecutive slots of the shared counter *counter for this lane: a warp
 * inclusive scan of c and one atomic per warp. */
__device__ __forceinline__ unsigned tkp_warp_reserve(unsigned c, unsigned *counter)
{
    const unsigned incl = tkp_warp_incl_scan(c);
    unsigned base = 0;
    if (tkp_lane() == 31)
        base = atomicAdd(counter, incl);
    return __shfl_sync(kTkpFullWarp, base, 31) + incl - c;
}

/* *s += w on a 64-bit shared-memory word by two native 32-bit atomics (a 64-bit shared
 * atomicAdd is a compare-and-swap loop on sm_90, which many adds to one word serialise): the
 * low word's wrap, seen in the value its add returned, is carried into the high word. Exact
 * and order independent, like the 64-bit add. Any lane may call it alone. */
__device__ __forceinline__ void tkp_shared_add_u64(unsigned long long *s, unsigned long long w)
{
    unsigned *word = reinterpret_cast<unsigned *>(s); /* little endian: low word first */
    const unsigned lo = (unsigned)w, old = atomicAdd(word, lo);
    const unsigned up = (unsigned)(w >> 32) + (old + lo < old);
    if (up)
        atomicAdd(word + 1, up);
}

#endif

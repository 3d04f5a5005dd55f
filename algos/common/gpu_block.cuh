/* gpu_block.cuh — block-level integer primitives on top of gpu_warp.cuh: N sums at once, a
 * sum with a maximum, and the one block-wide exclusive scan every kernel uses, in thread order
 * (with the block total and one barrier, or with two barriers and free scratch on return,
 * with or without the total), over N items per thread in blocked order, and of 0/1 flags by
 * ballots. Exact on integers, so their results do not depend on the order of the additions
 * (docs/SEMANTICS.md, "Determinism, and CPU = GPU bit for bit").
 *
 * Every function is called by every thread of a one-dimensional block of WARPS full warps
 * (blockDim.x == 32 * WARPS, WARPS <= 32), from uniform control flow: each one contains
 * __syncthreads. The caller owns the scratch arrays (shared memory, WARPS entries per value);
 * each comment says when they may be written again. */
#ifndef TKP_GPU_BLOCK_CUH
#define TKP_GPU_BLOCK_CUH

#include <cuda/std/limits>
#include <cuda_runtime.h>

#include "gpu_warp.cuh"

/* v[0 .. N) := their sums over the block, in every thread. scratch: N rows of WARPS in shared
 * memory. Barriers: two; the second follows every thread's last read of scratch, so scratch
 * may be rewritten as soon as this returns. */
template <int WARPS, int N, class T>
__device__ __forceinline__ void tkp_block_sums(T (&v)[N], T (*scratch)[WARPS])
{
    static_assert(WARPS >= 1 && WARPS <= 32, "one warp sums the warp totals");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < N; i++)
        v[i] = tkp_warp_sum(v[i]);
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < N; i++)
            scratch[i][warp] = v[i];
    }
    __syncthreads();
    const bool mine = lane < WARPS;
#pragma unroll
    for (int i = 0; i < N; i++)
        v[i] = tkp_warp_sum(mine ? scratch[i][lane] : (T)0);
    __syncthreads();
}

/* sum := the block's sum of sum, max := the block's largest max, in every thread. scratch: two
 * rows of WARPS in shared memory (row 0 the sums, row 1 the maxima). Barriers: two, as
 * tkp_block_sums: scratch may be rewritten as soon as this returns. */
template <int WARPS, class T>
__device__ __forceinline__ void tkp_block_sum_max(T &sum, T &max, T (*scratch)[WARPS])
{
    static_assert(WARPS >= 1 && WARPS <= 32, "one warp reduces the warp totals");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    sum = tkp_warp_sum(sum);
    max = tkp_warp_max(max);
    if (lane == 0) {
        scratch[0][warp] = sum;
        scratch[1][warp] = max;
    }
    __syncthreads();
    const bool mine = lane < WARPS;
    sum = tkp_warp_sum(mine ? scratch[0][lane] : (T)0);
    max = tkp_warp_max(mine ? scratch[1][lane] : cuda::std::numeric_limits<T>::lowest());
    __syncthreads();
}

/* The inclusive scan over the warps of their totals, in every lane l the total of warps
 * 0 .. l (0 past the last warp), from incl, this lane's inclusive warp scan (lane 31 holds
 * its warp's total). scratch: WARPS entries in shared memory. Barriers: one, after which every
 * warp reads scratch. The scans below are built on it. */
template <int WARPS, class T>
__device__ __forceinline__ T tkp_block_scan_warp_totals(T incl, T *scratch)
{
    static_assert(WARPS >= 1 && WARPS <= 32, "one warp scans the warp totals");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 31)
        scratch[warp] = incl;
    __syncthreads();
    return tkp_warp_incl_scan(lane < WARPS ? scratch[lane] : (T)0);
}

/* The sum of v over the threads before this one (thread order: warp by warp, lane by lane),
 * and the block's total in total. scratch: WARPS entries in shared memory. Barriers: one,
 * after which every warp reads scratch; a thread may return while others still read it, so
 * scratch may be rewritten only after the caller's next block barrier (a loop with no other
 * barrier alternates two scratch rows: a row is rewritten only after the barrier of the call
 * between, which every thread reaches after reading it). */
template <int WARPS, class T>
__device__ __forceinline__ T tkp_block_excl_scan_total(T v, T *scratch, T &total)
{
    const int warp = threadIdx.x >> 5;
    const T incl = tkp_warp_incl_scan(v);
    const T wincl = tkp_block_scan_warp_totals<WARPS>(incl, scratch);
    const T wbefore = __shfl_sync(kTkpFullWarp, wincl, (warp + 31) & 31);
    total = __shfl_sync(kTkpFullWarp, wincl, 31);
    return (warp ? wbefore : (T)0) + incl - v;
}

/* The sum of v over the threads before this one (thread order). scratch: WARPS entries in
 * shared memory. Barriers: two; the second follows every read of scratch, so scratch may be
 * rewritten as soon as this returns. */
template <int WARPS, class T> __device__ __forceinline__ T tkp_block_excl_scan(T v, T *scratch)
{
    const int warp = threadIdx.x >> 5;
    const T incl = tkp_warp_incl_scan(v);
    const T wincl = tkp_block_scan_warp_totals<WARPS>(incl, scratch);
    const T wbefore = __shfl_sync(kTkpFullWarp, wincl, (warp + 31) & 31);
    __syncthreads();
    return (warp ? wbefore : (T)0) + incl - v;
}

/* The sum of v over the threads before this one (thread order), and the block's total in
 * total. scratch: WARPS entries in shared memory. Barriers: two, as tkp_block_excl_scan:
 * scratch may be rewritten as soon as this returns. */
template <int WARPS, class T>
__device__ __forceinline__ T tkp_block_excl_scan(T v, T *scratch, T &total)
{
    const T before = tkp_block_excl_scan_total<WARPS>(v, scratch, total);
    __syncthreads();
    return before;
}

/* The number of threads before this one (thread order) whose flag is set, and the block's count
 * in total: the exclusive scan of flag, by a ballot per warp and the scan of the warps' counts.
 * scratch: WARPS entries in shared memory. Barriers: one, as tkp_block_excl_scan_total
 * (scratch may be rewritten only after the caller's next block barrier). */
template <int WARPS>
__device__ __forceinline__ unsigned tkp_block_excl_count(bool flag, unsigned *scratch,
                                                         unsigned &total)
{
    const unsigned lane = tkp_lane(), warp = threadIdx.x >> 5;
    const unsigned mk = __ballot_sync(kTkpFullWarp, flag);
    const unsigned before = (unsigned)__popc(mk & ((1u << lane) - 1u));
    const unsigned wincl =
        tkp_block_scan_warp_totals<WARPS>(before + (unsigned)flag, scratch);
    const unsigned wbefore = __shfl_sync(kTkpFullWarp, wincl, (warp + 31) & 31);
    total = __shfl_sync(kTkpFullWarp, wincl, 31);
    return (warp ? wbefore : 0u) + before;
}

/* The exclusive scan of N items per thread in blocked order (thread t owns items t N .. t N +
 * N - 1, the order of CUB's BlockScan on arrays): ex[i] := the sum of every item before item i
 * of this thread, total := the block's sum. scratch: WARPS entries in shared memory. Barriers:
 * one, as tkp_block_excl_scan_total (scratch may be rewritten only after the caller's next
 * block barrier). */
template <int WARPS, int N, class T>
__device__ __forceinline__ void tkp_block_excl_scan_items(const T (&v)[N], T (&ex)[N],
                                                          T *scratch, T &total)
{
    T sum = 0; /* the thread's items, then the scan of the threads' sums */
#pragma unroll
    for (int i = 0; i < N; i++)
        sum += v[i];
    T run = tkp_block_excl_scan_total<WARPS>(sum, scratch, total);
#pragma unroll
    for (int i = 0; i < N; i++) {
        ex[i] = run;
        run += v[i];
    }
}

#endif

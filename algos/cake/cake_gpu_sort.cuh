/* cake_gpu_sort.cuh — rank 0's bitonic sort of the gathered 64-bit composites (key << 32 |
 * ~index), descending: strides below 128 in registers and warp shuffles, larger ones in
 * shared memory. */
#ifndef TKP_CAKE_GPU_SORT_CUH
#define TKP_CAKE_GPU_SORT_CUH

#include "../common/gpu_warp.cuh"
#include "cake_gpu_types.cuh"


/* Compare-exchange of the entries at positions p < q: the larger goes first iff desc. */
__device__ __forceinline__ void ck_cx(u64 &x, u64 &y, bool desc)
{
    const u64 hi = x > y ? x : y, lo = x > y ? y : x;
    x = desc ? hi : lo;
    y = desc ? lo : hi;
}

/* The stages of span `span` with strides s0, s0/2, ..., 1 (s0 < 128) on the 4 consecutive
 * entries p0..p0+3 each thread holds in v (p0 = 4 t plus a multiple of 4 CK_THREADS): partners
 * within the warp through shuffles, within the thread in registers. Position p sits in a
 * descending run iff (p & span) == 0; the lower position of a pair takes the larger entry in a
 * descending run. */
__device__ __forceinline__ void ck_sort_regs(u64 (&v)[4], uint32_t span, uint32_t s0,
                                             uint32_t p0)
{
    const uint32_t t = threadIdx.x;
    for (uint32_t s = s0; s >= 4; s >>= 1) { /* partner thread t ^ (s / 4), same e */
        const bool lower = (t & (s >> 2)) == 0, desc = (p0 & span) == 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const u64 y = __shfl_xor_sync(kTkpFullWarp, v[e], s >> 2);
            const bool keep_hi = lower == desc;
            v[e] = keep_hi ? (v[e] > y ? v[e] : y) : (v[e] > y ? y : v[e]);
        }
    }
    if (s0 >= 2) { /* span >= 4: one direction for the whole thread */
        const bool desc = (p0 & span) == 0;
        ck_cx(v[0], v[2], desc);
        ck_cx(v[1], v[3], desc);
    }
    /* s = 1: for span == 2 the pairs (0,1) and (2,3) run in opposite directions */
    ck_cx(v[0], v[1], (p0 & span) == 0);
    ck_cx(v[2], v[3], ((p0 + 2) & span) == 0);
}

/* The spans 2, 4, ..., min(size, 128) of the network on the 4 entries per lane of v: a warp's
 * 128 consecutive entries sorted in runs of min(size, 128). */
__device__ __forceinline__ void ck_sort_warp(u64 (&v)[4], uint32_t size)
{
    for (uint32_t span = 2; span <= size && span <= 128; span <<= 1)
        ck_sort_regs(v, span, span >> 1, 4 * threadIdx.x);
}

/* The size ck_sort_desc sorts m entries over: the next power of two, at least 2. */
__device__ __forceinline__ uint32_t ck_sort_size(uint32_t m)
{
    uint32_t size = 2;
    while (size < m)
        size <<= 1;
    return size;
}

/* The register stages of ck_sort_desc on every chunk of 4 CK_THREADS entries below size:
 * first (span 0) the spans 2 .. 128 (ck_sort_warp), else span's strides 64 .. 1. */
__device__ __forceinline__ void ck_sort_chunks(u64 *a, uint32_t size, uint32_t span)
{
    for (uint32_t c = 0; c < size; c += 4 * CK_THREADS) { /* block-uniform */
        const uint32_t p0 = c + 4 * threadIdx.x;
        if (p0 - 4 * (threadIdx.x & 31) >= size) /* warp-uniform: the warp holds none */
            continue;
        u64 v[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            v[e] = a[p0 + e];
        if (span == 0)
            ck_sort_warp(v, size);
        else
            ck_sort_regs(v, span, 64, p0);
#pragma unroll
        for (int e = 0; e < 4; e++)
            a[p0 + e] = v[e];
    }
}

/* Sort a[0, size) descending (size a power of two, 2 <= size <= CK_GATHER; a has CK_GATHER
 * entries). A bitonic network: the strides below 128 run in registers (each thread holds 4
 * consecutive entries of a chunk of 4 CK_THREADS; a warp holds 128), the larger strides in
 * shared memory. Entries at or past `size` (in the only warp that holds some when size < 128)
 * never meet an entry below size, so their contents do not matter. Called by every thread of
 * the CTA. */
static __device__ void ck_sort_desc(u64 *a, uint32_t size)
{
    const uint32_t t = threadIdx.x;
    __syncthreads();
    ck_sort_chunks(a, size, 0);
    __syncthreads();
    for (uint32_t span = 256; span <= size; span <<= 1) {
        for (uint32_t s = span >> 1; s >= 128; s >>= 1) {
            for (uint32_t i = t; i < size / 2; i += CK_THREADS) {
                const uint32_t p = ((i & ~(s - 1)) << 1) | (i & (s - 1)), q = p + s;
                u64 x = a[p], y = a[q];
                ck_cx(x, y, (p & span) == 0);
                a[p] = x;
                a[q] = y;
            }
            __syncthreads();
        }
        ck_sort_chunks(a, size, span);
        __syncthreads();
    }
}

#endif

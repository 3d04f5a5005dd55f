/* qrita_gpu_slot.cuh — the pivot search's data (qrita_gpu_search.cuh): the statistics of the
 * keys above one threshold (Slot) and their folds over a warp or a block (redux.sync: count,
 * smallest key, its copies, and the 64-bit measure as three field sums), the candidates a search
 * reads (Src) and its view of them (Eng), the state of one boundary search (SearchState) and the
 * search kernels' static shared memory (SearchSmem). */
#ifndef QRITA_GPU_SLOT_CUH
#define QRITA_GPU_SLOT_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "qrita_gpu_group.cuh"
#include "qrita_gpu_types.cuh"

/* Statistics of the keys above one threshold: count, measure, smallest key and its copies. */
struct Slot {
    uint32_t cnt, min, copies;
    u64 mass;
};

__device__ __forceinline__ Slot slot_empty()
{
    Slot s;
    s.cnt = 0;
    s.min = UINT32_MAX;
    s.copies = 0;
    s.mass = 0;
    return s;
}

__device__ __forceinline__ void slot_add(Slot &a, const Slot &b)
{
    a.cnt += b.cnt;
    a.mass += b.mass;
    if (b.min < a.min) {
        a.min = b.min;
        a.copies = b.copies;
    } else if (b.min == a.min) {
        a.copies += b.copies;
    }
}

/* One more key above the slot's threshold, of measure w. */
__device__ __forceinline__ void slot_push(Slot &s, uint32_t key, u64 w)
{
    s.cnt++;
    s.mass += w;
    if (key < s.min) {
        s.min = key;
        s.copies = 1;
    } else if (key == s.min) {
        s.copies++;
    }
}

#define NSLOT 5

/* The candidates a search reads: kind 0 the row's buffer (global keys), 1 the row itself,
 * 2 a shared-memory list, 3 the row's buffer appended to by other CTAs of this kernel (the
 * fused search: read past L1). */
struct Src {
    int kind;
    const uint32_t *keys;
    const void *row; /* kind 1: the row, of the search's element type E */
    int64_t n;
};

/* A search's view of its candidates: the source holds (a superset of) the keys in (L, H]; agg is
 * the statistics of the keys > H, which every remaining pivot sees whole. */
struct Eng {
    Src src;
    uint32_t L, H;
    Slot agg;
    int64_t U; /* an upper bound on the keys in the current window */
    int cur;   /* the shared-memory half the source lives in (kind 2) */
};

/* The state of one boundary search between iterations (shared by the block and the warp that
 * takes over when the candidates are few). */
struct SearchState {
    uint32_t lo, hi, floor_key, first_min, acc_key;
    int it;
    bool first, accepted;
    int64_t acc_count, acc_keep, iters;
};

struct SearchSmem {
    Slot scratch[32][NSLOT];
    unsigned wcnt[32];
    unsigned gcnt[8], found[8];
    SearchState hand; /* the warp's result after a handoff */
};

/* slot_add folded over the warp: sums, the smallest key and the copies of it. */
__device__ __forceinline__ Slot warp_slot_reduce(const Slot &s)
{
    Slot r;
    r.cnt = __reduce_add_sync(FULL, s.cnt);
    r.min = __reduce_min_sync(FULL, s.min);
    r.copies = __reduce_add_sync(FULL, s.min == r.min ? s.copies : 0u);
    r.mass = warp_sum_u64(s.mass);
    return r;
}

template <int G>
__device__ __forceinline__ void reduce_slots(Slot (&s)[NSLOT], SearchSmem &sm)
{
#pragma unroll
    for (int j = 0; j < NSLOT; j++)
        s[j] = warp_slot_reduce(s[j]);
    if constexpr (G > 32) {
        /* the G/32 warp results of slot j folded by warp j, the results broadcast through row
         * G/32 of the scratch */
        static_assert(G / 32 < 32 && G / 32 >= NSLOT, "scratch rows and one warp per slot");
        const int w = threadIdx.x >> 5;
        const unsigned lane = threadIdx.x & 31;
        if (lane == 0)
#pragma unroll
            for (int j = 0; j < NSLOT; j++)
                sm.scratch[w][j] = s[j];
        __syncthreads();
        if (w < NSLOT) {
            const Slot acc = warp_slot_reduce(lane < G / 32 ? sm.scratch[lane][w] : slot_empty());
            if (lane == 0)
                sm.scratch[G / 32][w] = acc;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < NSLOT; j++)
            s[j] = sm.scratch[G / 32][j];
        __syncthreads();
    }
}

/* The view of a search that starts on source s: all of it, nothing above. */
__device__ __forceinline__ void eng_reset(Eng &e, const Src &s)
{
    e.src = s;
    e.L = 0;
    e.H = UINT32_MAX;
    e.agg = slot_empty();
    e.U = s.n;
    e.cur = 0;
}

#endif

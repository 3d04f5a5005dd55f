/* rtopk_gpu_types.cuh — what every layer of rtopk's CUDA code shares (README.md, "GPU source
 * layout"): the launch constants, the scan's partial result (Stat) and its exact merge, the
 * midpoint, the CTA's shared memory (RtShared) and the token classes of the selection. The
 * layers: rtopk_gpu_row.cuh (the row's passes, one cluster per row), rtopk_gpu.cu (the kernel
 * and the launcher). */
#ifndef TKP_RTOPK_GPU_TYPES_CUH
#define TKP_RTOPK_GPU_TYPES_CUH

#include <cub/cub.cuh>
#include <stdint.h>

#include "../common/prob.h"

namespace {

constexpr int RT_THREADS = 512;
/* Two CTAs per SM (64 registers: ptxas spills ~50 bytes, outside the streaming loops);
 * with 1 the kernel needs ~100 registers and spills nothing, but an SM holds one CTA. */
constexpr int RT_BLOCKS_PER_SM = 2;
constexpr int RT_MAX_GROUP = 8;                 /* the portable cluster size limit */
constexpr int64_t RT_PREF_CHUNK_BYTES = 96 << 10; /* two CTAs per SM can hold their chunks */
constexpr int64_t RT_MIN_SPLIT = 4096;          /* split a row further only above this */

struct Stat {
    float hi;
    int hi_n;
    float lo;
    int lo_n;
    int valid;
};

__device__ __forceinline__ Stat stat_identity()
{
    Stat s;
    s.hi = -INFINITY;
    s.hi_n = 0;
    s.lo = INFINITY;
    s.lo_n = 0;
    s.valid = 0;
    return s;
}

/* Merge two partial scans: exact for any grouping (max/min by value, counts added). */
struct StatOp {
    __device__ __forceinline__ Stat operator()(const Stat &a, const Stat &b) const
    {
        Stat r;
        if (a.hi > b.hi) {
            r.hi = a.hi;
            r.hi_n = a.hi_n;
        } else if (b.hi > a.hi) {
            r.hi = b.hi;
            r.hi_n = b.hi_n;
        } else {
            r.hi = a.hi;
            r.hi_n = a.hi_n + b.hi_n;
        }
        if (a.lo < b.lo) {
            r.lo = a.lo;
            r.lo_n = a.lo_n;
        } else if (b.lo < a.lo) {
            r.lo = b.lo;
            r.lo_n = b.lo_n;
        } else {
            r.lo = a.lo;
            r.lo_n = a.lo_n + b.lo_n;
        }
        r.valid = a.valid + b.valid;
        return r;
    }
};

__device__ __forceinline__ void stat_add(Stat &s, float v)
{
    if (!tkp_is_valid(v))
        return;
    s.valid++;
    if (v > s.hi) {
        s.hi = v;
        s.hi_n = 1;
    } else if (v == s.hi) {
        s.hi_n++;
    }
    if (v < s.lo) {
        s.lo = v;
        s.lo_n = 1;
    } else if (v == s.lo) {
        s.lo_n++;
    }
}

/* rtopk_midpoint of rtopk.c with explicit round-to-nearest operations (never contracted). */
__device__ __forceinline__ float rt_midpoint(float lo, float hi)
{
    return __fadd_rn(__fmul_rn(0.5f, lo), hi == INFINITY ? 0x1p127f : __fmul_rn(0.5f, hi));
}

struct Xchg {
    Stat s;
    unsigned long long c;
};

using RedStat = cub::BlockReduce<Stat, RT_THREADS>;
using RedCount = cub::BlockReduce<unsigned long long, RT_THREADS>;

struct RtShared {
    union {
        RedStat::TempStorage rs;
        RedCount::TempStorage rc;
        int si[RT_THREADS / 32]; /* the block scan of the ranked selection (gpu_block.cuh) */
    } tmp;
    Xchg slot[2]; /* alternate slots: one cluster.sync per exchange suffices */
};

__device__ __forceinline__ float4 nan4()
{
    const float q = __int_as_float(0x7FC00000);
    return make_float4(q, q, q, q);
}

/* The token classes of the selection passes. */
enum { CLS_NONE = -1, CLS_A = 0, CLS_B = 1, CLS_C = 2 };

__device__ __forceinline__ int rt_class(float v, float t)
{
    if (v > t)
        return CLS_A;
    if (v == t)
        return CLS_B;
    if (v < t && tkp_is_valid(v))
        return CLS_C;
    return CLS_NONE;
}

} // namespace

#endif

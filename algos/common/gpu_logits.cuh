/* gpu_logits.cuh — typed reads of a logits row on the GPU: a kernel templated on an element
 * type E (TkpF32, TkpBF16, TkpF16) reads its row through these, so one kernel source serves the
 * three input types of struct tkp_problem.dtype with the conversion in registers.
 *
 * Every 16-bit value converts to float32 exactly (half.h), so a kernel's results on a 16-bit
 * row equal those on its float32 upcast bit for bit (docs/SEMANTICS.md, "16-bit logits"): bf16
 * is a shift into the top half of a float32; fp16 uses the hardware conversion (cvt.f32.f16,
 * exact for every finite value and subnormal, inf stays inf, NaN stays a NaN though its payload
 * may change — any NaN is invalid, so no result depends on it).
 *
 * The vector unit is four consecutive elements: one float4 (16 bytes) for float32, one uint2
 * (8 bytes) for 16-bit types, returned as a float4 in both cases, so code written over float4
 * groups of a float32 row reads a 16-bit row at half the bytes unchanged. A launcher picks the
 * instantiation with tkp_with_dtype. */
#ifndef TKP_GPU_LOGITS_CUH
#define TKP_GPU_LOGITS_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "half.h"

/* The element types: the stored type, its tkp_dtype, and the exact conversion of one value. */
struct TkpF32 {
    typedef float storage;
    static constexpr enum tkp_dtype dtype = TKP_F32;
    __device__ static __forceinline__ float to_f32(float x) { return x; }
};
struct TkpBF16 {
    typedef uint16_t storage;
    static constexpr enum tkp_dtype dtype = TKP_BF16;
    __device__ static __forceinline__ float to_f32(uint16_t h)
    {
        return __uint_as_float((uint32_t)h << 16);
    }
};
struct TkpF16 {
    typedef uint16_t storage;
    static constexpr enum tkp_dtype dtype = TKP_F16;
    __device__ static __forceinline__ float to_f32(uint16_t h)
    {
        return __half2float(__ushort_as_half(h));
    }
};

/* Element i of the row that starts at `row` (untyped, as struct tkp_io.logits is). */
template <class E> __device__ __forceinline__ float tkp_load1(const void *row, int64_t i)
{
    return E::to_f32(__ldg(static_cast<const typename E::storage *>(row) + i));
}

/* A pair of 16-bit elements in one 32-bit word, low half first (little-endian). */
template <class E> __device__ __forceinline__ float2 tkp_unpack2(uint32_t w)
{
    return make_float2(E::to_f32((uint16_t)(w & 0xFFFFu)), E::to_f32((uint16_t)(w >> 16)));
}

/* Elements i .. i+3 of the row in one vector load; the caller has checked tkp_vec4_ok for the
 * row and i is a multiple of 4 (or the row's own offset is aligned, see tkp_vec4_head). */
template <class E> __device__ __forceinline__ float4 tkp_load4(const void *row, int64_t i)
{
    if constexpr (sizeof(typename E::storage) == 4) {
        return __ldg(reinterpret_cast<const float4 *>(static_cast<const float *>(row) + i));
    } else {
        const uint2 w = __ldg(reinterpret_cast<const uint2 *>(static_cast<const uint16_t *>(row) + i));
        const float2 a = tkp_unpack2<E>(w.x), b = tkp_unpack2<E>(w.y);
        return make_float4(a.x, a.y, b.x, b.y);
    }
}

/* Bytes of one element. */
template <class E> __host__ __device__ constexpr int tkp_elem_bytes(void)
{
    return (int)sizeof(typename E::storage);
}

/* Whether element i of `row` starts a vector (its address a multiple of 4 elements' bytes). */
template <class E> __device__ __forceinline__ bool tkp_vec4_ok(const void *row, int64_t i)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(static_cast<const typename E::storage *>(row) + i);
    return (a & (uintptr_t)(4 * sizeof(typename E::storage) - 1)) == 0;
}

/* The number of scalar elements (0..3) before the first vector-aligned element of `row`, when
 * the row's address is a multiple of the element size (always, for a tkp_io.logits row);
 * a loop reads that head one by one and the rest in vectors. Not clamped to the row's length:
 * a row shorter than its head is the caller's to bound. */
template <class E> __device__ __forceinline__ int tkp_vec4_head(const void *row)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(row) / sizeof(typename E::storage);
    return (int)((4 - (a & 3)) & 3);
}

/* Pointer to row r of a batch whose rows are `stride` elements apart. */
template <class E>
__host__ __device__ __forceinline__ const void *tkp_row_ptr(const void *logits, int64_t stride, int64_t r)
{
    return static_cast<const typename E::storage *>(logits) + r * stride;
}

/* Calls f(E{}) with the element type of `dtype` (a host-side switch for a launcher, e.g.
 *     tkp_with_dtype(pb->dtype, [&](auto e) { kernel<decltype(e)><<<g, b, 0, st>>>(args); });
 * returns false, calling nothing, for a value outside the enum (the harness has refused one
 * before any launcher runs: harness/apply.c, tkp_capable). */
template <class F> __host__ bool tkp_with_dtype(enum tkp_dtype dtype, F &&f)
{
    switch (dtype) {
    case TKP_F32: f(TkpF32{}); return true;
    case TKP_BF16: f(TkpBF16{}); return true;
    case TKP_F16: f(TkpF16{}); return true;
    }
    return false;
}

#endif

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
 * groups of a float32 row reads a 16-bit row at half the bytes unchanged.
 *
 * The wide unit (tkp_load16) is one 16-byte vector whatever the type: four float32 values in a
 * float4, or eight 16-bit values in a uint4, kept raw (E::vec16) until tkp_vec16_get converts
 * one element; a kernel that streams a row this way has as many bytes in flight per load on a
 * 16-bit row as on a float32 one, and its float32 instantiation is the float4 code above.
 * A launcher picks the instantiation with tkp_with_dtype. */
#ifndef TKP_GPU_LOGITS_CUH
#define TKP_GPU_LOGITS_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "half.h"

/* The element types: the stored type, its tkp_dtype, and the exact conversion of one value. */
struct TkpF32 {
    typedef float storage;
    typedef float4 vec16; /* one 16-byte vector as loaded: 4 values */
    static constexpr enum tkp_dtype dtype = TKP_F32;
    __device__ static __forceinline__ float to_f32(float x) { return x; }
};
struct TkpBF16 {
    typedef uint16_t storage;
    typedef uint4 vec16;                        /* 8 values, low half of .x first */
    static constexpr uint16_t qnan = 0x7FC0u;   /* a quiet NaN */
    static constexpr enum tkp_dtype dtype = TKP_BF16;
    __device__ static __forceinline__ float to_f32(uint16_t h)
    {
        return __uint_as_float((uint32_t)h << 16);
    }
};
struct TkpF16 {
    typedef uint16_t storage;
    typedef uint4 vec16;
    static constexpr uint16_t qnan = 0x7E00u;
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

/* ---- 16-byte vectors: 4 float32 or 8 16-bit elements ---- */

/* Elements of one 16-byte vector. */
template <class E> __host__ __device__ constexpr int tkp_vec16_elems(void)
{
    return 16 / (int)sizeof(typename E::storage);
}

/* The raw vector of elements i .. i + tkp_vec16_elems - 1 in one 16-byte load; the address of
 * element i is a multiple of 16 (tkp_vec16_head). For float32 it is tkp_load4's load. */
template <class E>
__device__ __forceinline__ typename E::vec16 tkp_load16(const void *row, int64_t i)
{
    return __ldg(reinterpret_cast<const typename E::vec16 *>(
        static_cast<const typename E::storage *>(row) + i));
}

/* Element c of a raw vector as float32 (exact, as E::to_f32); c < tkp_vec16_elems<E>() is a
 * constant once the caller's loop is unrolled, so this is a register pick (and a shift or a
 * conversion for 16-bit types). */
template <class E> __device__ __forceinline__ float tkp_vec16_get(const typename E::vec16 &v, int c)
{
    if constexpr (sizeof(typename E::storage) == 4) {
        return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
    } else {
        const uint32_t w = c < 2 ? v.x : c < 4 ? v.y : c < 6 ? v.z : v.w;
        return E::to_f32((uint16_t)((c & 1) ? w >> 16 : w & 0xFFFFu));
    }
}

/* tkp_vec16_get by another instruction sequence (for 16-bit types the half is moved with a
 * byte permute before the conversion): the same value, but one that the compiler does not
 * merge with tkp_vec16_get's. A rarely taken branch that re-reads the values of a vector
 * uses it, so the 4 raw registers stay live across that path instead of 8 converted floats
 * (cake's pass 1, which converts nothing on its common path, reads its candidates so). For
 * float32 it is tkp_vec16_get. */
template <class E>
__device__ __forceinline__ float tkp_vec16_get_cold(const typename E::vec16 &v, int c)
{
    if constexpr (sizeof(typename E::storage) == 4) {
        return tkp_vec16_get<E>(v, c);
    } else {
        const uint32_t w = c < 2 ? v.x : c < 4 ? v.y : c < 6 ? v.z : v.w;
        if constexpr (E::dtype == TKP_BF16) /* the half into the top 16 bits, zeros below */
            return __uint_as_float(__byte_perm(w, 0u, (c & 1) ? 0x3244u : 0x1044u));
        else /* the half into the low 16 bits */
            return E::to_f32((uint16_t)__byte_perm(w, 0u, (c & 1) ? 0x4432u : 0x4410u));
    }
}

/* Two 16-bit pairs combined by one packed instruction: the larger of each pair's halves
 * (max.bf16x2 / max.f16x2: where one half is a NaN the other is taken) or their rounded sum
 * (add.rn.bf16x2 / add.rn.f16x2: IEEE, so a NaN or -inf term keeps the sum NaN or -inf). */
template <class E> __device__ __forceinline__ uint32_t tkp_pair_max(uint32_t a, uint32_t b)
{
    uint32_t d;
    if constexpr (E::dtype == TKP_BF16)
        asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    else
        asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
template <class E> __device__ __forceinline__ uint32_t tkp_pair_add(uint32_t a, uint32_t b)
{
    uint32_t d;
    if constexpr (E::dtype == TKP_BF16)
        asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    else
        asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

/* The largest element of a raw vector as float32, *max (fmaxf's rule: a NaN only where every
 * element is one), and *sum += the sum of its elements. For 16-bit types both run on packed
 * pairs, three instructions for eight elements, and only the last pair is converted: the
 * maximum is still the float32 maximum of the converted elements (the conversion is exact and
 * keeps order), but the sum is rounded in 16-bit arithmetic and may overflow where a float32
 * one would not. So the sum serves one test only: *sum >= -FLT_MAX proves every element
 * valid (neither NaN nor -inf: each propagates through IEEE sums, and an overflow to -inf
 * fails the test too, sending the caller to an exact count). For float32, *sum +=
 * (x + y) + (z + w). */
template <class E>
__device__ __forceinline__ void tkp_vec16_max_sum(const typename E::vec16 &v, float &max,
                                                  float &sum)
{
    if constexpr (sizeof(typename E::storage) == 4) {
        max = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        sum += (v.x + v.y) + (v.z + v.w);
    } else {
        const uint32_t m = tkp_pair_max<E>(tkp_pair_max<E>(v.x, v.y), tkp_pair_max<E>(v.z, v.w));
        const uint32_t s = tkp_pair_add<E>(tkp_pair_add<E>(v.x, v.y), tkp_pair_add<E>(v.z, v.w));
        max = fmaxf(E::to_f32((uint16_t)(m & 0xFFFFu)), E::to_f32((uint16_t)(m >> 16)));
        sum += E::to_f32((uint16_t)(s & 0xFFFFu)) + E::to_f32((uint16_t)(s >> 16));
    }
}

/* A raw vector whose every element is a quiet NaN (invalid, docs/SEMANTICS.md "Valid tokens
 * and special values"): the fill of a slot past a row's end. */
template <class E> __device__ __forceinline__ typename E::vec16 tkp_vec16_nan(void)
{
    if constexpr (sizeof(typename E::storage) == 4) {
        const float nan = __int_as_float(0x7FC00000);
        return make_float4(nan, nan, nan, nan);
    } else {
        const uint32_t w = (uint32_t)E::qnan * 0x10001u;
        return make_uint4(w, w, w, w);
    }
}

/* A raw vector of zeros (+0.0 in every element). */
template <class E> __device__ __forceinline__ typename E::vec16 tkp_vec16_zero(void)
{
    if constexpr (sizeof(typename E::storage) == 4)
        return make_float4(0.f, 0.f, 0.f, 0.f);
    else
        return make_uint4(0u, 0u, 0u, 0u);
}

/* The number of scalar elements (0 .. tkp_vec16_elems - 1: up to 3 for float32, 7 for 16-bit)
 * before the first element of `row` whose address is a multiple of 16, when the row's address
 * is a multiple of the element size (always, for a tkp_io.logits row, even where an odd V
 * puts a 16-bit row at a 2-byte boundary). Not clamped to the row's length. For float32 it is
 * tkp_vec4_head. */
template <class E> __device__ __forceinline__ int tkp_vec16_head(const void *row)
{
    constexpr uintptr_t n = (uintptr_t)tkp_vec16_elems<E>();
    const uintptr_t a = reinterpret_cast<uintptr_t>(row) / sizeof(typename E::storage);
    return (int)((n - (a & (n - 1))) & (n - 1));
}

/* Whether element i of `row` starts a 16-byte vector. */
template <class E> __device__ __forceinline__ bool tkp_vec16_ok(const void *row, int64_t i)
{
    const typename E::storage *p = static_cast<const typename E::storage *>(row) + i;
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
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
 * before any launcher runs: harness/module/apply.c, tkp_capable). */
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

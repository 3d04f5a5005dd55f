/* half.h — the 16-bit logit formats (bf16, fp16) and their exact conversions, host-and-device.
 *
 * Every bf16 and every fp16 value is exactly a float32, so a module reads a 16-bit row by
 * upcasting each value with tkp_bf16_to_f32 / tkp_f16_to_f32 and its results equal those on the
 * float32 upcast bit for bit (docs/SEMANTICS.md, "Valid tokens and special values": -0.0,
 * subnormals, +-inf and NaN keep their meaning; any NaN is invalid, whatever its payload). The
 * conversions use integer bit manipulation only (no _Float16, no cuda_fp16.h), so the CPU and
 * the GPU compute the same bits. (The GPU kernels' row reads convert fp16 with the hardware
 * instruction instead, gpu_logits.cuh: the same value for every encoding, a NaN's payload aside.) The reverse conversions (float32 to 16 bits, round to nearest
 * even, overflow to inf, NaN stays NaN) are for the dataset generator. */
#ifndef TKP_HALF_H
#define TKP_HALF_H

#include <stdint.h>
#include "hd.h"

/* The element type of a logits row. */
enum tkp_dtype { TKP_F32, TKP_BF16, TKP_F16 };
#define TKP_DTYPE_COUNT 3

/* "f32", "bf16", "f16"; NULL for a value outside the enum. */
TKP_HD const char *tkp_dtype_name(enum tkp_dtype t)
{
    switch (t) {
    case TKP_F32: return "f32";
    case TKP_BF16: return "bf16";
    case TKP_F16: return "f16";
    }
    return 0;
}

/* Bytes per element; 0 for a value outside the enum. */
TKP_HD int tkp_dtype_size(enum tkp_dtype t)
{
    switch (t) {
    case TKP_F32: return 4;
    case TKP_BF16: return 2;
    case TKP_F16: return 2;
    }
    return 0;
}

/* The float whose bits are u (a union, as in prob.h: no arithmetic touches the value, so NaN
 * payloads pass through). */
TKP_HD float tkp_f32_of_bits(uint32_t u)
{
    union { float f; uint32_t u; } c;
    c.u = u;
    return c.f;
}

TKP_HD uint32_t tkp_bits_of_f32(float x)
{
    union { float f; uint32_t u; } c;
    c.f = x;
    return c.u;
}

/* bf16 is the top half of a float32: same sign, exponent and leading 7 mantissa bits. */
TKP_HD float tkp_bf16_to_f32(uint16_t h) { return tkp_f32_of_bits((uint32_t)h << 16); }

/* fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. A subnormal m * 2^-24 (m in 1..1023)
 * becomes a normal float32: shift m's leading bit up to the implicit position (bit 10). */
TKP_HD float tkp_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) /* inf, or NaN with its payload */
        return tkp_f32_of_bits(sign | 0x7F800000u | (mant << 13));
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return tkp_f32_of_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) /* signed zero */
        return tkp_f32_of_bits(sign);
    uint32_t exp32 = 113u; /* 2^-14, the exponent of fp16's subnormals, rebiased */
    while (!(mant & 0x400u)) {
        mant <<= 1;
        exp32--;
    }
    return tkp_f32_of_bits(sign | (exp32 << 23) | ((mant & 0x3FFu) << 13));
}

/* Round to nearest even by adding just under half of the dropped unit (plus one when the kept
 * part is odd) and truncating; a carry moves into the exponent, and past the largest finite
 * value into inf. A NaN keeps its sign and top payload bits and is made quiet (so it stays a
 * NaN even when the kept payload bits are all zero). */
TKP_HD uint16_t tkp_f32_to_bf16(float x)
{
    const uint32_t u = tkp_bits_of_f32(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* fp16 from float32, round to nearest even. Magnitudes from 65520 (halfway between 65504, the
 * largest fp16, and 2^16) round to inf; below 2^-14 the result is subnormal, m * 2^-24 with m
 * the rounded magnitude * 2^24 (1024 is the smallest normal, and carries there by itself). */
TKP_HD uint16_t tkp_f32_to_f16(float x)
{
    const uint32_t u = tkp_bits_of_f32(x);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: quiet, top payload bits kept */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) /* 65520 and up, inf included */
        return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) /* normal fp16: rebias 127 -> 15, drop 13 bits */
        return (uint16_t)(sign | ((a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13));
    const uint32_t exp = a >> 23;
    if (exp < 102u) /* below 2^-25 (half the smallest subnormal): zero */
        return sign;
    const uint32_t full = (a & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exp; /* 14 .. 24: full * 2^(exp - 150) * 2^24 */
    const uint32_t rest = full & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    uint32_t m = full >> shift;
    if (rest > half || (rest == half && (m & 1u)))
        m++;
    return (uint16_t)(sign | m);
}

#endif

/* test_half.c — the 16-bit conversions of algos/common/half.h against references computed
 * another way: every one of the 65536 encodings of bf16 and of fp16 upcasts to the float32 it
 * denotes (bf16: its bits in the top half of a float; fp16: an ldexp decoder, and gcc's
 * _Float16 where the compiler has it), NaN to NaN, inf to inf, -0 to -0, fp16 subnormals
 * exactly; float32 -> 16 bits rounds to nearest even at every halfway point, overflows to inf,
 * inverts the upcast on every non-NaN encoding and agrees with a search-based reference (and
 * _Float16) on millions of random floats. Results on 16-bit rows must equal those on their
 * float32 upcast bit for bit (docs/SEMANTICS.md). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../algos/common/half.h"
#include "test.h"

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Equal bits, or both NaN (the harness treats every NaN alike). */
static int same_float(float a, float b)
{
    return (isnan(a) && isnan(b)) || bits_of(a) == bits_of(b);
}

/* One 16-bit format: its upcast, its rounding, and where its encodings end. */
struct format {
    const char *name;
    float (*up)(uint16_t);
    uint16_t (*down)(float);
    uint16_t max_finite; /* the largest finite positive encoding */
    double overflow;     /* the next power of two past it: where rounding goes to inf */
};

static float bf16_up(uint16_t h) { return tkp_bf16_to_f32(h); }
static float f16_up(uint16_t h) { return tkp_f16_to_f32(h); }
static uint16_t bf16_down(float x) { return tkp_f32_to_bf16(x); }
static uint16_t f16_down(float x) { return tkp_f32_to_f16(x); }

static const struct format bf16 = { "bf16", bf16_up, bf16_down, 0x7F7F, 0x1p128 };
static const struct format f16 = { "f16", f16_up, f16_down, 0x7BFF, 0x1p16 };

static int is_nan_encoding(const struct format *fmt, uint16_t h)
{
    return (uint16_t)(h & 0x7FFF) > (uint16_t)(fmt->max_finite + 1);
}

/* fp16 decoded by its definition, in double: (-1)^s * 2^(e-15) * (1 + m/1024), or
 * 2^-14 * m/1024 when e == 0. */
static float f16_by_ldexp(uint16_t h)
{
    const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0x1F)
        return m ? NAN : (float)(sign * INFINITY);
    const double mag = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (float)copysign(mag, sign);
}

#ifdef __FLT16_MAX__
static float f16_by_float16(uint16_t h)
{
    _Float16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}
#endif

TEST(half_dtype_names_and_sizes)
{
    CHECK(strcmp(tkp_dtype_name(TKP_F32), "f32") == 0, "f32 name");
    CHECK(strcmp(tkp_dtype_name(TKP_BF16), "bf16") == 0, "bf16 name");
    CHECK(strcmp(tkp_dtype_name(TKP_F16), "f16") == 0, "f16 name");
    CHECK(tkp_dtype_name((enum tkp_dtype)TKP_DTYPE_COUNT) == NULL, "a name past the enum");
    CHECK(tkp_dtype_size(TKP_F32) == 4 && tkp_dtype_size(TKP_BF16) == 2 &&
              tkp_dtype_size(TKP_F16) == 2,
          "sizes %d %d %d", tkp_dtype_size(TKP_F32), tkp_dtype_size(TKP_BF16),
          tkp_dtype_size(TKP_F16));
    CHECK(tkp_dtype_size((enum tkp_dtype)TKP_DTYPE_COUNT) == 0, "a size past the enum");
}

TEST(half_bf16_upcast_of_every_encoding)
{
    int bad = 0, nans = 0;
    for (uint32_t h = 0; h <= 0xFFFF && bad < 5; h++) {
        const float got = tkp_bf16_to_f32((uint16_t)h);
        nans += isnan(got) != 0;
        if (bits_of(got) != h << 16) { /* exact, NaN payloads included */
            CHECK(0, "bf16 %04x -> %08x, expected %08x", h, bits_of(got), h << 16);
            bad++;
        }
    }
    CHECK(nans == 2 * 127, "%d NaNs, expected 254", nans);
    CHECK(tkp_bf16_to_f32(0x7F80) == INFINITY && tkp_bf16_to_f32(0xFF80) == -INFINITY, "inf");
    CHECK(bits_of(tkp_bf16_to_f32(0x8000)) == 0x80000000u, "-0");
    CHECK(bits_of(tkp_bf16_to_f32(0x0001)) == 0x00010000u, "the smallest bf16 subnormal");
}

TEST(half_f16_upcast_of_every_encoding)
{
    int bad = 0, nans = 0;
    for (uint32_t h = 0; h <= 0xFFFF && bad < 5; h++) {
        const float got = tkp_f16_to_f32((uint16_t)h), ref = f16_by_ldexp((uint16_t)h);
        nans += isnan(got) != 0;
        int ok = same_float(got, ref) && !isnan(got) == !is_nan_encoding(&f16, (uint16_t)h);
#ifdef __FLT16_MAX__
        ok = ok && same_float(got, f16_by_float16((uint16_t)h));
#endif
        if (!ok) {
            CHECK(0, "f16 %04x -> %a (%08x), expected %a", h, (double)got, bits_of(got),
                  (double)ref);
            bad++;
        }
    }
    CHECK(nans == 2 * 1023, "%d NaNs, expected 2046", nans);
    CHECK(tkp_f16_to_f32(0x7C00) == INFINITY && tkp_f16_to_f32(0xFC00) == -INFINITY, "inf");
    CHECK(bits_of(tkp_f16_to_f32(0x8000)) == 0x80000000u, "-0");
    CHECK(tkp_f16_to_f32(0x0001) == 0x1p-24f && tkp_f16_to_f32(0x8001) == -0x1p-24f,
          "the smallest subnormal");
    CHECK(tkp_f16_to_f32(0x0200) == 0x1p-15f && tkp_f16_to_f32(0x03FF) == 0x3FFp-24f,
          "subnormals 0x0200 0x03ff");
    CHECK(tkp_f16_to_f32(0x0400) == 0x1p-14f && tkp_f16_to_f32(0x7BFF) == 65504.0f,
          "the smallest and largest normals");
}

/* f32 -> 16 -> f32 is the identity on every encoding but NaN (-0 included); NaN stays NaN. */
static void check_round_trip(const struct format *fmt)
{
    int bad = 0;
    for (uint32_t h = 0; h <= 0xFFFF && bad < 5; h++) {
        const uint16_t back = fmt->down(fmt->up((uint16_t)h));
        const int ok = is_nan_encoding(fmt, (uint16_t)h) ? is_nan_encoding(fmt, back)
                                                         : back == h;
        if (!ok) {
            CHECK(0, "%s %04x -> %a -> %04x", fmt->name, h, (double)fmt->up((uint16_t)h),
                  back);
            bad++;
        }
    }
}

TEST(half_round_trip_is_the_identity)
{
    check_round_trip(&bf16);
    check_round_trip(&f16);
    CHECK(is_nan_encoding(&bf16, tkp_f32_to_bf16(float_of(0x7F800001u))) &&
              is_nan_encoding(&f16, tkp_f32_to_f16(float_of(0xFF800001u))),
          "a NaN whose kept payload bits are zero");
}

/* Between two neighbouring positive encodings lo and lo + 1 (as magnitudes; `hi_value` is the
 * value of lo + 1, the overflow bound past the largest finite one): the exact midpoint goes to
 * the even one, one float ulp either side to the nearer one. Both signs. */
static int check_halfway(const struct format *fmt, uint16_t lo, double hi_value)
{
    const double lo_value = fmt->up(lo);
    const float mid = (float)((lo_value + hi_value) / 2); /* exact: one bit past the 16-bit mantissa */
    const uint16_t even = (lo & 1) ? (uint16_t)(lo + 1) : lo;
    const float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
    const uint16_t want[3] = { lo, even, (uint16_t)(lo + 1) };
    const float x[3] = { below, mid, above };
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < 2; s++) {
            const float v = s ? -x[i] : x[i];
            const uint16_t w = (uint16_t)(want[i] | (s ? 0x8000 : 0));
            const uint16_t got = fmt->down(v);
            if (got != w) {
                CHECK(0, "%s: %a -> %04x, expected %04x", fmt->name, (double)v, got, w);
                bad++;
            }
        }
    return bad;
}

static void check_every_halfway(const struct format *fmt)
{
    int bad = 0;
    for (uint16_t lo = 0; lo < fmt->max_finite && bad < 5; lo++)
        bad += check_halfway(fmt, lo, fmt->up((uint16_t)(lo + 1)));
    check_halfway(fmt, fmt->max_finite, fmt->overflow); /* its "next" is inf */
}

TEST(half_rounding_is_nearest_even_at_every_halfway_point)
{
    check_every_halfway(&bf16);
    check_every_halfway(&f16);
    CHECK(tkp_f32_to_f16(65520.0f) == 0x7C00 && tkp_f32_to_f16(65519.996f) == 0x7BFF &&
              tkp_f32_to_f16(65536.0f) == 0x7C00 && tkp_f32_to_f16(-0x1.003p16f) == 0xFC00 &&
              tkp_f32_to_f16(-3.4028235e38f) == 0xFC00 && tkp_f32_to_f16(-INFINITY) == 0xFC00,
          "f16 overflow");
    CHECK(tkp_f32_to_bf16(3.4028235e38f) == 0x7F80 && tkp_f32_to_bf16(INFINITY) == 0x7F80,
          "bf16 overflow");
    CHECK(tkp_f32_to_f16(0x1p-26f) == 0 && tkp_f32_to_f16(-0x1p-30f) == 0x8000 &&
              tkp_f32_to_f16(float_of(1)) == 0 && tkp_f32_to_bf16(-0.0f) == 0x8000,
          "underflow to a signed zero");
}

/* The rounding by its definition: find by bisection the largest encoding lo whose value is
 * <= |x| (the upcast is checked above), then pick the nearer of lo and lo + 1 in double
 * (exact differences), the even one on a tie, inf past the overflow bound. */
static uint16_t down_by_search(const struct format *fmt, float x)
{
    if (isnan(x))
        return 0x7FFF; /* some NaN encoding; only NaN-ness is compared */
    const double a = fabs((double)x);
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    uint16_t lo = 0, hi = fmt->max_finite; /* value(lo) <= a holds throughout */
    while (lo < hi) {
        const uint16_t m = (uint16_t)(lo + (hi - lo + 1) / 2);
        if (fmt->up(m) <= a)
            lo = m;
        else
            hi = (uint16_t)(m - 1);
    }
    const double next = lo == fmt->max_finite ? fmt->overflow : fmt->up((uint16_t)(lo + 1));
    const double below = a - fmt->up(lo), above = next - a;
    const int up = above < below || (above == below && (lo & 1));
    return (uint16_t)(sign | (up ? lo + 1 : lo)); /* max_finite + 1 is inf */
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Half of the draws are any 32 bits (NaN, inf, huge, tiny); half have an exponent near the
 * format's range, fp16's subnormals and overflow included. */
static float random_float(uint64_t *s, int exp_lo, int exp_hi)
{
    const uint64_t r = xorshift(s);
    uint32_t u = (uint32_t)r;
    if (r >> 63)
        u = (u & 0x807FFFFFu) |
            (uint32_t)(exp_lo + (int)((r >> 32) % (uint64_t)(exp_hi - exp_lo + 1))) << 23;
    return float_of(u);
}

static void check_random(const struct format *fmt, uint64_t seed, int exp_lo, int exp_hi)
{
    uint64_t s = seed;
    int bad = 0;
    for (int i = 0; i < 2000000 && bad < 5; i++) {
        const float x = random_float(&s, exp_lo, exp_hi);
        const uint16_t got = fmt->down(x), ref = down_by_search(fmt, x);
        int ok = isnan(x) ? is_nan_encoding(fmt, got) : got == ref;
#ifdef __FLT16_MAX__
        if (fmt == &f16) {
            const _Float16 h = (_Float16)x;
            uint16_t hb;
            memcpy(&hb, &h, sizeof hb);
            ok = ok && (isnan(x) ? is_nan_encoding(fmt, hb) : got == hb);
        }
#endif
        if (!ok) {
            CHECK(0, "seed %llu, draw %d: %s(%a = %08x) = %04x, expected %04x",
                  (unsigned long long)seed, i, fmt->name, (double)x, bits_of(x), got, ref);
            bad++;
        }
    }
}

TEST(half_rounding_agrees_with_references_on_random_floats)
{
    check_random(&bf16, 20261202, 0, 254);
    check_random(&f16, 20261203, 100, 145); /* 2^-27 .. 2^18 */
}

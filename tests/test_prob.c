/* test_prob.c — the shared host-and-device arithmetic of algos/common/prob.h against its
 * definitions: the order key orders the floats (-0.0 == +0.0, NaN and -inf below every valid
 * value, +inf above) and inverts through tkp_key_value; the integer fixed-point weight equals
 * floor(tkp_expf(x - m) * 2^40) computed in double. Every module (CPU and GPU) decides on these,
 * so a slip here would move every kept set. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "test.h"

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The definition: 0 for NaN and -inf; otherwise the rank order of the value. */
static int key_agrees(float a, float b)
{
    const uint32_t ka = tkp_order_key(a), kb = tkp_order_key(b);
    const int va = tkp_is_valid(a), vb = tkp_is_valid(b);
    if (!va || !vb)
        return (!va ? ka == 0 : ka > 0) && (!vb ? kb == 0 : kb > 0);
    return (a < b) == (ka < kb) && (a == b) == (ka == kb);
}

TEST(order_key_orders_every_float_class)
{
    static const float special[] = { 0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN,
                                     3.4028235e38f, -3.4028235e38f, 1.4e-45f, -1.4e-45f,
                                     1.17549435e-38f, -1.17549435e-38f };
    const int n = (int)(sizeof special / sizeof *special);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            CHECK(key_agrees(special[i], special[j]), "keys of %a and %a: %08x %08x",
                  (double)special[i], (double)special[j], tkp_order_key(special[i]),
                  tkp_order_key(special[j]));
    /* every bit pattern within 2 of a class boundary (zero, subnormal, normal, max, inf, NaN
     * payloads), against every other */
    static const uint32_t edge[] = { 0x00000000u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                                     0x7F800000u, 0x7F800001u, 0x7FFFFFFFu, 0x80000000u,
                                     0x807FFFFFu, 0x80800000u, 0xFF7FFFFFu, 0xFF800000u,
                                     0xFF800001u, 0xFFFFFFFFu };
    const int ne = (int)(sizeof edge / sizeof *edge);
    for (int i = 0; i < 5 * ne; i++)
        for (int j = 0; j < 5 * ne; j++) {
            const uint32_t a = edge[i / 5] + (uint32_t)(i % 5) - 2u;
            const uint32_t b = edge[j / 5] + (uint32_t)(j % 5) - 2u;
            CHECK(key_agrees(float_of(a), float_of(b)), "keys of %08x and %08x: %08x %08x", a,
                  b, tkp_order_key(float_of(a)), tkp_order_key(float_of(b)));
        }
    CHECK(tkp_order_key(-0.0f) == tkp_order_key(0.0f), "-0.0 and +0.0 differ");
    CHECK(tkp_order_key(-3.4028235e38f) == 0x00800000u, "key(-FLT_MAX) %08x",
          tkp_order_key(-3.4028235e38f));
    CHECK(tkp_order_key(INFINITY) == 0xFF800000u, "key(+inf) %08x", tkp_order_key(INFINITY));
}

TEST(order_key_is_monotone_and_inverts_on_a_stride_of_all_bit_patterns)
{
    /* 2^32 / 251 patterns, every class (both signs, subnormals, NaN payloads) included */
    uint32_t prev_u = 0;
    int first = 1, bad = 0;
    for (uint64_t u64 = 0; u64 < ((uint64_t)1 << 32) && bad < 5; u64 += 251) {
        const uint32_t u = (uint32_t)u64;
        const float x = float_of(u);
        const uint32_t k = tkp_order_key(x);
        if (!tkp_is_valid(x)) {
            if (k != 0) {
                CHECK(0, "invalid %08x has key %08x", u, k);
                bad++;
            }
            continue;
        }
        const float back = tkp_key_value(k);
        if (k == 0 || memcmp(&back, &(float){ x + 0.0f }, sizeof back) != 0) {
            CHECK(0, "%08x: key %08x gives back %a", u, k, (double)back);
            bad++;
        }
        if (!first && !key_agrees(float_of(prev_u), x)) {
            CHECK(0, "%08x and %08x are ordered differently by their keys", prev_u, u);
            bad++;
        }
        prev_u = u;
        first = 0;
    }
}

/* The definition of the weight, in double. */
static uint64_t weight_by_double(float x, float m)
{
    if (!tkp_is_valid(x))
        return 0;
    if (m == INFINITY)
        return x == INFINITY ? TKP_FIX_ONE : 0;
    return (uint64_t)((double)tkp_expf(x - m) * (double)TKP_FIX_ONE);
}

TEST(fixed_point_weight_equals_its_double_definition)
{
    const uint64_t seed = 20261130;
    uint64_t s = seed;
    int bad = 0;
    for (int i = 0; i < 2000000 && bad < 5; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const float m = (float)((int)(s % 4001) - 2000) / 37.0f;
        const float x = m - (float)(s >> 40) / (float)(1 << 24) * 120.0f; /* 0 .. 120 below */
        const uint64_t w = tkp_weight(x, m), d = weight_by_double(x, m);
        if (w != d) {
            CHECK(0, "seed %llu, draw %d: weight(%a, %a) = %llu, double gives %llu",
                  (unsigned long long)seed, i, (double)x, (double)m, (unsigned long long)w,
                  (unsigned long long)d);
            bad++;
        }
    }
    CHECK(tkp_weight(2.5f, 2.5f) == TKP_FIX_ONE, "weight of the max is not one");
    CHECK(tkp_weight(-INFINITY, 0.0f) == 0 && tkp_weight(NAN, 0.0f) == 0,
          "invalid tokens weigh something");
    CHECK(tkp_weight(INFINITY, INFINITY) == TKP_FIX_ONE && tkp_weight(1e30f, INFINITY) == 0,
          "a row holding +inf");
    CHECK(tkp_weight(-100.0f, 0.0f) == 0, "exp(-100) is below the fixed-point unit");
}

/* TKP_EXPF_REACH's claim over every float d in [-87, 0], ascending: each float's running
 * maximum of tkp_expf is reached again by d itself or one of the TKP_EXPF_REACH floats above
 * it. The min-p certificate (tkp_minp_none_at_or_below) rests on it. */
TEST(expf_running_maximum_is_reached_within_reach_floats)
{
    const uint32_t lowest = 0xC2AE0000u; /* -87.0f; the bits fall as the value rises */
    float best = -1.0f;
    int64_t pending = -1, reach = 0, worst = -1, inversions = 0;
    for (uint32_t u = lowest;; u--) {
        const float e = tkp_expf(float_of(u));
        const int64_t i = (int64_t)(lowest - u);
        if (e >= best) {
            if (pending >= 0 && i - pending > reach)
                reach = i - pending, worst = pending;
            pending = -1;
            best = e;
        } else {
            pending = pending < 0 ? i : pending;
            inversions++;
        }
        if (u == 0x80000000u)
            break;
    }
    CHECK(pending < 0, "the running maximum is never reached again above %a",
          (double)float_of(lowest - (uint32_t)pending));
    CHECK(reach <= TKP_EXPF_REACH, "tkp_expf(%a)'s running maximum lies %lld floats up (> %d)",
          (double)float_of(lowest - (uint32_t)worst), (long long)reach, TKP_EXPF_REACH);
    CHECK(inversions > 0, "no inversion at all: the scan read nothing");
}

/* The certificate against its definition: whenever it says no token at or below y passes,
 * y and the 64 floats below it, and random values below, weigh less than t. Random rows
 * around the threshold m + ln(min_p), the inversion pair of cases_sampling.c among them. */
TEST(minp_certificate_never_excludes_a_passing_token)
{
    const uint64_t seed = 20261205;
    uint64_t s = seed;
    int bad = 0, certified = 0;
    for (int i = 0; i < 200000 && bad < 5; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float m = (float)((int)(s % 2001) - 1000) / 16.0f;
        float min_p = (float)((s >> 20) % 1000 + 1) / 1001.0f;
        const float edge = m + logf(min_p);
        float y = edge + (float)((int)((s >> 40) % 200) - 100) * 1e-6f * (1.0f + fabsf(edge));
        if (i % 7 == 0) { /* y = x1 of cases_sampling.c's inversion pair, min_p at its ratio */
            m = 0.0f, y = -0x1.fd029cp-7f;
            min_p = tkp_weight_float(y, 0.0f) * (1.0f - (float)(i % 3) * 1e-7f);
        }
        const uint64_t t = tkp_minp_threshold(min_p);
        if (!tkp_minp_none_at_or_below(y, m, t))
            continue;
        certified++;
        float x = y;
        for (int j = 0; j < 64 && !bad; j++, x = nextafterf(x, -INFINITY))
            if (tkp_weight(x, m) >= t) {
                CHECK(0, "seed %llu, draw %d: certified y %a (m %a, min_p %a) but %a passes",
                      (unsigned long long)seed, i, (double)y, (double)m, (double)min_p, (double)x);
                bad++;
            }
    }
    CHECK(certified > 1000, "only %d rows certified: the test reads nothing", certified);
    CHECK(tkp_minp_none_at_or_below(-INFINITY, 3.0f, 1) && !tkp_minp_none_at_or_below(3.0f, 3.0f, 1),
          "-inf is certified, the largest never");
    CHECK(tkp_minp_none_at_or_below(1e30f, INFINITY, 1) &&
              !tkp_minp_none_at_or_below(INFINITY, INFINITY, TKP_FIX_ONE),
          "a +inf row: only +inf tokens pass");
}

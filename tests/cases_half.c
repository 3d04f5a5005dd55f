/* cases_half.c — the adversarial suite in a 16-bit element type (cases.h, cases_build_dtype):
 * every float32 case rounded to the type, and a family built from the type's bit patterns
 * (docs/SEMANTICS.md, "16-bit logits"): few distinct values (ties everywhere), every NaN
 * class (quiet and signalling, both signs, payloads), +-inf, -0 and +0, subnormals, the
 * largest finite values, rows whose distinct float32 values round to ties, and odd V so that
 * rows start unaligned. Each case's `logits` is the exact upcast of its encodings. */
#include <stdlib.h>
#include <string.h>

#include "../algos/common/half.h"
#include "logits_file.h"
#include "cases.h"

/* The fields of a 16-bit format, by its bits. */
struct half_format {
    uint16_t exp, mant, quiet, max_finite; /* exponent mask, mantissa mask, quiet bit */
};

static struct half_format format_of(enum tkp_dtype t)
{
    if (t == TKP_BF16)
        return (struct half_format){ 0x7F80u, 0x007Fu, 0x0040u, 0x7F7Fu };
    return (struct half_format){ 0x7C00u, 0x03FFu, 0x0200u, 0x7BFFu };
}

static uint16_t encode(enum tkp_dtype t, float x)
{
    return t == TKP_BF16 ? tkp_f32_to_bf16(x) : tkp_f32_to_f16(x);
}

void case_to_dtype(struct test_case *c, enum tkp_dtype t)
{
    struct tkp_error err = { "" };
    if (tkp_batch_to_dtype(&c->b, t, &err))
        test_fail(__FILE__, __LINE__, "case %s: %s", c->name, err.msg);
}

/* The 16-bit families, each a rule for the encoding of token i of row r. */
enum pattern16 {
    H_FEW_VALUES, H_NAN_CLASSES, H_INF_ZERO, H_SUBNORMAL, H_LARGEST, H_ROUND_TIES, H_EVERYTHING
};

/* A NaN of class `which` (0..5): quiet or signalling, either sign, a payload from s. */
static uint16_t nan_of(const struct half_format *f, int which, uint64_t *s)
{
    const uint16_t sign = (which & 1) ? 0x8000u : 0;
    const uint16_t payload = (uint16_t)(case_next_u64(s) & f->mant);
    uint16_t mant;
    if (which < 2) /* quiet, no payload */
        mant = f->quiet;
    else if (which < 4) /* quiet with a payload */
        mant = (uint16_t)(f->quiet | payload);
    else /* signalling: quiet bit clear, payload nonzero */
        mant = (uint16_t)((payload & (uint16_t)~f->quiet) ? payload & (uint16_t)~f->quiet : 1u);
    return (uint16_t)(sign | f->exp | mant);
}

/* A finite value of the type: an N(0, 2) draw rounded to it. */
static uint16_t finite(enum tkp_dtype t, uint64_t *s) { return encode(t, 2.0f * case_gauss(s)); }

static uint16_t subnormal(const struct half_format *f, uint64_t *s)
{
    const uint64_t u = case_next_u64(s);
    const uint16_t mant = (uint16_t)(1u + (u >> 1) % f->mant); /* 1 .. mant: never zero */
    return (uint16_t)((u & 1u) ? 0x8000u | mant : mant);
}

static uint16_t pattern_value(enum tkp_dtype t, enum pattern16 pat, int64_t r, int64_t i,
                              uint64_t *s)
{
    const struct half_format f = format_of(t);
    const uint64_t u = case_next_u64(s);
    switch (pat) {
    case H_FEW_VALUES: { /* three values a row: ties at every boundary */
        static const float few[3] = { 1.0f, 0.5f, -2.0f };
        return encode(t, few[u % 3] + (float)(r % 4));
    }
    case H_NAN_CLASSES: /* four tokens in ten a NaN of some class, the rest finite */
        return u % 10 < 4 ? nan_of(&f, (int)(u >> 8) % 6, s) : finite(t, s);
    case H_INF_ZERO: { /* +0, -0, +-inf and small finite values; even rows hold no +inf */
        const int which = (int)(u % 8);
        if (which < 2)
            return which ? 0x8000u : 0x0000u;
        if (which == 2 && r % 2)
            return f.exp; /* +inf */
        if (which == 3)
            return (uint16_t)(0x8000u | f.exp); /* -inf */
        return encode(t, 0.25f * case_gauss(s));
    }
    case H_SUBNORMAL: /* subnormals of both signs and the zeros */
        return u % 16 == 0 ? (uint16_t)((u >> 4) & 0x8000u) : subnormal(&f, s);
    case H_LARGEST: { /* the largest finite values, both signs, and their neighbours */
        const uint16_t mag = (uint16_t)(f.max_finite - (u >> 2) % 3);
        return (u & 1u) && r % 3 ? (uint16_t)(0x8000u | mag) : mag;
    }
    case H_ROUND_TIES: /* distinct float32 values 1 + j 2^-12 that round to a few ties */
        return encode(t, 1.0f + (float)(u % 64) * 0x1.0p-12f - (float)(i % 2) * 0x1.0p-3f);
    case H_EVERYTHING:
        return pattern_value(t, (enum pattern16)((i + r) % H_EVERYTHING), r, i, s);
    }
    return 0;
}

static void fill16(struct test_case *c, enum tkp_dtype t, enum pattern16 pat)
{
    uint64_t s = c->seed;
    memset(c->b.logits, 0, sizeof(float) * (size_t)(c->b.batch * c->b.vocab));
    case_to_dtype(c, t); /* the encodings' buffer, filled here */
    for (int64_t r = 0; r < c->b.batch; r++)
        for (int64_t i = 0; i < c->b.vocab; i++)
            c->b.logits16[r * c->b.vocab + i] = pattern_value(t, pat, r, i, &s);
    tkp_batch_upcast(&c->b);
}

int cases_build_dtype(enum tkp_dtype t, struct test_case **out)
{
    static const struct {
        const char *name;
        enum pattern16 pat;
        int64_t batch, vocab;
    } spec[] = {
        { "h16_few_values", H_FEW_VALUES, 17, 999 },  { "h16_few_values_v1", H_FEW_VALUES, 17, 1 },
        { "h16_nan_classes", H_NAN_CLASSES, 34, 257 }, { "h16_nan_v7", H_NAN_CLASSES, 17, 7 },
        { "h16_inf_zero", H_INF_ZERO, 17, 333 },       { "h16_subnormal", H_SUBNORMAL, 17, 1025 },
        { "h16_largest", H_LARGEST, 17, 61 },          { "h16_round_ties", H_ROUND_TIES, 34, 777 },
        { "h16_everything_v7", H_EVERYTHING, 17, 7 },  { "h16_everything", H_EVERYTHING, 17, 4099 },
    };
    struct test_case *f32;
    const int base = cases_build(&f32);
    if (t == TKP_F32) {
        *out = f32;
        return base;
    }
    const int extra = (int)(sizeof spec / sizeof spec[0]);
    struct test_case *c = realloc(f32, sizeof *c * (size_t)(base + extra));
    for (int i = 0; i < base; i++)
        case_to_dtype(&c[i], t);
    for (int i = 0; i < extra; i++) {
        struct test_case *x = &c[base + i];
        memset(x, 0, sizeof *x);
        case_alloc(x, spec[i].name, 5000 + (uint64_t)i, spec[i].batch, spec[i].vocab);
        fill16(x, t, spec[i].pat);
    }
    *out = c;
    return base + extra;
}

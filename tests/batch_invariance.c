/* batch_invariance.c — see batch_invariance.h. A seeded batch of rows of every kind (k, p and
 * min-p on and off, ties, seeds 0 and 2^64 - 1, offsets at both ends), then batches built from
 * its rows: permuted, with the other rows replaced, removed or joined by new ones, and each of
 * a few rows alone. Every row must give in each the kept set and the draws it gives in the
 * first batch. */
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "batch_invariance.h"
#include "cases.h"
#include "test.h"

enum { BI_ROWS = 1024, BI_VOCAB = 256, BI_DRAWS = 8, BI_ALONE = 8 };

/* One run's outputs (NULL where the module has no such output). */
struct bi_out {
    uint8_t *kept;
    int64_t *samples;
};

static void bi_alloc(struct tkp_batch *b, int64_t rows)
{
    memset(b, 0, sizeof *b);
    b->batch = rows;
    b->vocab = BI_VOCAB;
    b->logits = malloc(sizeof(float) * (size_t)(rows * BI_VOCAB));
    b->k = malloc(sizeof(int32_t) * (size_t)rows);
    b->p = malloc(sizeof(float) * (size_t)rows);
    b->min_p = malloc(sizeof(float) * (size_t)rows);
    b->seed = malloc(sizeof(uint64_t) * (size_t)rows);
    b->offset = malloc(sizeof(uint64_t) * (size_t)rows);
}

static void bi_free(struct tkp_batch *b)
{
    free(b->logits), free(b->k), free(b->p), free(b->min_p), free(b->seed), free(b->offset);
}

/* Row i of dst := row j of src, every per-row input with it. */
static void bi_copy_row(struct tkp_batch *dst, int64_t i, const struct tkp_batch *src, int64_t j)
{
    memcpy(dst->logits + i * BI_VOCAB, src->logits + j * BI_VOCAB, sizeof(float) * BI_VOCAB);
    dst->k[i] = src->k[j];
    dst->p[i] = src->p[j];
    dst->min_p[i] = src->min_p[j];
    dst->seed[i] = src->seed[j];
    dst->offset[i] = src->offset[j];
}

/* A random row of what module `a` does: Gaussian of a random scale (every third one rounded to
 * quarters, for ties), a k, p and min_p off or on, a seed and an offset. */
static void bi_random_row(const struct tkp_algo *a, struct tkp_batch *b, int64_t r, uint64_t *s)
{
    static const int32_t ks[] = { 0, 1, 5, 50, BI_VOCAB - 1, BI_VOCAB };
    static const float ps[] = { 1.0f, 0.9f, 0.5f, 0.0f }, mps[] = { 0.0f, 0.05f, 0.5f, 1.0f };
    const float scale = 0.1f + (float)(case_next_u64(s) % 50) * 0.1f;
    const int ties = case_next_u64(s) % 3 == 0;
    for (int64_t i = 0; i < BI_VOCAB; i++) {
        float x = scale * case_gauss(s);
        b->logits[r * BI_VOCAB + i] = ties ? (float)(int)(x * 4.0f) * 0.25f : x;
    }
    b->k[r] = ks[case_next_u64(s) % 6];
    b->p[r] = (a->ops & (TKP_TOPP | TKP_TOPK_TOPP)) ? ps[case_next_u64(s) % 4] : 1.0f;
    b->min_p[r] = (a->ops & TKP_MINP) ? mps[case_next_u64(s) % 4] : 0.0f;
    const uint64_t u = case_next_u64(s);
    b->seed[r] = u % 5 == 0 ? 0 : u % 5 == 1 ? UINT64_MAX : case_next_u64(s);
    b->offset[r] = u % 7 == 0 ? UINT64_MAX : u % 7 == 1 ? 0 : case_next_u64(s);
}

static void bi_run(const struct tkp_algo *a, enum tkp_backend backend, const struct tkp_batch *b,
                   struct bi_out *o, const char *what, uint64_t seed)
{
    o->kept = (a->outputs & TKP_OUT_SET) ? calloc((size_t)(b->batch * BI_VOCAB), 1) : NULL;
    o->samples = (a->outputs & TKP_OUT_SAMPLE)
                     ? calloc((size_t)(b->batch * BI_DRAWS), sizeof(int64_t))
                     : NULL;
    struct tkp_error err = { "" };
    /* the batch's own seed and offset differ in every run: per-row keying must not read them
       where the arrays stand for them */
    int rc = tkp_apply(a, NULL, backend, b, o->kept, o->samples, BI_DRAWS, seed ^ b->batch,
                       (uint64_t)b->batch, NULL, &err);
    CHECK(rc == TKP_OK, "%s %s (seed %llu): %s", a->name, what, (unsigned long long)seed, err.msg);
}

static void bi_out_free(struct bi_out *o) { free(o->kept), free(o->samples); }

/* Row i of run x against row j of the first run y; at most a few failures a check. */
static void bi_same_row(const struct tkp_algo *a, const char *what, uint64_t seed,
                        const struct bi_out *x, int64_t i, const struct bi_out *y, int64_t j,
                        int *reported)
{
    const int kept_differs =
        x->kept && memcmp(x->kept + i * BI_VOCAB, y->kept + j * BI_VOCAB, BI_VOCAB) != 0;
    const int draws_differ = x->samples && memcmp(x->samples + i * BI_DRAWS,
                                                  y->samples + j * BI_DRAWS,
                                                  sizeof(int64_t) * BI_DRAWS) != 0;
    if ((kept_differs || draws_differ) && (*reported)++ < 4)
        test_fail(__FILE__, __LINE__, "%s %s (seed %llu): row %lld there, row %lld of the "
                  "first batch: %s", a->name, what, (unsigned long long)seed, (long long)i,
                  (long long)j, kept_differs ? "the kept sets differ" : "the draws differ");
}

/* Run batch b on the backend and compare each of its rows i with row from[i] of `first`. */
static void bi_expect(const struct tkp_algo *a, enum tkp_backend backend, const struct tkp_batch *b,
                      const int64_t *from, const struct bi_out *first, const char *what,
                      uint64_t seed)
{
    struct bi_out o;
    bi_run(a, backend, b, &o, what, seed);
    int reported = 0;
    for (int64_t i = 0; !test_failed() && i < b->batch; i++)
        if (from[i] >= 0)
            bi_same_row(a, what, seed, &o, i, first, from[i], &reported);
    bi_out_free(&o);
}

/* The batches built from `base`: permuted, the other rows replaced, removed, added to. */
static void bi_variants(const struct tkp_algo *a, enum tkp_backend backend,
                        const struct tkp_batch *base, const struct bi_out *first, uint64_t seed)
{
    uint64_t s = seed * 31 + 7;
    int64_t *from = malloc(sizeof(int64_t) * 2 * BI_ROWS);
    struct tkp_batch b;
    bi_alloc(&b, 2 * BI_ROWS);
    b.batch = BI_ROWS; /* permuted: a Fisher-Yates shuffle of the rows */
    for (int64_t i = 0; i < BI_ROWS; i++)
        from[i] = i;
    for (int64_t i = BI_ROWS - 1; i > 0; i--) {
        int64_t j = (int64_t)(case_next_u64(&s) % (uint64_t)(i + 1)), t = from[i];
        from[i] = from[j], from[j] = t;
    }
    for (int64_t i = 0; i < BI_ROWS; i++)
        bi_copy_row(&b, i, base, from[i]);
    bi_expect(a, backend, &b, from, first, "permuted rows", seed);
    for (int64_t i = 0; i < BI_ROWS; i++) { /* rows 3 mod 7 kept, the others new */
        from[i] = i % 7 == 3 ? i : -1;
        if (from[i] >= 0)
            bi_copy_row(&b, i, base, i);
        else
            bi_random_row(a, &b, i, &s);
    }
    bi_expect(a, backend, &b, from, first, "other rows changed", seed);
    b.batch = 0; /* removed: the rows 3 mod 7 alone */
    for (int64_t i = 3; i < BI_ROWS; i += 7, b.batch++)
        bi_copy_row(&b, b.batch, base, from[b.batch] = i);
    bi_expect(a, backend, &b, from, first, "other rows removed", seed);
    b.batch = 2 * BI_ROWS; /* added: each row of base after a new one */
    for (int64_t i = 0; i < BI_ROWS; i++) {
        bi_random_row(a, &b, 2 * i, &s);
        from[2 * i] = -1;
        bi_copy_row(&b, 2 * i + 1, base, from[2 * i + 1] = i);
    }
    bi_expect(a, backend, &b, from, first, "rows added", seed);
    for (int n = 0; n < BI_ALONE && !test_failed(); n++) { /* B = 1 */
        b.batch = 1;
        bi_copy_row(&b, 0, base, from[0] = (int64_t)(case_next_u64(&s) % BI_ROWS));
        bi_expect(a, backend, &b, from, first, "a row alone (B = 1)", seed);
    }
    bi_free(&b);
    free(from);
}

void check_batch_invariance(const char *algo, enum tkp_backend backend, uint64_t seed)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a, "no module %s", algo);
    struct tkp_batch base;
    bi_alloc(&base, BI_ROWS);
    uint64_t s = seed;
    for (int64_t r = 0; r < BI_ROWS; r++)
        bi_random_row(a, &base, r, &s);
    base.seed[0] = 0, base.seed[1] = UINT64_MAX;
    struct bi_out first;
    bi_run(a, backend, &base, &first, "first batch", seed);
    if (!test_failed())
        bi_variants(a, backend, &base, &first, seed);
    bi_out_free(&first);
    bi_free(&base);
}

void check_batch_keying_depends_on_row(const char *algo, enum tkp_backend backend, uint64_t seed)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a && (a->outputs & TKP_OUT_SAMPLE), "%s is no sampler", algo);
    struct tkp_batch base, swapped;
    bi_alloc(&base, BI_ROWS);
    bi_alloc(&swapped, BI_ROWS);
    uint64_t s = seed;
    for (int64_t r = 0; r < BI_ROWS; r++)
        bi_random_row(a, &base, r, &s);
    for (int64_t r = 0; r < BI_ROWS; r++) /* neighbours swapped */
        bi_copy_row(&swapped, r, &base, r ^ 1);
    free(base.seed), free(base.offset), free(swapped.seed), free(swapped.offset);
    base.seed = base.offset = swapped.seed = swapped.offset = NULL;
    struct bi_out x, y;
    bi_run(a, backend, &base, &x, "batch keying", seed);
    bi_run(a, backend, &swapped, &y, "batch keying, rows swapped", seed);
    int64_t moved = 0;
    for (int64_t r = 0; r < BI_ROWS && !test_failed(); r++)
        moved += memcmp(x.samples + r * BI_DRAWS, y.samples + (r ^ 1) * BI_DRAWS,
                        sizeof(int64_t) * BI_DRAWS) != 0;
    CHECK(moved > BI_ROWS / 10, "%s (seed %llu): with batch keying only %lld of %d rows drew "
          "otherwise when moved; the draws should depend on the row index", algo,
          (unsigned long long)seed, (long long)moved, BI_ROWS);
    bi_out_free(&x), bi_out_free(&y);
    bi_free(&base), bi_free(&swapped);
}

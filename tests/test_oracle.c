/* test_oracle.c — the oracle (harness/verify/oracle.c) against the plain full sort it
 * replaced, kept here only: qsort every valid (value, index) pair, expl every valid token.
 * On thousands of randomized and adversarial rows (ties, near-ties, equal rows, NaN, -inf,
 * +inf, -0.0, denormals; every edge of k and p) the fields the checks read must be the same
 * to the bit: vocab, valid, set_size, n_min, n_max, and order and weight over the prefix the
 * oracle keeps (the top-k set, whose masses make the top-p total). A failure names its seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/verify/oracle.h"
#include "test.h"

#define BAND 1e-6L

struct ref_pair {
    float v;
    int32_t i;
};

static int ref_cmp(const void *a, const void *b)
{
    const struct ref_pair *x = a, *y = b;
    if (x->v > y->v)
        return -1;
    if (x->v < y->v)
        return 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The reference: the oracle's algorithm before its selection (docs/SEMANTICS.md). */
static void ref_row(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p)
{
    memset(o, 0, sizeof *o);
    o->vocab = vocab;
    struct ref_pair *pairs = malloc(sizeof *pairs * (size_t)(vocab + 1));
    o->order = malloc(sizeof *o->order * (size_t)(vocab + 1));
    o->weight = malloc(sizeof *o->weight * (size_t)(vocab + 1));
    for (int64_t i = 0; i < vocab; i++)
        if (!isnan(x[i]) && !(isinf(x[i]) && x[i] < 0))
            pairs[o->valid++] = (struct ref_pair){ x[i], (int32_t)i };
    qsort(pairs, (size_t)o->valid, sizeof *pairs, ref_cmp);
    int64_t infs = 0;
    for (int64_t j = 0; j < o->valid; j++)
        infs += isinf(pairs[j].v);
    for (int64_t j = 0; j < o->valid; j++) {
        o->order[j] = pairs[j].i;
        o->weight[j] = infs ? (isinf(pairs[j].v) ? 1.0L : 0.0L)
                            : expl((long double)pairs[j].v - (long double)pairs[0].v);
    }
    free(pairs);
    o->set_size = (k > 0 && k < vocab && k < o->valid) ? k : o->valid;
    int64_t s = o->set_size;
    if (!(p < 1.0f) || s == 0) {
        o->n_min = o->n_max = s;
        return;
    }
    if (!(p > 0.0f)) {
        o->n_min = o->n_max = 1;
        return;
    }
    long double total = 0, before = 0;
    for (int64_t j = 0; j < s; j++)
        total += o->weight[j];
    o->n_min = -1;
    for (int64_t n = 1; n <= s; n++) {
        long double m_prev = before / total, m_n = (before + o->weight[n - 1]) / total;
        if (m_prev < (long double)p + BAND && m_n >= (long double)p - BAND) {
            if (o->n_min < 0)
                o->n_min = n;
            o->n_max = n;
        }
        before += o->weight[n - 1];
    }
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return ((double)(next(s) >> 11) + 0.5) * 0x1p-53;
}

/* One row of a randomly chosen style, with specials sprinkled in at a random rate. */
static void fill_row(float *x, int64_t vocab, uint64_t *s)
{
    int style = (int)(next(s) % 6);
    float base = (float)(uniform(s) * 20 - 10), scale = (float)(uniform(s) * 4);
    double special = (next(s) % 3 == 0) ? uniform(s) * 0.5 : 0.0;
    for (int64_t i = 0; i < vocab; i++) {
        double g = sqrt(-2 * log(uniform(s))) * cos(2 * M_PI * uniform(s));
        switch (style) {
        case 0: x[i] = (float)(base + scale * g); break;                   /* Gaussian */
        case 1: x[i] = (float)(next(s) % 4); break;                        /* ties */
        case 2: x[i] = base; break;                                        /* all equal */
        case 3: x[i] = nextafterf(nextafterf(base, -INFINITY), (float)(next(s) % 3) * base);
                break;                                                     /* near-ties */
        case 4: x[i] = (float)(g * 0x1p-140); break;                       /* denormals, +-0 */
        default: x[i] = (float)(base + 40 * g); break;                     /* wide */
        }
        if (uniform(s) < special) {
            static const float specials[] = { NAN, -INFINITY, INFINITY, -0.0f, 0.0f };
            x[i] = specials[next(s) % 5];
        }
    }
}

static int32_t pick_k(int64_t vocab, uint64_t *s)
{
    int64_t any = 1 + (int64_t)(next(s) % (uint64_t)vocab);
    int64_t ks[] = { 0, 1, 2, 50, vocab - 1, vocab, vocab + 1, any };
    return (int32_t)ks[next(s) % 8];
}

static float pick_p(uint64_t *s)
{
    static const float ps[] = { 0.0f, 1e-7f, 0.5f, 0.9f, 0.999999f, 1.0f, -0.5f, 1.5f };
    return next(s) % 9 == 8 ? (float)uniform(s) : ps[next(s) % 8];
}

/* 1 when o matches the reference on every field a check reads; else the first difference. */
static int same_row(const struct oracle_row *o, const struct oracle_row *r, float p, char *why,
                    size_t n)
{
    if (o->vocab != r->vocab || o->valid != r->valid || o->set_size != r->set_size ||
        o->n_min != r->n_min || o->n_max != r->n_max) {
        snprintf(why, n, "valid %lld/%lld set %lld/%lld band %lld..%lld / %lld..%lld",
                 (long long)o->valid, (long long)r->valid, (long long)o->set_size,
                 (long long)r->set_size, (long long)o->n_min, (long long)o->n_max,
                 (long long)r->n_min, (long long)r->n_max);
        return 0;
    }
    int64_t len = (p < 1.0f && p > 0.0f) ? r->set_size : r->n_max;
    for (int64_t j = 0; j < len; j++)
        if (o->order[j] != r->order[j] || o->weight[j] != r->weight[j]) {
            snprintf(why, n, "position %lld: token %d/%d weight %Lg/%Lg", (long long)j,
                     o->order[j], r->order[j], o->weight[j], r->weight[j]);
            return 0;
        }
    return 1;
}

TEST(oracle_selection_matches_the_full_sort_on_random_and_adversarial_rows)
{
    enum { CASES = 2500 };
    float *x = malloc(sizeof *x * 70001);
    int failed = 0;
    for (uint64_t c = 0; c < CASES && failed < 5; c++) {
        uint64_t seed = 0x0dac1e0000ull + c, s = seed;
        int64_t vocab = (int64_t)exp(uniform(&s) * log(70000.0)); /* 1 .. 70000, log-uniform */
        if (c % 500 == 0)
            vocab = 70000;
        int32_t k = pick_k(vocab, &s);
        float p = pick_p(&s);
        fill_row(x, vocab, &s);
        struct oracle_row o, r;
        REQUIRE(oracle_row_init(&o, x, vocab, k, p) == 0, "seed %llu: out of memory",
                (unsigned long long)seed);
        ref_row(&r, x, vocab, k, p);
        char why[256];
        int ok = same_row(&o, &r, p, why, sizeof why);
        CHECK(ok, "seed %llu (V=%lld k=%d p=%g): %s", (unsigned long long)seed,
              (long long)vocab, k, p, why);
        failed += !ok;
        oracle_row_free(&o);
        oracle_row_free(&r);
    }
    free(x);
}

/* cases.c — see cases.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/prob.h"
#include "gpu.h"
#include "../harness/verify/oracle.h"
#include "cases.h"
#include "test.h"

/* splitmix64: the tests' own generator, independent of the module code. */
uint64_t case_next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t next_u64(uint64_t *s) { return case_next_u64(s); }

static double uniform(uint64_t *s) { return (next_u64(s) >> 11) * 0x1.0p-53; }

float case_gauss(uint64_t *s)
{
    double u = uniform(s), v = uniform(s);
    return (float)(sqrt(-2.0 * log(u + 1e-300)) * cos(2.0 * M_PI * v));
}

/* The standard mix of (k, p) rows every case cycles through; V-relative k's use -V. */
static const struct {
    int32_t k;
    float p;
} kp_mix[] = {
    { 0, 1.0f },  { 1, 1.0f },     { -1, 1.0f }, /* -1 here means k = V */
    { 10, 1.0f }, { 0, 0.9f },     { 0, 1e-7f }, { 0, 0.0f },  { 50, 0.9f },
    { 5, 0.5f },  { -2, 0.99f },   /* -2 here means k = V - 1 */
    { -3, 2.0f }, { 0, 0.999999f }, { 1, 0.3f }, { 3, -1.0f }, { 1000, 0.95f },
    { 2, 1.0f },  { 0, 0.5f },
};
#define KP_MIX ((int64_t)(sizeof kp_mix / sizeof kp_mix[0]))

static float gauss(uint64_t *s) { return case_gauss(s); }

void case_alloc(struct test_case *c, const char *name, uint64_t seed, int64_t batch,
                int64_t vocab)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    c->seed = seed;
    c->b.batch = batch;
    c->b.vocab = vocab;
    c->b.logits = malloc(sizeof(float) * (size_t)(batch * vocab));
    c->b.dtype = TKP_F32;
    c->b.logits16 = NULL;
    c->b.seed = c->b.offset = NULL; /* batch keying, min-p off: cases_sampling sets them */
    c->b.min_p = NULL;
    c->b.k = malloc(sizeof(int32_t) * (size_t)batch);
    c->b.p = malloc(sizeof(float) * (size_t)batch);
    for (int64_t r = 0; r < batch; r++) {
        int32_t k = kp_mix[r % KP_MIX].k;
        c->b.k[r] = k == -1 ? (int32_t)vocab : k == -2 ? (int32_t)(vocab - 1) : k;
        c->b.p[r] = kp_mix[r % KP_MIX].p;
    }
}

void case_gaussian(struct test_case *c, uint64_t seed, int64_t batch, int64_t vocab,
                   float scale)
{
    case_alloc(c, "gaussian", seed, batch, vocab);
    uint64_t s = seed;
    for (int64_t i = 0; i < batch * vocab; i++)
        c->b.logits[i] = scale * gauss(&s);
}

static float bf16_round(float x)
{
    union { float f; uint32_t u; } v = { x };
    v.u = (v.u + 0x7FFFu + ((v.u >> 16) & 1u)) & 0xFFFF0000u;
    return v.f;
}

/* Fill each row of a case by pattern. */
enum pattern {
    P_GAUSS, P_PEAKED, P_EQUAL, P_SPREAD, P_NEGINF50, P_NEGINF99, P_ALLNEGINF, P_FIVE,
    P_TIE1000, P_BF16, P_NAN, P_POSINF, P_MIXED, P_NEARTIE_INT
};

static void fill(struct test_case *c, enum pattern pat, uint64_t seed)
{
    uint64_t s = seed;
    const int64_t V = c->b.vocab;
    for (int64_t r = 0; r < c->b.batch; r++) {
        float *x = c->b.logits + r * V;
        for (int64_t i = 0; i < V; i++) {
            float g = gauss(&s);
            switch (pat) {
            case P_GAUSS: x[i] = g; break;
            case P_PEAKED: x[i] = 3.0f * g + (i % 97 == 0 ? 12.0f : 0.0f); break;
            case P_EQUAL: x[i] = 0.5f; break;
            case P_SPREAD: x[i] = 1.0f + 1e-6f * (float)(next_u64(&s) % 8); break;
            case P_NEGINF50: x[i] = uniform(&s) < 0.5 ? -INFINITY : g; break;
            case P_NEGINF99: x[i] = uniform(&s) < 0.99 ? -INFINITY : g; break;
            case P_ALLNEGINF: x[i] = -INFINITY; break;
            case P_FIVE: x[i] = -INFINITY; break;
            case P_TIE1000: x[i] = i < 1000 ? 0.0f : (i == 1000 ? 7.6f : -30.0f + g); break;
            case P_BF16: x[i] = bf16_round(2.0f * g); break;
            case P_NAN: x[i] = uniform(&s) < 0.1 ? NAN : g; break;
            case P_POSINF: x[i] = uniform(&s) < 0.01 ? INFINITY : (uniform(&s) < 0.05 ? NAN : g); break;
            case P_MIXED: x[i] = (r % 3 == 0) ? -0.0f : (r % 3 == 1 ? 0.0f : g); break;
            case P_NEARTIE_INT: x[i] = (float)(next_u64(&s) % 4); break;
            }
        }
        if (pat == P_FIVE)
            for (int j = 0; j < 5 && j < V; j++)
                x[(j * 7 + r) % V] = gauss(&s);
        if (pat == P_POSINF && r % 2 == 0 && V > 3) { /* guarantee some +inf rows */
            x[1] = INFINITY;
            x[V - 2] = INFINITY;
        }
    }
}

int cases_build(struct test_case **out)
{
    static const struct {
        const char *name;
        enum pattern pat;
        int64_t batch, vocab;
    } spec[] = {
        { "gaussian", P_GAUSS, 2 * KP_MIX, 1000 },
        { "peaked", P_PEAKED, KP_MIX, 4096 },
        { "all_equal", P_EQUAL, KP_MIX, 512 },
        { "spread_1e-6", P_SPREAD, KP_MIX, 777 },
        { "neg_inf_50", P_NEGINF50, KP_MIX, 600 },
        { "neg_inf_99", P_NEGINF99, KP_MIX, 2000 },
        { "all_neg_inf", P_ALLNEGINF, KP_MIX, 100 },
        { "five_finite", P_FIVE, KP_MIX, 300 },
        { "tie_1000_at_p", P_TIE1000, KP_MIX, 1500 },
        { "bf16_rounded", P_BF16, KP_MIX, 1024 },
        { "nan", P_NAN, KP_MIX, 500 },
        { "pos_inf", P_POSINF, KP_MIX, 400 },
        { "signed_zero", P_MIXED, KP_MIX, 64 },
        { "small_ints", P_NEARTIE_INT, KP_MIX, 333 },
        { "vocab_1", P_GAUSS, KP_MIX, 1 },
        { "vocab_7", P_NAN, KP_MIX, 7 },
        { "odd_vocab", P_PEAKED, KP_MIX, 1023 },
    };
    int n = (int)(sizeof spec / sizeof spec[0]);
    struct test_case *c = calloc((size_t)n + CASES_SAMPLING_MAX, sizeof *c);
    for (int i = 0; i < n; i++) {
        uint64_t seed = 1000 + (uint64_t)i;
        case_alloc(&c[i], spec[i].name, seed, spec[i].batch, spec[i].vocab);
        fill(&c[i], spec[i].pat, seed);
    }
    *out = c;
    return n + cases_sampling(c + n);
}

int case_oracle_row(struct oracle_row *o, const struct tkp_batch *b, int64_t r)
{
    return oracle_row_init_minp(o, b->logits + r * b->vocab, b->vocab, b->k[r], b->p[r],
                                b->min_p ? b->min_p[r] : 0.0f);
}

void cases_free(struct test_case *c, int n)
{
    for (int i = 0; i < n; i++) {
        free(c[i].b.logits);
        free(c[i].b.logits16);
        free(c[i].b.k);
        free(c[i].b.p);
        free(c[i].b.seed);
        free(c[i].b.offset);
        free(c[i].b.min_p);
    }
    free(c);
}

/* Rows of `from` (each `width` bytes) cycled into a new array of `batch` rows; NULL for NULL. */
static void *cycled(const void *from, int64_t rows, size_t width, int64_t batch)
{
    if (!from || rows < 1)
        return NULL;
    char *to = malloc(width * (size_t)(batch > 0 ? batch : 1));
    for (int64_t r = 0; to && r < batch; r++)
        memcpy(to + width * (size_t)r, (const char *)from + width * (size_t)(r % rows), width);
    return to;
}

void case_tile(struct test_case *c, int64_t batch)
{
    struct tkp_batch *b = &c->b, t = *b;
    const size_t v = (size_t)b->vocab;
    t.batch = batch;
    t.logits = cycled(b->logits, b->batch, sizeof(float) * v, batch);
    t.logits16 = cycled(b->logits16, b->batch, sizeof(uint16_t) * v, batch);
    t.k = cycled(b->k, b->batch, sizeof(int32_t), batch);
    t.p = cycled(b->p, b->batch, sizeof(float), batch);
    t.seed = cycled(b->seed, b->batch, sizeof(uint64_t), batch);
    t.offset = cycled(b->offset, b->batch, sizeof(uint64_t), batch);
    t.min_p = cycled(b->min_p, b->batch, sizeof(float), batch);
    REQUIRE(batch > 0 && b->batch > 0 && t.logits && t.k && t.p &&
                (t.logits16 || !b->logits16) && (t.seed || !b->seed) &&
                (t.offset || !b->offset) && (t.min_p || !b->min_p),
            "case %s: cannot tile %lld rows to %lld", c->name, (long long)b->batch,
            (long long)batch);
    free(b->logits), free(b->logits16), free(b->k), free(b->p);
    free(b->seed), free(b->offset), free(b->min_p);
    *b = t;
}

void cases_fit(const struct tkp_algo *a, struct test_case *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int64_t r = 0; r < c[i].b.batch; r++) {
            if (!(a->ops & (TKP_TOPP | TKP_TOPK_TOPP)))
                c[i].b.p[r] = 1.0f;
            if (!(a->ops & TKP_MINP) && c[i].b.min_p)
                c[i].b.min_p[r] = 0.0f;
            int64_t set = tkp_topk_on(c[i].b.k[r], c[i].b.vocab) ? c[i].b.k[r] : c[i].b.vocab;
            if (a->max_set && set > a->max_set)
                c[i].b.k[r] = (int32_t)a->max_set;
        }
}

static int make_opts(const struct tkp_algo *a, const char *const *options, void *opts)
{
    struct tkp_error err;
    tkp_options_defaults(a, opts);
    for (int i = 0; options && options[i]; i++)
        if (tkp_option_assign(a, opts, options[i], &err)) {
            test_fail(__FILE__, __LINE__, "%s", err.msg);
            return -1;
        }
    return 0;
}

void *module_options(const char *algo, const char *const *options)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    void *opts = a ? calloc(1, a->opts_size) : NULL;
    if (!a)
        test_fail(__FILE__, __LINE__, "no module %s", algo);
    else if (make_opts(a, options, opts)) {
        free(opts);
        opts = NULL;
    }
    return opts;
}

int apply_kept(const char *algo, const char *const *options, enum tkp_backend backend,
               const struct tkp_batch *b, uint8_t *kept, struct tkp_stats *stats)
{
    void *opts = module_options(algo, options);
    if (!opts)
        return TKP_EINVAL;
    struct tkp_error err = { "" };
    int rc = tkp_apply(tkp_algo_find(algo), opts, backend, b, kept, NULL, 0, 0, 0, stats, &err);
    if (rc != TKP_OK)
        test_fail(__FILE__, __LINE__, "%s on the %s: %s", algo,
                  backend == TKP_GPU ? "GPU" : "CPU", err.msg);
    free(opts);
    return rc;
}

/* Check one case: returns the number of rows equal to the oracle. */
static int64_t check_case(const struct tkp_algo *a, const void *opts, enum tkp_backend backend,
                          const struct test_case *c, int report)
{
    const struct tkp_batch *b = &c->b;
    const int32_t draws = 16;
    uint8_t *kept = (a->outputs & TKP_OUT_SET) ? malloc((size_t)(b->batch * b->vocab)) : NULL;
    int64_t *samples = (a->outputs & TKP_OUT_SAMPLE)
                           ? malloc(sizeof(int64_t) * (size_t)(b->batch * draws))
                           : NULL;
    struct tkp_error err = { "" };
    int rc = tkp_apply(a, opts, backend, b, kept, samples, draws, c->seed, 0, NULL, &err);
    int64_t exact = 0;
    if (rc != TKP_OK) {
        if (report)
            test_fail(__FILE__, __LINE__, "%s on case %s (seed %llu): %s", a->name, c->name,
                      (unsigned long long)c->seed, err.msg);
        free(kept);
        free(samples);
        return 0;
    }
    for (int64_t r = 0; r < b->batch; r++) {
        struct oracle_row o;
        case_oracle_row(&o, b, r);
        char why[256];
        int ok = oracle_check_row(&o, kept ? kept + r * b->vocab : NULL,
                                  samples ? samples + r * draws : NULL, draws, why, sizeof why);
        if (!ok && report)
            test_fail(__FILE__, __LINE__, "%s case %s (seed %llu) row %lld k=%d p=%g min_p=%g: %s",
                      a->name, c->name, (unsigned long long)c->seed, (long long)r, b->k[r],
                      (double)b->p[r], b->min_p ? (double)b->min_p[r] : 0.0, why);
        exact += ok;
        oracle_row_free(&o);
    }
    free(kept);
    free(samples);
    return exact;
}

void check_module_cases(const char *algo, const char *const *options, enum tkp_backend backend)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a, "no module %s", algo);
    void *opts = calloc(1, a->opts_size);
    if (make_opts(a, options, opts) == 0) {
        struct test_case *c;
        int n = cases_build(&c);
        cases_fit(a, c, n);
        for (int i = 0; i < n; i++)
            check_case(a, opts, backend, &c[i], 1);
        cases_free(c, n);
    }
    free(opts);
}

double module_exactness(const char *algo, const char *const *options, enum tkp_backend backend)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    void *opts = calloc(1, a->opts_size);
    int64_t rows = 0, exact = 0;
    if (make_opts(a, options, opts) == 0) {
        struct test_case *c;
        int n = cases_build(&c);
        cases_fit(a, c, n);
        for (int i = 0; i < n; i++) {
            exact += check_case(a, opts, backend, &c[i], 0);
            rows += c[i].b.batch;
        }
        cases_free(c, n);
    }
    free(opts);
    return rows ? (double)exact / (double)rows : 0.0;
}

void check_sampler_tv(const char *algo, const char *const *options, enum tkp_backend backend,
                      int32_t draws)
{
    check_sampler_tv_dtype(algo, options, backend, draws, TKP_F32);
}

void check_sampler_tv_dtype(const char *algo, const char *const *options,
                            enum tkp_backend backend, int32_t draws, enum tkp_dtype t)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a, "no module %s", algo);
    void *opts = calloc(1, a->opts_size);
    if (make_opts(a, options, opts)) {
        free(opts);
        return;
    }
    /* Rows chosen so that the kept set is unambiguous (n_min == n_max) and not tiny. */
    struct test_case c;
    const uint64_t seed = 77;
    case_gaussian(&c, seed, 6, 300, 1.5f);
    const int32_t ks[6] = { 20, 0, 40, 300, 7, 0 };
    const float ps[6] = { 1.0f, 0.8f, 0.9f, 0.6f, 1.0f, 1.0f };
    memcpy(c.b.k, ks, sizeof ks);
    memcpy(c.b.p, ps, sizeof ps);
    case_to_dtype(&c, t);
    int64_t *s1 = malloc(sizeof(int64_t) * (size_t)(6 * draws));
    int64_t *s2 = malloc(sizeof(int64_t) * (size_t)(6 * draws));
    struct tkp_error err = { "" };
    int rc = tkp_apply(a, opts, backend, &c.b, NULL, s1, draws, seed, 3, NULL, &err);
    if (rc == TKP_OK)
        rc = tkp_apply(a, opts, backend, &c.b, NULL, s2, draws, seed, 3, NULL, &err);
    CHECK(rc == TKP_OK, "%s sampling failed: %s", algo, err.msg);
    for (int64_t r = 0; rc == TKP_OK && r < 6; r++) {
        struct oracle_row o;
        oracle_row_init(&o, c.b.logits + r * 300, 300, c.b.k[r], c.b.p[r]);
        CHECK(memcmp(s1 + r * draws, s2 + r * draws, sizeof(int64_t) * (size_t)draws) == 0,
              "%s row %lld: the same seed gave different draws", algo, (long long)r);
        if (o.n_min != o.n_max) {
            test_fail(__FILE__, __LINE__, "test row %lld has an ambiguous kept set", (long long)r);
            oracle_row_free(&o);
            continue;
        }
        long double *dist = calloc((size_t)o.n_max, sizeof *dist);
        double *count = calloc(300, sizeof *count);
        oracle_distribution(&o, o.n_max, dist);
        char why[256];
        int64_t outside = 0;
        for (int32_t d = 0; d < draws; d++) {
            int64_t t = s1[r * draws + d];
            if (!oracle_check_draw(&o, t, why, sizeof why))
                outside++;
            else
                count[t] += 1.0;
        }
        double tv = 0;
        for (int64_t j = 0; j < o.n_max; j++)
            tv += fabs(count[o.order[j]] / draws - (double)dist[j]);
        tv = 0.5 * (tv + (double)outside / draws);
        double bound = oracle_tv_bound(o.n_max, draws);
        CHECK(outside == 0, "%s row %lld (seed %llu): %lld draws outside the kept set", algo,
              (long long)r, (unsigned long long)seed, (long long)outside);
        CHECK(tv < bound, "%s row %lld (seed %llu): TV %.5f >= bound %.5f (n=%lld, N=%d)", algo,
              (long long)r, (unsigned long long)seed, tv, bound, (long long)o.n_max, draws);
        free(dist);
        free(count);
        oracle_row_free(&o);
    }
    free(s1);
    free(s2);
    free(c.b.logits);
    free(c.b.logits16);
    free(c.b.k);
    free(c.b.p);
    free(opts);
}

/* Run one case on one backend, reading its logits as `dtype`: the case's own type, or
 * TKP_F32 for the exact upcast of a 16-bit case; returns the tkp_apply status. */
static int run_backend(const struct tkp_algo *a, const void *opts, enum tkp_backend backend,
                       enum tkp_dtype dtype, const struct test_case *c, uint8_t *kept,
                       int64_t *samples, int32_t draws, struct tkp_error *err)
{
    struct tkp_batch b = c->b;
    b.dtype = dtype;
    return tkp_apply(a, opts, backend, &b, kept, samples, draws, c->seed, 11, NULL, err);
}

/* TKP_CASE_SHARD=I/N keeps the cases whose index is I mod N, so a slow sanitizer run
 * (racecheck) can check one family as N processes (scripts/gpu-test.sh, SAN_SHARDS). */
static int case_in_shard(int i)
{
    const char *s = getenv("TKP_CASE_SHARD");
    int shard, shards;
    if (!s || sscanf(s, "%d/%d", &shard, &shards) != 2 || shards < 1)
        return 1;
    return i % shards == shard;
}

/* TKP_CASE_DRAWS=N draws per row in place of `draws` in the two-run checks: racecheck's time
 * grows with the draws, while the code it checks (every pass and round of a draw) is reached
 * by one draw a row as by sixteen (scripts/gpu-test.sh, SAN_DRAWS). */
static int32_t case_draws(int32_t draws)
{
    const char *s = getenv("TKP_CASE_DRAWS");
    const int n = s ? atoi(s) : 0;
    return n > 0 ? n : draws;
}

/* Two runs of each adversarial case and how to judge them: the backends, the draws, the
 * messages for a row whose masks or draws differ, whether the oracle then judges the
 * second run (check_case), and the suite's element type with the type each run reads (the
 * suite's own, or TKP_F32 for its exact upcast). */
struct run_pair {
    enum tkp_backend first, second;
    int32_t draws;
    const char *masks_differ, *draws_differ;
    int judge_second;
    enum tkp_dtype suite, first_reads, second_reads;
    int64_t tile; /* > 0: each case's rows cycled to this many (case_tile) */
};

static const char *backend_text(enum tkp_backend b)
{
    return b == TKP_GPU ? "GPU" : "CPU";
}

/* Row r of two runs: masks and draws must be equal. */
static void compare_rows(const struct tkp_algo *a, const struct test_case *c, int64_t r,
                         const struct run_pair *how, const uint8_t *k1, const uint8_t *k2,
                         const int64_t *s1, const int64_t *s2)
{
    const int64_t v = c->b.vocab, d = how->draws;
    if (k1 && memcmp(k1 + r * v, k2 + r * v, (size_t)v))
        test_fail(__FILE__, __LINE__, "%s case %s (seed %llu) row %lld: %s", a->name, c->name,
                  (unsigned long long)c->seed, (long long)r, how->masks_differ);
    if (s1 && memcmp(s1 + r * d, s2 + r * d, 8 * (size_t)d))
        test_fail(__FILE__, __LINE__, "%s case %s (seed %llu) row %lld: %s (first %lld vs %lld)",
                  a->name, c->name, (unsigned long long)c->seed, (long long)r, how->draws_differ,
                  (long long)s1[r * d], (long long)s2[r * d]);
}

static void check_two_runs(const char *algo, const char *const *options,
                           const struct run_pair *asked)
{
    struct run_pair pair = *asked;
    pair.draws = case_draws(asked->draws);
    const struct run_pair *how = &pair;
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a, "no module %s", algo);
    void *opts = calloc(1, a->opts_size);
    struct test_case *c;
    int n = cases_build_dtype(how->suite, &c);
    cases_fit(a, c, n);
    for (int i = 0; how->tile > 0 && i < n; i++)
        case_tile(&c[i], how->tile);
    const int32_t draws = how->draws;
    const int set = (a->outputs & TKP_OUT_SET) != 0, sample = (a->outputs & TKP_OUT_SAMPLE) != 0;
    for (int i = 0; i < n && make_opts(a, options, opts) == 0; i++) {
        if (!case_in_shard(i))
            continue;
        const struct tkp_batch *b = &c[i].b;
        size_t cells = (size_t)(b->batch * b->vocab), drawn = (size_t)(b->batch * draws);
        /* the second run's buffers start zeroed, the first's not: a byte left unwritten shows */
        uint8_t *k1 = set ? malloc(cells) : NULL, *k2 = set ? calloc(cells, 1) : NULL;
        int64_t *s1 = sample ? malloc(8 * drawn) : NULL, *s2 = sample ? calloc(drawn, 8) : NULL;
        struct tkp_error err = { "" };
        int rc = run_backend(a, opts, how->first, how->first_reads, &c[i], k1, s1, draws, &err);
        CHECK(rc == TKP_OK, "%s %s on %s: %s", algo, backend_text(how->first), c[i].name, err.msg);
        if (rc == TKP_OK) {
            rc = run_backend(a, opts, how->second, how->second_reads, &c[i], k2, s2, draws,
                             &err);
            CHECK(rc == TKP_OK, "%s %s on %s: %s", algo, backend_text(how->second), c[i].name,
                  err.msg);
        }
        for (int64_t r = 0; rc == TKP_OK && r < b->batch; r++)
            compare_rows(a, &c[i], r, how, k1, k2, s1, s2);
        free(k1), free(k2), free(s1), free(s2);
        /* approximate options: only the equality of the two runs holds */
        if (how->judge_second && !(a->approximate && a->approximate(opts)))
            check_case(a, opts, how->second, &c[i], 1);
    }
    cases_free(c, n);
    free(opts);
}

void check_gpu_matches_cpu(const char *algo, const char *const *options)
{
    static const struct run_pair cpu_then_gpu = {
        TKP_CPU, TKP_GPU, 8, "GPU kept mask differs from the CPU's",
        "GPU draws differ from the CPU's", 1, TKP_F32, TKP_F32, TKP_F32, 0,
    };
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    check_two_runs(algo, options, &cpu_then_gpu);
}

void check_gpu_matches_cpu_tiled(const char *algo, const char *const *options, int64_t batch)
{
    const struct run_pair cpu_then_gpu = {
        TKP_CPU, TKP_GPU, 8, "GPU kept mask differs from the CPU's (rows tiled)",
        "GPU draws differ from the CPU's (rows tiled)", 1, TKP_F32, TKP_F32, TKP_F32, batch,
    };
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    check_two_runs(algo, options, &cpu_then_gpu);
}

void check_gpu_matches_cpu_dtype(const char *algo, const char *const *options, enum tkp_dtype t)
{
    const struct tkp_algo *a = tkp_algo_find(algo);
    REQUIRE(a, "no module %s", algo);
    const enum tkp_dtype cpu_reads = (a->cpu->dtypes & TKP_DTYPE_BIT(t)) ? t : TKP_F32;
    char masks[96], draws[96];
    snprintf(masks, sizeof masks, "GPU kept mask on %s differs from the CPU's on %s",
             tkp_dtype_name(t), tkp_dtype_name(cpu_reads));
    snprintf(draws, sizeof draws, "GPU draws on %s differ from the CPU's on %s",
             tkp_dtype_name(t), tkp_dtype_name(cpu_reads));
    const struct run_pair cpu_then_gpu = { TKP_CPU, TKP_GPU, 8, masks, draws, 1,
                                           t, cpu_reads, t, 0 };
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    check_two_runs(algo, options, &cpu_then_gpu);
}

void check_deterministic(const char *algo, const char *const *options, enum tkp_backend backend)
{
    check_deterministic_dtype(algo, options, backend, TKP_F32);
}

void check_deterministic_dtype(const char *algo, const char *const *options,
                               enum tkp_backend backend, enum tkp_dtype t)
{
    const struct run_pair twice = { backend, backend, 16, "two runs kept different masks",
                                    "the same seed gave different draws", 0, t, t, t, 0 };
    if (backend == TKP_GPU && !tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    check_two_runs(algo, options, &twice);
}

void check_dtype_matches_f32(const char *algo, const char *const *options,
                             enum tkp_backend backend, enum tkp_dtype t)
{
    char masks[96], draws[96];
    snprintf(masks, sizeof masks, "the kept mask on %s differs from that on its f32 upcast",
             tkp_dtype_name(t));
    snprintf(draws, sizeof draws, "the draws on %s differ from those on its f32 upcast",
             tkp_dtype_name(t));
    const struct run_pair upcast_then_t = { backend, backend, 8, masks, draws, 1,
                                            t, TKP_F32, t, 0 };
    if (backend == TKP_GPU && !tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    check_two_runs(algo, options, &upcast_then_t);
}

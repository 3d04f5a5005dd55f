/* test_qrita.c — Qrita on the CPU: the oracle for every exact option combination (the defaults
 * alone: tests/test_conformance.c), bitwise equality with naive_sort, the approximate variants
 * (dedup=off, a short iteration cap), the truncation statistics, and where min-p enters. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/qrita/qrita.h"
#include "../algos/qrita/qrita_rules.h"
#include "cases.h"
#include "test.h"

/* A qrita statistic's total in a struct tkp_stats (qrita.h, QRITA_STATS). */
#define STAT(s, id) ((s).total[QRITA_STAT_##id])

static const char *const truncations[] = { "truncation=auto", "truncation=off",
                                           "truncation=force_fallback" };
static const char *const searches[] = { "search=quaternary", "search=ternary", "search=binary",
                                        "search=sort" };
#define N_TRUNCATIONS 3
#define N_SEARCHES 4

/* How qrita's kept set relates to naive_sort's on one batch. */
struct comparison {
    int64_t rows, equal, superset; /* superset: every token naive keeps, qrita keeps too */
    int64_t first_diff;            /* the first row that differs, -1 when none */
};

static struct comparison compare_with_naive(const char *const *options, const struct tkp_batch *b)
{
    struct comparison c = { b->batch, 0, 0, -1 };
    size_t bytes = (size_t)(b->batch * b->vocab);
    uint8_t *mine = malloc(bytes), *naive = malloc(bytes);
    if (apply_kept("qrita", options, TKP_CPU, b, mine, NULL) == TKP_OK &&
        apply_kept("naive_sort", NULL, TKP_CPU, b, naive, NULL) == TKP_OK)
        for (int64_t r = 0; r < b->batch; r++) {
            const uint8_t *m = mine + r * b->vocab, *n = naive + r * b->vocab;
            int equal = memcmp(m, n, (size_t)b->vocab) == 0, superset = 1;
            for (int64_t i = 0; i < b->vocab; i++)
                superset &= m[i] >= n[i];
            c.equal += equal;
            c.superset += superset;
            if (!equal && c.first_diff < 0)
                c.first_diff = r;
        }
    free(mine);
    free(naive);
    return c;
}

static void free_case(struct test_case *c)
{
    free(c->b.logits);
    free(c->b.k);
    free(c->b.p);
}

/* splitmix64, for the rows this file builds itself. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* LLM-like rows: N(0, scale) noise and a dozen outliers 8..14 above it; every row gets k, p. */
static void case_peaked(struct test_case *c, uint64_t seed, int64_t batch, int64_t vocab,
                        float scale, int32_t k, float p)
{
    case_gaussian(c, seed, batch, vocab, scale);
    uint64_t s = seed;
    for (int64_t r = 0; r < batch; r++) {
        for (int j = 0; j < 12; j++)
            c->b.logits[r * vocab + (int64_t)(next_u64(&s) % (uint64_t)vocab)] +=
                8.0f + (float)(next_u64(&s) % 7);
        c->b.k[r] = k;
        c->b.p[r] = p;
    }
}

TEST(qrita_every_exact_option_combination_matches_oracle)
{
    for (int t = 0; t < N_TRUNCATIONS; t++)
        for (int s = 0; s < N_SEARCHES; s++) {
            const char *options[] = { truncations[t], searches[s], "dedup=on", NULL };
            check_module_cases("qrita", options, TKP_CPU);
        }
}

TEST(qrita_kept_set_equals_naive_sort_bitwise_on_adversarial_cases)
{
    struct test_case *c;
    int n = cases_build(&c);
    for (int t = 0; t < N_TRUNCATIONS; t++)
        for (int s = 0; s < N_SEARCHES; s++) {
            const char *options[] = { truncations[t], searches[s], NULL };
            for (int i = 0; i < n; i++) {
                struct comparison cmp = compare_with_naive(options, &c[i].b);
                CHECK(cmp.equal == cmp.rows, "%s %s case %s (seed %llu): row %lld differs",
                      options[0], options[1], c[i].name, (unsigned long long)c[i].seed,
                      (long long)cmp.first_diff);
            }
        }
    cases_free(c, n);
}

TEST(qrita_kept_set_equals_naive_sort_bitwise_on_random_gaussian_rows)
{
    /* Vocabularies past 16384 make the outlier buffer a quarter of the row. */
    static const int64_t vocabs[] = { 97, 1000, 5000, 20000, 70000 };
    for (uint64_t seed = 1; seed <= 15 && !test_failed(); seed++) {
        struct test_case c;
        int64_t vocab = vocabs[seed % 5];
        float scale = 0.5f + 0.4f * (float)seed;
        if (seed % 3 == 0)
            case_peaked(&c, seed, 17, vocab, scale, 50, 0.9f);
        else
            case_gaussian(&c, seed, 17, vocab, scale);
        for (int s = 0; s < N_SEARCHES; s++) {
            const char *options[] = { searches[s], NULL };
            struct comparison cmp = compare_with_naive(options, &c.b);
            CHECK(cmp.equal == cmp.rows, "%s seed %llu V=%lld scale %g: row %lld differs",
                  options[0], (unsigned long long)seed, (long long)vocab, (double)scale,
                  (long long)cmp.first_diff);
        }
        free_case(&c);
    }
}

TEST(qrita_dedup_off_is_declared_approximate_and_keeps_a_superset)
{
    const struct tkp_algo *a = tkp_algo_find("qrita");
    REQUIRE(a && a->approximate, "qrita has no approximate()");
    const char *exact[] = { NULL }, *no_dedup[] = { "dedup=off", NULL };
    struct tkp_error err;
    void *opts = calloc(1, a->opts_size);
    tkp_options_defaults(a, opts);
    CHECK(!a->approximate(opts), "the defaults declare themselves approximate");
    tkp_option_assign(a, opts, no_dedup[0], &err);
    CHECK(a->approximate(opts), "dedup=off does not declare itself approximate");
    free(opts);

    double exactness = module_exactness("qrita", exact, TKP_CPU);
    double without = module_exactness("qrita", no_dedup, TKP_CPU);
    printf("     qrita dedup=on exactness %.4f, dedup=off %.4f\n", exactness, without);
    CHECK(exactness == 1.0, "defaults: exactness %.4f", exactness);
    CHECK(without < 1.0, "dedup=off is exact on the tie cases (%.4f)", without);
    CHECK(without > 0.5, "dedup=off misses rows without ties too (%.4f)", without);

    struct test_case *c;
    int n = cases_build(&c);
    for (int i = 0; i < n; i++) {
        struct comparison cmp = compare_with_naive(no_dedup, &c[i].b);
        CHECK(cmp.superset == cmp.rows, "dedup=off case %s (seed %llu) drops a kept token",
              c[i].name, (unsigned long long)c[i].seed);
    }
    cases_free(c, n);
}

TEST(qrita_iteration_cap_below_the_bound_is_approximate_and_at_the_bound_exact)
{
    const struct tkp_algo *a = tkp_algo_find("qrita");
    static const struct {
        const char *search;
        int bound; /* iterations that resolve the widest key range */
    } modes[] = { { "search=quaternary", 16 }, { "search=ternary", 21 }, { "search=binary", 32 } };
    for (int m = 0; m < 3; m++) {
        char at[32], below[32];
        snprintf(at, sizeof at, "max_iter=%d", modes[m].bound);
        snprintf(below, sizeof below, "max_iter=%d", modes[m].bound - 1);
        const char *exact[] = { modes[m].search, at, NULL };
        const char *two[] = { modes[m].search, "max_iter=2", "truncation=off", NULL };
        struct tkp_error err;
        void *opts = calloc(1, a->opts_size);
        tkp_options_defaults(a, opts);
        tkp_option_assign(a, opts, modes[m].search, &err);
        tkp_option_assign(a, opts, at, &err);
        CHECK(!a->approximate(opts), "%s %s declared approximate", modes[m].search, at);
        tkp_option_assign(a, opts, below, &err);
        CHECK(a->approximate(opts), "%s %s not declared approximate", modes[m].search, below);
        free(opts);
        check_module_cases("qrita", exact, TKP_CPU);

        /* Two iterations cannot resolve the full row: the answer is a superset. */
        double exactness = module_exactness("qrita", two, TKP_CPU);
        CHECK(exactness < 1.0, "%s max_iter=2 is exact (%.4f)", modes[m].search, exactness);
        struct test_case *c;
        int n = cases_build(&c);
        for (int i = 0; i < n; i++) {
            struct comparison cmp = compare_with_naive(two, &c[i].b);
            CHECK(cmp.superset == cmp.rows, "%s max_iter=2 case %s (seed %llu) drops a token",
                  modes[m].search, c[i].name, (unsigned long long)c[i].seed);
        }
        cases_free(c, n);
    }
}

TEST(qrita_search_resolves_the_widest_key_range_within_the_bound)
{
    /* Values from -FLT_MAX to +inf with neighbouring floats at the boundary: the search starts
     * from the widest range there is. */
    enum { V = 64 };
    float x[2 * V], p[2] = { 1.0f, 0.5f };
    int32_t k[2] = { V / 2, 0 };
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < V; i++)
            x[r * V + i] = i == 0 ? -FLT_MAX : i == V - 1 ? INFINITY
                                                          : nextafterf(1.0f, 2.0f * (float)(i % 3));
    struct tkp_batch b = { 2, V, x, k, p, TKP_F32, NULL, NULL, NULL, NULL };
    static const char *const bounds[] = { "max_iter=16", "max_iter=21", "max_iter=32" };
    for (int s = 0; s < 3; s++) {
        const char *options[] = { searches[s], bounds[s], "truncation=off", NULL };
        struct comparison cmp = compare_with_naive(options, &b);
        CHECK(cmp.equal == cmp.rows, "%s %s: row %lld differs", searches[s], bounds[s],
              (long long)cmp.first_diff);
    }
}

TEST(qrita_pivots_split_the_candidates_evenly)
{
    uint64_t s = 99;
    for (int trial = 0; trial < 3000; trial++) {
        int count = 1 + (int)(next_u64(&s) % 3);
        uint32_t lo = (uint32_t)next_u64(&s) >> 1;
        uint32_t hi = lo + (uint32_t)(next_u64(&s) % (trial < 1500 ? 12u : 1u << 30));
        uint32_t pivot[3];
        int n = qrita_place_pivots(lo, hi, count, pivot);
        uint64_t width = (uint64_t)hi - lo + 1;
        /* ceil((width - count) / (count + 1)) untested keys at most between pivots */
        uint64_t largest_gap = width <= (uint64_t)count ? 0 : width / (uint64_t)(count + 1);
        uint64_t previous = (uint64_t)lo - 1, gap_max = 0;
        CHECK(n == (width < (uint64_t)count ? (int)width : count), "seed 99 trial %d: %d pivots",
              trial, n);
        for (int j = 0; j < n; j++) {
            CHECK(pivot[j] >= lo && pivot[j] <= hi && pivot[j] > previous,
                  "seed 99 trial %d: pivot %d out of order or range", trial, j);
            if (pivot[j] - previous - 1 > gap_max)
                gap_max = pivot[j] - previous - 1;
            previous = pivot[j];
        }
        if ((uint64_t)hi - previous > gap_max)
            gap_max = (uint64_t)hi - previous;
        CHECK(gap_max <= largest_gap, "seed 99 trial %d: untested gap %llu > %llu", trial,
              (unsigned long long)gap_max, (unsigned long long)largest_gap);
    }
    CHECK(qrita_iterations_needed(3) == 16 && qrita_iterations_needed(2) == 21 &&
              qrita_iterations_needed(1) == 32,
          "iteration bounds %d %d %d", qrita_iterations_needed(3), qrita_iterations_needed(2),
          qrita_iterations_needed(1));
}

TEST(qrita_quantile_table_is_the_normal_quantile)
{
    static const double quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;
    for (int i = 0; i < QRITA_QUANTILE_BINS - 1; i++) {
        double cdf = 0.5 * erfc(-quantile[i] / sqrt(2.0));
        CHECK(fabs(cdf - (i + 1) / 200.0) < 1e-13, "entry %d: Phi(%.17g) = %.17g, not %g", i,
              quantile[i], cdf, (i + 1) / 200.0);
    }
}

TEST(qrita_stats_count_truncation_hits_and_fallbacks)
{
    const int64_t batch = 16, vocab = 32768;
    const uint64_t seed = 4242;
    struct test_case c;
    case_peaked(&c, seed, batch, vocab, 1.0f, 50, 1.0f);
    struct tkp_stats st;
    uint8_t *kept = malloc((size_t)(batch * vocab));

    const char *quaternary[] = { NULL };
    REQUIRE(apply_kept("qrita", quaternary, TKP_CPU, &c.b, kept, &st) == TKP_OK, "seed %llu", 
            (unsigned long long)seed);
    double per_row = STAT(st, OUTLIERS) / (double)batch;
    printf("     qrita k=50 V=%lld (seed %llu): hits %lld/%lld, N_t %.0f per row, %.2f iterations "
           "per row\n",
           (long long)vocab, (unsigned long long)seed, (long long)STAT(st, HIT_RATE),
           (long long)st.rows, per_row, STAT(st, ITERATIONS) / (double)batch);
    CHECK(st.rows == batch, "rows %lld", (long long)st.rows);
    CHECK(STAT(st, HIT_RATE) == batch && STAT(st, FALLBACKS) == 0,
          "seed %llu: hits %lld fallbacks %lld", (unsigned long long)seed,
          (long long)STAT(st, HIT_RATE), (long long)STAT(st, FALLBACKS));
    CHECK(per_row >= 50 && per_row <= vocab / 4, "seed %llu: %.1f outliers per row",
          (unsigned long long)seed, per_row);
    CHECK(STAT(st, ITERATIONS) >= batch && STAT(st, ITERATIONS) <= 16.0 * (double)batch,
          "seed %llu: %.0f quaternary iterations", (unsigned long long)seed, STAT(st, ITERATIONS));
    double quaternary_iterations = STAT(st, ITERATIONS);

    const char *forced[] = { "truncation=force_fallback", NULL };
    apply_kept("qrita", forced, TKP_CPU, &c.b, kept, &st);
    CHECK(STAT(st, HIT_RATE) == 0 && STAT(st, FALLBACKS) == batch,
          "force_fallback: hits %lld fallbacks %lld", (long long)STAT(st, HIT_RATE),
          (long long)STAT(st, FALLBACKS));
    CHECK(STAT(st, OUTLIERS) / (double)batch == per_row, "force_fallback gathers differently");

    const char *off[] = { "truncation=off", NULL };
    apply_kept("qrita", off, TKP_CPU, &c.b, kept, &st);
    CHECK(STAT(st, HIT_RATE) == 0 && STAT(st, FALLBACKS) == 0 && STAT(st, OUTLIERS) == 0,
          "truncation=off: hits %lld fallbacks %lld outliers %.0f", (long long)STAT(st, HIT_RATE),
          (long long)STAT(st, FALLBACKS), STAT(st, OUTLIERS));

    const char *binary[] = { "search=binary", NULL };
    apply_kept("qrita", binary, TKP_CPU, &c.b, kept, &st);
    CHECK(STAT(st, ITERATIONS) > quaternary_iterations,
          "seed %llu: binary %.0f iterations, quaternary %.0f", (unsigned long long)seed,
          STAT(st, ITERATIONS), quaternary_iterations);

    CHECK(STAT(st, SORTED) == 0, "binary search sorted %.0f keys", STAT(st, SORTED));

    /* search=sort sorts the candidates above the query's lower end: the outliers on a hit,
     * every valid token of the row without truncation */
    const char *sort[] = { "search=sort", NULL };
    apply_kept("qrita", sort, TKP_CPU, &c.b, kept, &st);
    CHECK(STAT(st, ITERATIONS) == 0 && STAT(st, HIT_RATE) == batch,
          "sort: %.0f iterations, %lld hits", STAT(st, ITERATIONS), (long long)STAT(st, HIT_RATE));
    CHECK(STAT(st, SORTED) == per_row * (double)batch, "sort: %.0f keys sorted, %.0f outliers",
          STAT(st, SORTED), per_row * (double)batch);
    const char *sort_off[] = { "search=sort", "truncation=off", NULL };
    apply_kept("qrita", sort_off, TKP_CPU, &c.b, kept, &st);
    CHECK(STAT(st, SORTED) == (double)(batch * vocab),
          "sort, truncation=off: %.0f keys sorted of %lld", STAT(st, SORTED),
          (long long)(batch * vocab));
    free(kept);
    free_case(&c);
}

TEST(qrita_stats_top_p_outlier_mass_reaches_p_on_hits)
{
    const int64_t batch = 16, vocab = 32768;
    const uint64_t seed = 777;
    struct test_case c;
    case_gaussian(&c, seed, batch, vocab, 3.0f);
    for (int64_t r = 0; r < batch; r++) {
        c.b.k[r] = 0;
        c.b.p[r] = 0.9f;
    }
    struct tkp_stats st;
    uint8_t *kept = malloc((size_t)(batch * vocab));
    REQUIRE(apply_kept("qrita", NULL, TKP_CPU, &c.b, kept, &st) == TKP_OK, "seed %llu",
            (unsigned long long)seed);
    printf("     qrita p=0.9 V=%lld (seed %llu): hits %lld/%lld, S_t %.3f, N_t %.0f per row\n",
           (long long)vocab, (unsigned long long)seed, (long long)STAT(st, HIT_RATE),
           (long long)st.rows, STAT(st, OUTLIER_MASS) / (double)batch,
           STAT(st, OUTLIERS) / (double)batch);
    CHECK(STAT(st, HIT_RATE) + STAT(st, FALLBACKS) == batch, "hits %lld + fallbacks %lld != %lld",
          (long long)STAT(st, HIT_RATE), (long long)STAT(st, FALLBACKS), (long long)batch);
    CHECK(STAT(st, HIT_RATE) > 0, "seed %llu: no truncation hit on N(0, 3) rows",
          (unsigned long long)seed);
    CHECK(STAT(st, OUTLIER_MASS) >= 0.9 * (double)STAT(st, HIT_RATE) - 1e-6 &&
              STAT(st, OUTLIER_MASS) <= (double)batch,
          "seed %llu: outlier mass %.4f over %lld hits", (unsigned long long)seed,
          STAT(st, OUTLIER_MASS), (long long)STAT(st, HIT_RATE));
    free(kept);
    free_case(&c);
}

TEST(qrita_outlier_buffer_overflow_falls_back_and_stays_exact)
{
    /* The sample block sees N(-10, 1); the rest of the row is N(0, 1), so nearly all of it lies
     * above the threshold: more than the buffer's quarter of the row. */
    const int64_t batch = 4, vocab = 40000;
    const uint64_t seed = 31;
    struct test_case c;
    case_gaussian(&c, seed, batch, vocab, 1.0f);
    for (int64_t r = 0; r < batch; r++) {
        for (int64_t i = 0; i < 8192; i++)
            c.b.logits[r * vocab + i] -= 10.0f;
        c.b.k[r] = r % 2 ? 50 : 0;
        c.b.p[r] = r % 2 ? 1.0f : 0.8f;
    }
    struct tkp_stats st;
    uint8_t *kept = malloc((size_t)(batch * vocab));
    REQUIRE(apply_kept("qrita", NULL, TKP_CPU, &c.b, kept, &st) == TKP_OK, "seed %llu",
            (unsigned long long)seed);
    CHECK(STAT(st, FALLBACKS) == batch && STAT(st, HIT_RATE) == 0,
          "seed %llu: hits %lld fallbacks %lld", (unsigned long long)seed,
          (long long)STAT(st, HIT_RATE), (long long)STAT(st, FALLBACKS));
    CHECK(STAT(st, OUTLIERS) / (double)batch > (double)(vocab / 4),
          "seed %llu: %.0f outliers per row", (unsigned long long)seed,
          STAT(st, OUTLIERS) / (double)batch);
    struct comparison cmp = compare_with_naive(NULL, &c.b);
    CHECK(cmp.equal == cmp.rows, "seed %llu: row %lld differs from naive_sort",
          (unsigned long long)seed, (long long)cmp.first_diff);
    free(kept);
    free_case(&c);
}

TEST(tkp_mass_floor_narrows_top_p_alone_and_stays_exact)
{
    /* N(0, 2) rows with a few outliers 8..24 above: the sigma threshold gathers ~27% of the row
     * (an overflow), the mass floor leaves the outliers; the kept set stays naive_sort's. */
    const int64_t batch = 4, vocab = 40000;
    const uint64_t seed = 99;
    struct test_case c;
    case_gaussian(&c, seed, batch, vocab, 2.0f);
    for (int64_t r = 0; r < batch; r++) {
        for (int i = 0; i < 30; i++)
            c.b.logits[r * vocab + (i * 1297 + r * 31) % vocab] += 8.0f + (float)(i % 17);
        c.b.k[r] = 0;
        c.b.p[r] = 0.9f;
    }
    struct tkp_stats st, ff;
    uint8_t *kept = malloc((size_t)(batch * vocab));
    const char *force[] = { "truncation=force_fallback", NULL };
    REQUIRE(apply_kept("qrita", NULL, TKP_CPU, &c.b, kept, &st) == TKP_OK, "auto");
    REQUIRE(apply_kept("qrita", force, TKP_CPU, &c.b, kept, &ff) == TKP_OK, "force_fallback");
    printf("     qrita p=0.9 sigma 2 + outliers: %.2f iterations per row (force_fallback %.2f)\n",
           STAT(st, ITERATIONS) / (double)batch, STAT(ff, ITERATIONS) / (double)batch);
    CHECK(STAT(st, ITERATIONS) < STAT(ff, ITERATIONS), "mass floor: %.0f iterations, full row %.0f",
          STAT(st, ITERATIONS), STAT(ff, ITERATIONS));
    struct comparison cmp = compare_with_naive(NULL, &c.b);
    CHECK(cmp.equal == cmp.rows, "row %lld differs from naive_sort", (long long)cmp.first_diff);
    free(kept);
    free_case(&c);
}

/* min-p with top-k (algos/qrita/README.md, "min-p"): the truncation runs on the row's own k,
 * the search on k' = min(k, n) (the GPU folds at the same points, so the statistics agree).
 * Peaked rows at k = 500 and min_p = 0.5 (k' of a few tokens, another threshold's bin): hits,
 * fallbacks and outliers are those without min-p, the kept sets naive_sort's and smaller than
 * k. And rows whose k reaches their valid count (half -inf, k = 0.7 V) under top-p: a hit
 * without min-p, but with it the whole row is searched (qrita_minp_whole_row): every row a
 * fallback. */
static void minp_stats_pair(const struct tkp_batch *b, float min_p, struct tkp_stats *off,
                            struct tkp_stats *on, int64_t *most_kept)
{
    uint8_t *kept = malloc((size_t)(b->batch * b->vocab));
    struct tkp_batch m = *b;
    m.min_p = malloc(sizeof(float) * (size_t)b->batch);
    for (int64_t r = 0; r < b->batch; r++)
        m.min_p[r] = min_p;
    REQUIRE(apply_kept("qrita", NULL, TKP_CPU, b, kept, off) == TKP_OK, "min-p off");
    REQUIRE(apply_kept("qrita", NULL, TKP_CPU, &m, kept, on) == TKP_OK, "min_p %g", min_p);
    *most_kept = 0;
    for (int64_t r = 0; r < b->batch; r++) {
        int64_t n = 0;
        for (int64_t i = 0; i < b->vocab; i++)
            n += kept[r * b->vocab + i];
        *most_kept = n > *most_kept ? n : *most_kept;
    }
    struct comparison cmp = compare_with_naive(NULL, &m);
    CHECK(cmp.equal == cmp.rows, "min_p %g: row %lld differs from naive_sort", min_p,
          (long long)cmp.first_diff);
    free(m.min_p);
    free(kept);
}

TEST(qrita_minp_truncates_on_k_and_searches_on_the_folded_k)
{
    struct test_case c;
    struct tkp_stats off, on;
    int64_t most = 0;
    case_peaked(&c, 7171, 16, 32768, 1.0f, 500, 1.0f);
    minp_stats_pair(&c.b, 0.5f, &off, &on, &most);
    CHECK(STAT(on, HIT_RATE) == STAT(off, HIT_RATE) && STAT(on, FALLBACKS) == STAT(off, FALLBACKS)
              && STAT(on, OUTLIERS) == STAT(off, OUTLIERS) && STAT(off, HIT_RATE) > 0,
          "top-k rows: hits %.0f/%.0f, fallbacks %.0f/%.0f, outliers %.0f/%.0f (min-p on/off)",
          STAT(on, HIT_RATE), STAT(off, HIT_RATE), STAT(on, FALLBACKS), STAT(off, FALLBACKS),
          STAT(on, OUTLIERS), STAT(off, OUTLIERS));
    CHECK(most < 50, "min_p 0.5 keeps %lld tokens of a row (k = 500)", (long long)most);
    free_case(&c);

    const int64_t batch = 8, vocab = 4096;
    case_gaussian(&c, 7272, batch, vocab, 1.0f);
    uint64_t s = 7272;
    for (int64_t r = 0; r < batch; r++) {
        for (int64_t i = 0; i < vocab; i++)
            if (next_u64(&s) % 2)
                c.b.logits[r * vocab + i] = -INFINITY;
        c.b.logits[r * vocab + r] = 4.0f;
        c.b.k[r] = (int32_t)(vocab * 7 / 10);
        c.b.p[r] = 0.9f;
    }
    minp_stats_pair(&c.b, 0.5f, &off, &on, &most);
    CHECK(STAT(off, HIT_RATE) > 0 && STAT(on, HIT_RATE) == 0 && STAT(on, FALLBACKS) == batch,
          "rows whose k reaches their valid count: hits %.0f without min-p, %.0f with, "
          "fallbacks %.0f", STAT(off, HIT_RATE), STAT(on, HIT_RATE), STAT(on, FALLBACKS));
    free_case(&c);
}

/* heavy_n=auto's cut (the GPU's hand-off of a row's search to a block; README "Past B = #SMs"):
 * four rows a SM only where every row has top-k on, the largest k past 256 and vocab x k >
 * 2^27, else two: a top-p-alone row (its set is the vocabulary), a small k, a short row or the
 * product at 2^27 itself keep two. */
TEST(qrita_block_rows_per_sm_follows_vocab_and_k)
{
    const struct {
        int64_t vocab, set_max, want;
    } cases[] = {
        { 262144, 1000, 4 }, { 151936, 1000, 4 }, { 262144, 513, 4 }, { 131072, 1025, 4 },
        { 128256, 1000, 2 }, { 131072, 1024, 2 }, { 262144, 512, 2 }, { 262144, 50, 2 },
        { 1048576, 256, 2 }, { 262144, 262144, 2 }, { 4096, 1000, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tkp_problem pb = { .batch = 1024, .vocab = cases[i].vocab,
                                  .set_max = cases[i].set_max };
        CHECK(qrita_block_rows_per_sm(&pb) == cases[i].want,
              "vocab %lld, largest set %lld: %lld rows a SM, want %lld", (long long)pb.vocab,
              (long long)pb.set_max, (long long)qrita_block_rows_per_sm(&pb),
              (long long)cases[i].want);
    }
}

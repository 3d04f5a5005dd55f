/* test_gpu_qrita.c — Qrita on the GPU: the kept mask equals the CPU's bit for bit on the
 * adversarial cases for every truncation x search combination (the defaults alone:
 * tests/test_conformance.c), dedup off, autotune off and a short iteration cap; on larger
 * Gaussian batches (B = 1 to 200, V = 128256, some with min-p) the masks and the statistics
 * (hits, fallbacks, outliers, outlier mass, iterations, keys sorted) equal the CPU's, and each
 * Table 4 knob takes its own path on the GPU (algos/qrita/README.md, "Table 4 on each
 * backend"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/qrita/qrita.h"
#include "gpu.h"
#include "cases.h"
#include "test.h"

/* A qrita statistic's total in a struct tkp_stats (qrita.h, QRITA_STATS). */
#define STAT(s, id) ((s).total[QRITA_STAT_##id])

static void cases_with(const char *a, const char *b, const char *c)
{
    const char *options[] = { a, b, c, NULL };
    check_gpu_matches_cpu("qrita", options);
}

static const char *const searches[] = { "search=quaternary", "search=ternary", "search=binary",
                                        "search=sort" };

static void every_search(const char *truncation)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    for (int s = 0; s < 4 && !test_failed(); s++)
        cases_with(truncation, searches[s], "dedup=on");
}

TEST(gpu_cases_qrita_truncation_auto_every_search) { every_search("truncation=auto"); }
TEST(gpu_cases_qrita_truncation_off_every_search) { every_search("truncation=off"); }
TEST(gpu_cases_qrita_force_fallback_every_search) { every_search("truncation=force_fallback"); }

TEST(gpu_cases_qrita_dedup_off)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    cases_with("dedup=off", "autotune=off", NULL);
    cases_with("dedup=off", "search=binary", "truncation=off");
}

TEST(gpu_cases_qrita_autotune_off)
{
    cases_with("autotune=off", NULL, NULL);
}

TEST(gpu_cases_qrita_short_iteration_cap)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    cases_with("max_iter=3", NULL, NULL);
    cases_with("max_iter=4", "search=binary", "truncation=force_fallback");
}

TEST(gpu_cases_qrita_small_sample_block)
{
    cases_with("sample_block=7", "sigma_margin=0", NULL);
}

/* ---- larger random batches: masks and statistics ---- */

/* qrita on the CPU and the GPU over batch b: every row's mask and the statistics (hits,
 * fallbacks, outliers, outlier mass, iterations) must be equal; `what` names the input. */
static void cpu_equals_gpu(const struct tkp_batch *b, const char *const *options,
                           const char *what)
{
    const int64_t V = b->vocab;
    size_t cells = (size_t)(b->batch * V);
    uint8_t *cpu = malloc(cells), *gpu = malloc(cells);
    struct tkp_stats sc, sg;
    if (apply_kept("qrita", options, TKP_CPU, b, cpu, &sc) == TKP_OK &&
        apply_kept("qrita", options, TKP_GPU, b, gpu, &sg) == TKP_OK) {
        for (int64_t r = 0; r < b->batch; r++)
            if (memcmp(cpu + r * V, gpu + r * V, (size_t)V)) {
                test_fail(__FILE__, __LINE__, "%s B=%lld row %lld (k=%d p=%g): GPU mask differs",
                          what, (long long)b->batch, (long long)r, b->k[r], (double)b->p[r]);
                break;
            }
        CHECK(sc.rows == sg.rows, "%s: rows %lld vs %lld", what, (long long)sc.rows,
              (long long)sg.rows);
        CHECK(STAT(sc, HIT_RATE) == STAT(sg, HIT_RATE) &&
                  STAT(sc, FALLBACKS) == STAT(sg, FALLBACKS),
              "%s: hits %lld/%lld, fallbacks %lld/%lld (CPU/GPU)", what,
              (long long)STAT(sc, HIT_RATE), (long long)STAT(sg, HIT_RATE),
              (long long)STAT(sc, FALLBACKS), (long long)STAT(sg, FALLBACKS));
        CHECK(STAT(sc, OUTLIERS) == STAT(sg, OUTLIERS), "%s: outliers %.17g vs %.17g", what,
              STAT(sc, OUTLIERS), STAT(sg, OUTLIERS));
        CHECK(STAT(sc, OUTLIER_MASS) == STAT(sg, OUTLIER_MASS), "%s: outlier mass %.17g vs %.17g",
              what, STAT(sc, OUTLIER_MASS), STAT(sg, OUTLIER_MASS));
        CHECK(STAT(sc, ITERATIONS) == STAT(sg, ITERATIONS), "%s: iterations %.17g vs %.17g", what,
              STAT(sc, ITERATIONS), STAT(sg, ITERATIONS));
        CHECK(STAT(sc, SORTED) == STAT(sg, SORTED), "%s: keys sorted %.17g vs %.17g", what,
              STAT(sc, SORTED), STAT(sg, SORTED));
    }
    free(cpu);
    free(gpu);
}

/* min_p of the min-p batches, cycled over the rows: k' = n below k, settled by the buffer's
 * count and its certificate (0.05, 0.5); n >= k, settled by top-k (1e-6); off
 * (algos/qrita/README.md, "min-p"). */
static const float gauss_minp[] = { 0.05f, 1e-6f, 0.0f, 0.5f };

/* B Gaussian rows of V = 128256 with outliers, filters k and p, min_p from gauss_minp when
 * `minp` (else none): CPU = GPU, masks and statistics. */
static void gaussian_run(int64_t batch, int32_t k, float p, float scale, int minp,
                         const char *const *options)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    const int64_t V = 128256;
    struct test_case c;
    const uint64_t seed = 1000 + (uint64_t)batch + (uint64_t)k;
    case_gaussian(&c, seed, batch, V, scale);
    /* a few dozen outliers 4..12 sigma up per row, as in the benchmark */
    uint64_t s = 77;
    for (int64_t r = 0; r < batch; r++) {
        for (int j = 0; j < 40; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int64_t i = (int64_t)((s >> 33) % (uint64_t)V);
            c.b.logits[r * V + i] += scale * (4.0f + (float)((s >> 20) % 9));
        }
        c.b.k[r] = k;
        c.b.p[r] = p;
    }
    if (minp) {
        c.b.min_p = malloc(sizeof(float) * (size_t)batch);
        for (int64_t r = 0; r < batch; r++)
            c.b.min_p[r] = gauss_minp[r % 4];
    }
    char what[96];
    snprintf(what, sizeof what, "gaussian seed %llu k=%d p=%g scale %g%s",
             (unsigned long long)seed, k, (double)p, (double)scale, minp ? " min-p" : "");
    cpu_equals_gpu(&c.b, options, what);
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
    free(c.b.min_p);
}

static void gaussian_matches(int64_t batch, int32_t k, float p, float scale,
                             const char *const *options)
{
    gaussian_run(batch, k, p, scale, 0, options);
}

/* The fused top-p search (B <= 4, every row top-p alone) on the first rows of every
 * adversarial case (ties, -inf, NaN, +inf, all invalid, V = 1, 7, 1023): rows with p = 1 among
 * them, so that the fused kernel also writes whole masks. */
static void fused_topp_on_adversarial_cases(void)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const float ps[] = { 0.9f, 1.0f, 0.5f, 1e-7f };
    struct test_case *c;
    const int n = cases_build(&c);
    for (int i = 0; i < n && !test_failed(); i++)
        for (int64_t batch = 1; batch <= 4 && batch <= c[i].b.batch; batch += 3) {
            struct tkp_batch b = c[i].b;
            b.batch = batch;
            for (int64_t r = 0; r < batch; r++) {
                b.k[r] = 0;
                b.p[r] = ps[(r + i) % 4];
            }
            b.p[0] = 0.9f; /* at least one top-p row: the batch is top-p alone */
            char what[96];
            snprintf(what, sizeof what, "case %s (seed %llu)", c[i].name,
                     (unsigned long long)c[i].seed);
            cpu_equals_gpu(&b, NULL, what);
        }
    cases_free(c, n);
}

TEST(gpu_qrita_fused_topp_on_adversarial_cases) { fused_topp_on_adversarial_cases(); }

/* The same, and the window and gather paths at B = 1 and 3, with qr_scan launched apart from
 * qr_mass (what a device too small to hold qr_mass's grid at once runs; on the H200 the plan
 * folds the scan into qr_mass). */
TEST(gpu_qrita_fused_topp_with_scan_apart)
{
    setenv("TKP_QRITA_SCAN_APART", "1", 1);
    fused_topp_on_adversarial_cases();
    gaussian_matches(1, 0, 0.9f, 2.0f, NULL);
    gaussian_matches(3, 0, 0.5f, 0.25f, NULL);
    unsetenv("TKP_QRITA_SCAN_APART");
}

TEST(gpu_qrita_gaussian_b8_topk) { gaussian_matches(8, 50, 1.0f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b8_topk_topp) { gaussian_matches(8, 50, 0.9f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b8_topp) { gaussian_matches(8, 0, 0.9f, 2.0f, NULL); }
/* Top-p alone at B <= 4: qr_search warms up on a synthetic row first, and the few keys above
 * the mass floor take the sorted-warp search (p = 0.99 leaves more of them than p = 0.5). */
TEST(gpu_qrita_gaussian_b1_topp_warm_up) { gaussian_matches(1, 0, 0.9f, 2.0f, NULL); }
TEST(gpu_qrita_gaussian_b3_topp_warm_up_p05) { gaussian_matches(3, 0, 0.5f, 2.0f, NULL); }
TEST(gpu_qrita_gaussian_b4_topp_warm_up_p099) { gaussian_matches(4, 0, 0.99f, 2.0f, NULL); }
/* The same batches, rows whose candidates qr_mass's window does not hold (the mass floor's bin
 * is past the window, or the window overflows): the fused search's CTAs gather the row and the
 * last one to finish searches it. */
TEST(gpu_qrita_gaussian_b1_topp_fused_gather) { gaussian_matches(1, 0, 0.9f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b3_topp_fused_gather_near_uniform)
{
    gaussian_matches(3, 0, 0.5f, 0.25f, NULL);
}
TEST(gpu_qrita_gaussian_b200_topk) { gaussian_matches(200, 50, 1.0f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b200_topk_topp) { gaussian_matches(200, 50, 0.9f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b200_topp) { gaussian_matches(200, 0, 0.9f, 2.0f, NULL); }

/* Past B = #SMs a warp searches each row (heavy_n=4096; under auto, up to twice #SMs rows, a
 * block: algos/qrita/README.md, "Past B = #SMs"); rows of flat logits have too many top-p
 * candidates for a warp and go to the block kernel (qr_search_heavy): tens of thousands
 * (scale 1, no mass floor to speak of) or the whole row (scale 0.25: the buffer overflows, the
 * row falls back). */
TEST(gpu_qrita_gaussian_b200_topp_flat_rows) { gaussian_matches(200, 0, 0.9f, 1.0f, NULL); }
TEST(gpu_qrita_gaussian_b200_topp_near_uniform_rows) { gaussian_matches(200, 0, 0.5f, 0.25f, NULL); }

/* The warp-per-row search at B = 200, which heavy_n=auto leaves for past 264 rows: every
 * filter, a k = 1000 row's ~2000 candidates in one warp, min-p folded by the warp, flat rows
 * handed on. */
TEST(gpu_qrita_gaussian_b200_warp_search)
{
    static const char *const warp[] = { "heavy_n=4096", NULL };
    gaussian_matches(200, 50, 1.0f, 1.0f, warp);
    gaussian_matches(200, 50, 0.9f, 1.0f, warp);
    gaussian_matches(200, 1000, 0.9f, 1.0f, warp);
    gaussian_matches(200, 0, 0.9f, 2.0f, warp);
    gaussian_matches(200, 0, 0.9f, 1.0f, warp);
    gaussian_run(200, 50, 0.9f, 1.0f, 1, warp);
}

/* Past #SMs rows under a warp search (heavy_n=4096) at V = 4096 <= heavy_n: the odd rows take
 * two values (0 or 1, plus noise) so that their truncation misses and the row is searched in
 * full, which a warp leaves to a block; the even rows hit. CPU = GPU, and the CPU's statistics
 * show the misses (else this shape tests nothing). */
TEST(gpu_qrita_truncation_misses_under_warp_search_match_cpu)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    static const char *const warp[] = { "heavy_n=4096", NULL };
    const int64_t B = 200, V = 4096;
    const float ps[] = { 1.0f, 0.9f };
    for (int pi = 0; pi < 2 && !test_failed(); pi++) {
        struct test_case c;
        const uint64_t seed = 4242 + (uint64_t)pi;
        case_gaussian(&c, seed, B, V, 1.0f);
        uint64_t s = seed;
        for (int64_t r = 0; r < B; r++) {
            c.b.k[r] = 50;
            c.b.p[r] = ps[pi];
            for (int64_t i = 0; r % 2 && i < V; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                c.b.logits[r * V + i] = (float)(s >> 63) + 1e-3f * (float)((s >> 40) & 1023);
            }
        }
        uint8_t *kept = malloc((size_t)(B * V));
        struct tkp_stats st;
        REQUIRE(apply_kept("qrita", warp, TKP_CPU, &c.b, kept, &st) == TKP_OK, "CPU run");
        CHECK(STAT(st, FALLBACKS) > 0, "seed %llu p=%g: no row missed its truncation",
              (unsigned long long)seed, (double)ps[pi]);
        char what[96];
        snprintf(what, sizeof what, "two-valued odd rows, seed %llu p=%g",
                 (unsigned long long)seed, (double)ps[pi]);
        cpu_equals_gpu(&c.b, warp, what);
        free(kept);
        free(c.b.logits);
        free(c.b.k);
        free(c.b.p);
    }
}

static void table4_options(int minp)
{
    static const char *const runs[][4] = {
        { "autotune=off", NULL },
        { "truncation=force_fallback", "dedup=off", "autotune=off", NULL },
        { "truncation=off", "search=binary", NULL },
        { "search=sort", NULL },
        { "search=sort", "truncation=off", NULL },
    };
    for (int i = 0; i < 5 && !test_failed(); i++)
        gaussian_run(200, 50, 0.9f, 1.0f, minp, runs[i]);
}

TEST(gpu_qrita_gaussian_b200_table4_options) { table4_options(0); }

/* min-p folded into qrita's kernels (algos/qrita/README.md, "min-p"): with top-k, from the
 * buffer by the search (a block per row at B = 8 and, under heavy_n=auto, at B = 200; a warp
 * there in gpu_qrita_gaussian_b200_warp_search), or over the row (the
 * options without truncation; every row under TKP_MINP_FORCE_COUNT=1, scripts/gpu-test.sh's
 * second pass); with top-k off, by qr_prep before the threshold. At k = 500 min_p 0.5 leaves a
 * few tokens: rows whose buffer falls short of k but holds more than k' are checked against the
 * buffer (the validation) where the CPU fell back. */
TEST(gpu_qrita_gaussian_b8_topk_topp_minp) { gaussian_run(8, 50, 0.9f, 1.0f, 1, NULL); }
TEST(gpu_qrita_gaussian_b200_topk_topp_minp) { gaussian_run(200, 50, 0.9f, 1.0f, 1, NULL); }
TEST(gpu_qrita_gaussian_b8_topp_minp) { gaussian_run(8, 0, 0.9f, 2.0f, 1, NULL); }
TEST(gpu_qrita_gaussian_b200_topp_minp) { gaussian_run(200, 0, 0.9f, 2.0f, 1, NULL); }
TEST(gpu_qrita_gaussian_b200_minp_table4_options) { table4_options(1); }
TEST(gpu_qrita_gaussian_b8_k500_minp) { gaussian_run(8, 500, 1.0f, 1.0f, 1, NULL); }
TEST(gpu_qrita_gaussian_b200_k500_minp) { gaussian_run(200, 500, 0.9f, 1.0f, 1, NULL); }

/* A buffer smaller than the CPU's (TKP_QRITA_POOL forces its entries per row; README,
 * "Workspace"): top-k rows gather above a tighter key, the CPU's query runs on that buffer and
 * is checked, and a buffer that overflows or does not provably hold the answer sends the row to
 * the CPU's query over the whole row. Masks and statistics must stay the CPU's. */
static void with_pool(const char *entries, void (*body)(void))
{
    setenv("TKP_QRITA_POOL", entries, 1);
    body();
    unsetenv("TKP_QRITA_POOL");
}

static void small_pool_cases(void)
{
    check_gpu_matches_cpu("qrita", NULL);
    for (int i = 0; i < 4 && !test_failed(); i++)
        cases_with(searches[i], "dedup=on", NULL);
    cases_with("truncation=force_fallback", NULL, NULL);
}

/* 16 entries: almost every top-k row overflows (the row path), the rest validate */
TEST(gpu_cases_qrita_pool_16) { with_pool("16", small_pool_cases); }

static void pool_gaussians(void)
{
    gaussian_matches(8, 50, 1.0f, 1.0f, NULL);   /* a block per row */
    gaussian_matches(200, 50, 0.9f, 1.0f, NULL); /* a warp per row, handing it to a block */
    gaussian_matches(200, 1000, 0.9f, 1.0f, NULL);
    gaussian_matches(200, 0, 0.9f, 2.0f, NULL);  /* top-p alone: qr_gather2's bound */
    static const char *const sort[] = { "search=sort", NULL };
    gaussian_matches(200, 50, 1.0f, 1.0f, sort);
    gaussian_run(8, 50, 0.9f, 1.0f, 1, NULL); /* min-p counted from a tight buffer */
    gaussian_run(200, 50, 0.9f, 1.0f, 1, NULL);
}

/* bf16-rounded rows (many tied values) with k swept over the number of keys the tight buffer
 * holds (256 entries: about 128 keys of the Gaussian tail plus the outliers), so that on some
 * rows the k-th key is the smallest buffered one and a pivot below the tight key is judged on a
 * buffer that lacks the keys under it: the check must send those rows to the row search, or
 * the iterations differ from the CPU's. */
static void bf16_k_sweep(void)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    const int64_t V = 128256, batch = 200;
    struct test_case c;
    case_gaussian(&c, 4242, batch, V, 1.0f);
    uint64_t s = 99;
    for (int64_t r = 0; r < batch; r++) {
        float *x = c.b.logits + r * V;
        for (int j = 0; j < 40; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[(s >> 33) % (uint64_t)V] += 4.0f + (float)((s >> 20) % 9);
        }
        for (int64_t i = 0; i < V; i++) { /* round to bf16 (to nearest, ties away) */
            union { float f; uint32_t u; } b = { x[i] };
            b.u = (b.u + 0x8000u) & 0xFFFF0000u;
            x[i] = b.f;
        }
        c.b.k[r] = 100 + (int32_t)(r / 2);
        c.b.p[r] = r % 2 ? 0.9f : 1.0f;
    }
    cpu_equals_gpu(&c.b, NULL, "bf16 rows, k = 100..199, seed 4242");
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

TEST(gpu_qrita_bf16_pool_256_k_sweep) { with_pool("256", bf16_k_sweep); }

/* 640 entries (what B = 1024, V = 262144 gets): k = 50 validates on the tight buffer; k = 1000
 * gathers ~2000 keys, overflows, and searches the row */
TEST(gpu_qrita_gaussian_pool_640) { with_pool("640", pool_gaussians); }
/* 8000 entries: k = 1000 validates too */
TEST(gpu_qrita_gaussian_pool_8000) { with_pool("8000", pool_gaussians); }

/* A buffer smaller than the CPU's in a plan that is not tight (8000 entries at k = 50, V =
 * 128256: the tighter key would lie below the CPU's threshold), on rows whose first 8192
 * tokens (the sample) are N(0, 0.525) and the rest N(0, 1): the CPU's threshold falls near 1.15,
 * about 15000 keys lie above it (a hit for the CPU's 32064-entry buffer) and the GPU's buffer
 * overflows, so the row is searched over the whole row from the CPU's threshold. */
static void non_tight_overflow(void)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    const int64_t V = 128256;
    static const int64_t batches[] = { 8, 200 };
    static const float ps[] = { 1.0f, 0.9f };
    for (int i = 0; i < 2 && !test_failed(); i++)
        for (int j = 0; j < 2 && !test_failed(); j++) {
            struct test_case c;
            const uint64_t seed = 5150 + (uint64_t)(2 * i + j);
            case_gaussian(&c, seed, batches[i], V, 1.0f);
            for (int64_t r = 0; r < c.b.batch; r++) {
                for (int64_t t = 0; t < 8192; t++)
                    c.b.logits[r * V + t] *= 0.525f;
                c.b.k[r] = 50;
                c.b.p[r] = ps[j];
            }
            char what[96];
            snprintf(what, sizeof what, "narrow sample, B=%lld p=%g, seed %llu",
                     (long long)batches[i], (double)ps[j], (unsigned long long)seed);
            cpu_equals_gpu(&c.b, NULL, what);
            free(c.b.logits);
            free(c.b.k);
            free(c.b.p);
        }
}

TEST(gpu_qrita_non_tight_overflow) { with_pool("8000", non_tight_overflow); }

/* ---- each Table 4 knob takes its path on the GPU: its statistics, not only its mask ---- */

/* Gaussian rows with a few dozen outliers (as gaussian_matches), k = 50, p = 0.9: qrita on the
 * GPU with `options`, its statistics in *st; 0 when the run failed. */
static int gpu_stats_of(const struct tkp_batch *b, const char *const *options,
                        struct tkp_stats *st)
{
    uint8_t *kept = malloc((size_t)(b->batch * b->vocab));
    const int rc = apply_kept("qrita", options, TKP_GPU, b, kept, st);
    free(kept);
    CHECK(rc == TKP_OK, "qrita on the GPU failed (%s)", options[0] ? options[0] : "defaults");
    return rc == TKP_OK;
}

TEST(gpu_qrita_table4_knobs_take_their_paths)
{
    if (!tkp_gpu_present()) {
        test_skip("no GPU");
        return;
    }
    const int64_t batch = 200, V = 128256;
    const uint64_t seed = 1250;
    struct test_case c;
    case_gaussian(&c, seed, batch, V, 1.0f);
    uint64_t s = 77;
    for (int64_t r = 0; r < batch; r++) {
        for (int j = 0; j < 40; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            c.b.logits[r * V + (int64_t)((s >> 33) % (uint64_t)V)] += 4.0f + (float)((s >> 20) % 9);
        }
        c.b.k[r] = 50;
        c.b.p[r] = 0.9f;
    }
    static const char *const a_run[] = { NULL }, *const d_run[] = { "truncation=force_fallback",
                                                                    NULL },
                             *const e_run[] = { "truncation=off", NULL },
                             *const f_run[] = { "search=binary", NULL },
                             *const i_run[] = { "search=sort", NULL },
                             *const j_run[] = { "search=sort", "truncation=off", NULL };
    struct tkp_stats a, d, e, f, i, j;
    if (gpu_stats_of(&c.b, a_run, &a) && gpu_stats_of(&c.b, d_run, &d) &&
        gpu_stats_of(&c.b, e_run, &e) && gpu_stats_of(&c.b, f_run, &f) &&
        gpu_stats_of(&c.b, i_run, &i) && gpu_stats_of(&c.b, j_run, &j)) {
        printf("     seed %llu: iterations A %.0f F %.0f E %.0f; keys sorted I %.0f J %.0f\n",
               (unsigned long long)seed, STAT(a, ITERATIONS), STAT(f, ITERATIONS),
               STAT(e, ITERATIONS), STAT(i, SORTED), STAT(j, SORTED));
        CHECK(STAT(a, HIT_RATE) == batch && STAT(a, SORTED) == 0 && STAT(a, ITERATIONS) > 0,
              "A: %lld hits, %.0f sorted, %.0f iterations", (long long)STAT(a, HIT_RATE),
              STAT(a, SORTED), STAT(a, ITERATIONS));
        CHECK(STAT(d, HIT_RATE) == 0 && STAT(d, FALLBACKS) == batch &&
                  STAT(d, OUTLIERS) == STAT(a, OUTLIERS),
              "D (force_fallback): %lld hits, %lld fallbacks", (long long)STAT(d, HIT_RATE),
              (long long)STAT(d, FALLBACKS));
        CHECK(STAT(e, HIT_RATE) == 0 && STAT(e, FALLBACKS) == 0 && STAT(e, OUTLIERS) == 0 &&
                  STAT(e, ITERATIONS) > 0,
              "E (truncation off): %lld hits, %lld fallbacks, %.0f outliers",
              (long long)STAT(e, HIT_RATE), (long long)STAT(e, FALLBACKS), STAT(e, OUTLIERS));
        CHECK(STAT(f, ITERATIONS) > STAT(a, ITERATIONS),
              "F (binary) %.0f iterations, A (quaternary) %.0f", STAT(f, ITERATIONS),
              STAT(a, ITERATIONS));
        /* I sorts each row's gathered outliers (every row a hit), J every token of every row */
        CHECK(STAT(i, ITERATIONS) == 0 && STAT(i, SORTED) == STAT(a, OUTLIERS) &&
                  STAT(i, SORTED) < (double)(batch * V) / 16,
              "I (sort): %.0f iterations, %.0f keys sorted, %.0f outliers", STAT(i, ITERATIONS),
              STAT(i, SORTED), STAT(a, OUTLIERS));
        CHECK(STAT(j, ITERATIONS) == 0 && STAT(j, SORTED) == (double)(batch * V),
              "J (sort, truncation off): %.0f iterations, %.0f keys sorted of %lld",
              STAT(j, ITERATIONS), STAT(j, SORTED), (long long)(batch * V));
    }
    free(c.b.logits);
    free(c.b.k);
    free(c.b.p);
}

/* test_datasets.c — the seeded generators: determinism (same seed, same rows; a row does not
 * depend on the batch it is generated in), finite model-like rows, unique names, and each
 * model-like profile's qrita statistics at k=50 near its Table 1 row (datasets/CALIBRATION.md;
 * the full calibration is scripts/calibrate_table1.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/qrita/qrita.h"
#include "../datasets/datasets.h"
#include "../datasets/model_like.h"
#include "apply.h"
#include "test.h"

/* A qrita statistic's total in a struct tkp_stats (qrita.h, QRITA_STATS). */
#define STAT(s, id) ((s).total[QRITA_STAT_##id])

TEST(datasets_names_unique)
{
    int n = 0;
    for (const struct tkp_dataset *a = tkp_datasets; a->name; a++, n++) {
        CHECK(a->fill_row != NULL, "%s: no generator", a->name);
        for (const struct tkp_dataset *b = a + 1; b->name; b++)
            CHECK(strcmp(a->name, b->name) != 0, "dataset name '%s' appears twice", a->name);
        CHECK(tkp_dataset_find(a->name) == a, "%s: find returns another entry", a->name);
    }
    CHECK(n >= 12, "only %d datasets", n);
    for (const struct tkp_model_profile *p = tkp_model_profiles; p->name; p++)
        CHECK(tkp_dataset_find(p->name) != NULL, "profile %s is not in tkp_datasets", p->name);
}

/* Every dataset: the same seed gives the same bytes, a row is the same in a batch of 1 and of
 * 3, and another seed gives other rows. */
TEST(datasets_deterministic_and_batch_independent)
{
    const int64_t V = 5000;
    float *a = malloc(sizeof(float) * 3 * V), *b = malloc(sizeof(float) * 3 * V),
          *one = malloc(sizeof(float) * V);
    struct tkp_error err = { "" };
    for (const struct tkp_dataset *d = tkp_datasets; d->name; d++) {
        REQUIRE(tkp_dataset_generate(d->name, 7, 3, V, a, &err) == TKP_OK, "%s", err.msg);
        REQUIRE(tkp_dataset_generate(d->name, 7, 3, V, b, &err) == TKP_OK, "%s", err.msg);
        CHECK(memcmp(a, b, sizeof(float) * 3 * V) == 0, "%s: not deterministic", d->name);
        REQUIRE(tkp_dataset_generate(d->name, 7, 1, V, one, &err) == TKP_OK, "%s", err.msg);
        CHECK(memcmp(a, one, sizeof(float) * V) == 0, "%s: row 0 depends on the batch", d->name);
        REQUIRE(tkp_dataset_generate(d->name, 8, 1, V, one, &err) == TKP_OK, "%s", err.msg);
        CHECK(memcmp(a, one, sizeof(float) * V) != 0, "%s: the seed changes nothing", d->name);
        CHECK(memcmp(a, a + V, sizeof(float) * V) != 0, "%s: rows 0 and 1 are equal", d->name);
    }
    CHECK(tkp_dataset_generate("no_such_dataset", 1, 1, V, one, &err) == TKP_EINVAL,
          "an unknown name is accepted");
    free(a);
    free(b);
    free(one);
}

/* Model-like rows are finite at any V (a config may ask for another vocabulary), including
 * tiny ones, and carry a clear top token above the body. */
TEST(datasets_model_like_finite)
{
    const int64_t sizes[] = { 1, 50, 4096, 32768 };
    for (const struct tkp_model_profile *p = tkp_model_profiles; p->name; p++)
        for (int s = 0; s < 4; s++) {
            int64_t V = sizes[s];
            float *x = malloc(sizeof(float) * 2 * V);
            struct tkp_error err = { "" };
            REQUIRE(tkp_dataset_generate(p->name, 3, 2, V, x, &err) == TKP_OK, "%s", err.msg);
            int64_t bad = 0;
            for (int64_t i = 0; i < 2 * V; i++)
                bad += !isfinite(x[i]);
            CHECK(bad == 0, "%s V=%lld: %lld non-finite values", p->name, (long long)V,
                  (long long)bad);
            free(x);
        }
}

/* qrita at k=50 on 8 rows of each calibrated profile at its own V: every row hits and the
 * mean outlier count N_t is within 15% of Table 1 (the 128-row calibration is within 4%). */
TEST(datasets_model_like_table1_topk)
{
    static const struct { const char *name; double n_t; } target[] = {
        { "model_llama3_8b", 276 }, { "model_qwen3_8b", 399 },
        { "model_gpt_oss_20b", 286 }, { "model_gemma3_4b", 2368 },
    };
    const int64_t B = 8;
    const struct tkp_algo *a = tkp_algo_find("qrita");
    REQUIRE(a != NULL, "no qrita module");
    void *opts = calloc(1, a->opts_size);
    tkp_options_defaults(a, opts);
    for (int t = 0; t < 4; t++) {
        const struct tkp_model_profile *p = tkp_model_profile_find(target[t].name);
        REQUIRE(p && p->calibrated, "%s: no calibrated profile", target[t].name);
        int64_t V = p->vocab;
        float *x = malloc(sizeof(float) * B * V);
        uint8_t *kept = malloc((size_t)(B * V));
        int32_t k[8];
        float pr[8];
        for (int r = 0; r < B; r++)
            k[r] = 50, pr[r] = 1.0f;
        struct tkp_error err = { "" };
        struct tkp_stats st = { 0 };
        struct tkp_batch b = { B, V, x, k, pr, TKP_F32, NULL, NULL, NULL, NULL };
        REQUIRE(tkp_dataset_generate(p->name, 1, B, V, x, &err) == TKP_OK, "%s", err.msg);
        REQUIRE(tkp_apply(a, opts, TKP_CPU, &b, kept, NULL, 0, 0, 0, &st, &err) == TKP_OK,
                "%s: %s", p->name, err.msg);
        double n_t = STAT(st, OUTLIERS) / (double)st.rows;
        CHECK(st.rows == B && STAT(st, HIT_RATE) == B, "%s: %lld of %lld rows hit at k=50", p->name,
              (long long)STAT(st, HIT_RATE), (long long)st.rows);
        CHECK(fabs(n_t - target[t].n_t) <= 0.15 * target[t].n_t,
              "%s: N_t %.1f, Table 1 %.0f (band 15%%)", p->name, n_t, target[t].n_t);
        free(x);
        free(kept);
    }
    free(opts);
}

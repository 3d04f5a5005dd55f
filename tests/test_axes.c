/* test_axes.c — the table of sweep axes (harness/axes.c; README.md, "Configs"): its rows agree
 * with the fields they name, and the text it prints is the plan line, progress line and resume
 * key written before the table (docs/DESIGN.md, the `key` column), byte for byte. */
#include <string.h>

#include "../harness/axes.h"
#include "../harness/limits.h"
#include "cli_util.h"
#include "test.h"

TEST(axes_rows_match_their_fields)
{
    static const char *const reserved[] = { "algos", "verify", "where", "timing", "algo",
                                            "variant", "mode", NULL };
    int n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        CHECK(a->name[0] && a->help && a->help[0], "axis %d has no name or help", n);
        for (const struct tkp_axis *b = tkp_axes; b < a; b++)
            CHECK(strcmp(a->name, b->name) != 0, "axis %s is listed twice", a->name);
        for (int r = 0; reserved[r]; r++)
            CHECK(strcmp(a->name, reserved[r]) != 0, "axis %s shadows a sweep key", a->name);
        const int text = a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM;
        const size_t want = a->type == TKP_AXIS_I64 || a->type == TKP_AXIS_U64 ? 8
                            : a->type == TKP_AXIS_I32 || a->type == TKP_AXIS_F32 ? 4
                            : a->type == TKP_AXIS_ENUM ? sizeof(int) : a->size;
        CHECK(a->size == want, "axis %s: a %zu-byte field for its type", a->name, a->size);
        CHECK(text ? a->column_size >= (a->type == TKP_AXIS_DATASET ? a->size : 16)
                   : a->column_size == 8, "axis %s: its column has %zu bytes", a->name,
              a->column_size);
        CHECK(a->type != TKP_AXIS_DATASET || (a->def_text && a->size > TKP_MAX_DATASET_CHARS),
              "axis %s: a dataset needs a default and room for TKP_MAX_DATASET_CHARS", a->name);
        CHECK(a->type != TKP_AXIS_ENUM || a->choices, "axis %s: an enum without choices", a->name);
        CHECK(a->type != TKP_AXIS_F32 || a->declared, "axis %s: no declared double", a->name);
        CHECK(text || (a->flags & TKP_AXIS_REQUIRED) || (a->def >= a->min && a->def <= a->max),
              "axis %s: default %g outside [%g, %g]", a->name, a->def, a->min, a->max);
    }
    CHECK(n >= 1 && n <= TKP_MAX_AXES, "%d axes", n);
}

/* The text of a cell's axes is the text that plan, progress and key printed before the table. */
TEST(axes_text_is_the_plan_progress_and_key_text)
{
    struct tkp_cell c = { .vocab = 128256, .batch = 64, .k = -1, .p = 0.95f, .p_declared = 0.95,
                          .draws = 3, .seed = 9007199254740992ull };
    snprintf(c.dataset, sizeof c.dataset, "file:/tmp/x.h5");
    char got[1024], want[1024];
    got[0] = 0;
    tkp_axes_append(&c, TKP_AXES_PLAN, got, sizeof got);
    snprintf(want, sizeof want, "\t%s\tV=%lld\tB=%lld\tk=%d\tp=%g", c.dataset,
             (long long)c.vocab, (long long)c.batch, c.k, (double)c.p);
    CHECK(strcmp(got, want) == 0, "plan text '%s', not '%s'", got, want);
    got[0] = 0;
    tkp_axes_append(&c, TKP_AXES_PROGRESS, got, sizeof got);
    snprintf(want, sizeof want, " V=%lld B=%lld k=%d p=%g", (long long)c.vocab,
             (long long)c.batch, c.k, (double)c.p);
    CHECK(strcmp(got, want) == 0, "progress text '%s', not '%s'", got, want);
    snprintf(got, sizeof got, "algo");
    tkp_axes_append(&c, TKP_AXES_KEY, got, sizeof got);
    snprintf(want, sizeof want, "algo|%s|%lld|%lld|%d|%.9g|%d|%llu", c.dataset,
             (long long)c.vocab, (long long)c.batch, c.k, (double)c.p, c.draws,
             (unsigned long long)c.seed);
    CHECK(strcmp(got, want) == 0, "key text '%s', not '%s'", got, want);
    struct tkp_cell_row row = { 0 };
    tkp_axes_to_row(&c, &row);
    CHECK(strcmp(row.dataset, c.dataset) == 0 && row.vocab == c.vocab && row.batch == c.batch &&
              row.k == c.k && row.p == 0.95 && row.draws == c.draws &&
              row.seed == (int64_t)c.seed, "the row's axis columns differ from the cell");
}

/* The messages that list the axes name them in the table's order. */
TEST(axes_name_the_sweep_keys_and_the_cross_product)
{
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    int rc = tkp_config_load(write_scratch("axes_key.lua", "sweep 's' { vocab = 8, batch = 1, "
                                           "algos = 'naive_sort', dtype = 'f16' }\n"),
                             TKP_CPU, &plan, &err);
    CHECK(rc != TKP_OK && strstr(err.msg, "axes_key.lua:1: sweep 's': unknown key 'dtype' "
                                 "(expected one of algos, dataset, vocab, batch, k, p, draws, "
                                 "seed, verify, where, timing)"), "%s", err.msg);
    rc = tkp_config_load(write_scratch("axes_big.lua",
                                       "local l = {} for i = 1, 64 do l[i] = i end\n"
                                       "sweep 's' { vocab = l, batch = l, k = l, p = l,\n"
                                       "  algos = 'naive_sort' }\n"),
                         TKP_CPU, &plan, &err);
    CHECK(rc != TKP_OK && strstr(err.msg, "axes_big.lua:2: sweep 's': its cross product has "
                                 "16777216 cells (algos x dataset x vocab x batch x k x p = 1 x "
                                 "1 x 64 x 64 x 64 x 64), more than the limit of 1000000"),
          "%s", err.msg);
}

/* The results columns (docs/DESIGN.md, "/sweeps/<sweep>/cells") are the contract's, in its order,
 * and every axis has a column by its name: a new axis's column is appended after them. */
TEST(axes_each_have_a_results_column_after_the_contract_columns)
{
    static const char *const contract[] = {
        "key", "algo", "variant", "options", "dataset", "mode", "backend", "batch", "vocab", "k",
        "p", "draws", "seed", "status", "message", "median_us", "q1_us", "q3_us", "min_us",
        "max_us", "mean_us", "stdev_us", "n_samples", "samples_offset", "throttled",
        "bytes_read", "bytes_written", "gbps", "bw_fraction", "workspace_bytes",
        "peak_device_bytes", "rows_checked", "rows_exact", "hit_rate", "outliers",
        "outlier_mass", "iterations", "rounds", "cell_seconds", "noisy", "run", "sorted",
    };
    const size_t fixed = sizeof contract / sizeof contract[0];
    const char *names[128];
    const size_t n = tkp_results_columns(names, 128);
    REQUIRE(n >= fixed && n <= 128, "%zu columns", n);
    for (size_t i = 0; i < fixed; i++)
        CHECK(strcmp(names[i], contract[i]) == 0, "column %zu is %s, the contract's is %s", i,
              names[i], contract[i]);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        size_t at = n;
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], a->name) == 0)
                at = i;
        CHECK(at < n, "axis %s has no results column", a->name);
    }
}

/* test_dispatch.c — the variants and the dispatch table (docs/DESIGN.md, "Variants and the
 * dispatch table"): the cluster option of cake and rejection and its precedence over the
 * TKP_*_CLUSTER hook; a device's slug; the lookup (log-log interpolation between grid points,
 * clamping outside the grid, a variant missing at a corner, the nearest k, rows that disagree
 * with the options a config set); a plan's cells take
 * the options the config left unset, shown in a --dry-run; the compiled-in tables parse;
 * scripts/dispatch-tables.awk refuses a malformed table naming file:line and the field;
 * scripts/fit-dispatch.py on a synthetic export, and the committed H100 check is the binary's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "plan.h"
#include "cli_util.h"
#include "test.h"

#define PYTHON "/usr/bin/python3"

static char out[1 << 16];

/* A test table of GPU "t100": cake f32 on a grid B {2, 32} x V {1000, 100000} at k = 50, where
 * cluster=4 is the faster at B = 2 and cluster=1 at B = 32; cluster=8, the fastest of all, only
 * at (2, 1000), and first (no time elsewhere must not make it win); cluster=2 alone at
 * k = 1000. In log-log, B = 4 is a quarter of the way from 2 to 32 (cluster=1 ~ 8.4 us,
 * cluster=4 ~ 5.8), B = 16 three quarters (5.9 and 7.8). */
static const struct tkp_dispatch_row rows[] = {
    { "t100", "cake", "f32", 2, 1000, 50, "cluster=8", 1, "t100.tsv:2" },
    { "t100", "cake", "f32", 2, 1000, 50, "cluster=1", 10, "t100.tsv:3" },
    { "t100", "cake", "f32", 2, 1000, 50, "cluster=4", 5, "t100.tsv:4" },
    { "t100", "cake", "f32", 2, 100000, 50, "cluster=1", 10, "t100.tsv:5" },
    { "t100", "cake", "f32", 2, 100000, 50, "cluster=4", 5, "t100.tsv:6" },
    { "t100", "cake", "f32", 32, 1000, 50, "cluster=1", 5, "t100.tsv:7" },
    { "t100", "cake", "f32", 32, 1000, 50, "cluster=4", 9, "t100.tsv:8" },
    { "t100", "cake", "f32", 32, 100000, 50, "cluster=1", 5, "t100.tsv:9" },
    { "t100", "cake", "f32", 32, 100000, 50, "cluster=4", 9, "t100.tsv:10" },
    { "t100", "cake", "f32", 2, 1000, 1000, "cluster=2", 3, "t100.tsv:11" },
    { "t100", "rejection", "*", 2, 1000, 50, "cluster=8,max_rounds=16", 1, "t100.tsv:12" },
    { "t200", "cake", "*", 1024, 262144, 1000, "cluster=16", 2, "t200.tsv:3" },
};
static const size_t n_rows = sizeof rows / sizeof rows[0];

TEST(dispatch_slug_is_reproduce_sh_folder_rule)
{
    static const char *const names[][2] = {
        { "NVIDIA H100 80GB HBM3", "h100" }, { "NVIDIA H200", "h200" },
        { "Tesla A100-SXM4-40GB", "a100" },  { "NVIDIA L40S", "l40s" },
        { "NVIDIA GB200", "gb200" },         { "NVIDIA GeForce RTX 4090", "" },
        { "", "" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char slug[16];
        tkp_dispatch_slug(names[i][0], slug, sizeof slug);
        CHECK(strcmp(slug, names[i][1]) == 0, "'%s': slug '%s', not '%s'", names[i][0], slug,
              names[i][1]);
    }
}

/* Between grid points whose winners disagree, the interpolated times decide; outside the grid
 * the nearest end does; a variant missing at a corner is no candidate; k goes to the nearest in
 * log; a table with no row for the module and dtype gives none. */
TEST(dispatch_lookup_interpolates_log_log_between_grid_points)
{
    static const struct {
        const char *slug, *module, *dtype;
        int64_t b, v, k;
        int row; /* -1: none */
    } cells[] = {
        { "t100", "cake", "f32", 2, 1000, 50, 0 },       /* on the grid: cluster=8 */
        { "t100", "cake", "f32", 2, 2000, 50, 2 },       /* cluster=8 missing at V = 1e5 */
        { "t100", "cake", "f32", 4, 5000, 50, 2 },       /* B = 2's winner, at a quarter */
        { "t100", "cake", "f32", 16, 5000, 50, 1 },      /* B = 32's winner, at 3/4 */
        { "t100", "cake", "f32", 1, 500, 50, 0 },        /* clamped to (2, 1000) */
        { "t100", "cake", "f32", 1, 1000000, 50, 4 },    /* clamped to (2, 1e5) */
        { "t100", "cake", "f32", 4096, 1000000, 50, 7 }, /* clamped to (32, 1e5) */
        { "t100", "cake", "f32", 64, 5000, 600, 9 },     /* k 600: nearer 1000 in log */
        { "t100", "cake", "f32", 4, 5000, 200, 2 },      /* k 200: nearer 50 */
        { "t100", "cake", "f32", 4, 5000, 0, 2 },        /* k 0 counts as 1 */
        { "t100", "cake", "bf16", 4, 5000, 50, -1 },     { "t100", "rejection", "bf16", 9, 9, 9, 10 },
        { "t100", "qrita", "f32", 1, 1, 1, -1 },         { "t200", "cake", "f16", 1, 1, 1, 11 },
        { "h100", "cake", "f32", 1, 1, 1, -1 },
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        const struct tkp_dispatch_row *r =
            tkp_dispatch_lookup(rows, n_rows, cells[i].slug, cells[i].module, cells[i].dtype,
                                cells[i].b, cells[i].v, cells[i].k, NULL, NULL);
        CHECK(r == (cells[i].row < 0 ? NULL : &rows[cells[i].row]),
              "%s %s %s B=%lld V=%lld k=%lld: row %d, not %d", cells[i].slug, cells[i].module,
              cells[i].dtype, (long long)cells[i].b, (long long)cells[i].v, (long long)cells[i].k,
              r ? (int)(r - rows) : -1, cells[i].row);
    }
    /* a row that disagrees with an option the config set is no candidate; one it does not
     * name plays no part */
    static const struct {
        const char *module, *given;
        int row; /* -1: none */
    } held[] = {
        { "cake", "cluster=1", 1 },           { "cake", "cluster=4", 2 },
        { "cake", "cluster=16", -1 },         { "cake", "topp_launch=fused", 0 },
        { "cake", "topp_launch=fused,cluster=4", 2 }, { "rejection", "max_rounds=16", 10 },
        { "rejection", "max_rounds=8", -1 }, { "rejection", "cluster=8,max_rounds=1", -1 },
    };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        const struct tkp_dispatch_row *r = tkp_dispatch_lookup(
            rows, n_rows, "t100", held[i].module, "f32", 2, 1000, 50, held[i].given, NULL);
        CHECK(r == (held[i].row < 0 ? NULL : &rows[held[i].row]), "%s given '%s': row %d, not %d",
              held[i].module, held[i].given, r ? (int)(r - rows) : -1, held[i].row);
    }
    double us = 0; /* B = 8, V = 1e4: halfway in both, cluster=4's sqrt(5 * 9) beats sqrt(50) */
    const struct tkp_dispatch_row *r =
        tkp_dispatch_lookup(rows, n_rows, "t100", "cake", "f32", 8, 10000, 50, NULL, &us);
    CHECK(r == &rows[2] && us > 6.7082 && us < 6.7083, "row %d, %.6f us",
          r ? (int)(r - rows) : -1, us);
}

/* The options text of the plan's cell of `algo` (variant label) at batch b. */
static const char *options_of(const struct tkp_plan *plan, const char *variant, int64_t b)
{
    for (size_t i = 0; i < plan->n; i++)
        if (strcmp(plan->cells[i].variant, variant) == 0 && plan->cells[i].batch == b)
            return plan->cells[i].options;
    return "(no such cell)";
}

/* An explicit option always wins; a number names the cluster choice it spells (cluster = 4 is
 * "4", not the choice at index 4, "8"); a row timed with another value of an option the config
 * set is no candidate (rejection's one row has max_rounds=16: the config's 8 takes none). */
TEST(dispatch_plan_sets_only_the_options_the_config_left_unset)
{
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    int rc = tkp_config_load(write_scratch("dispatch_plan.lua",
        "ablation 'd' { base = { vocab = 32768, batch = { 1, 16 }, k = 50 },\n"
        "  variants = { auto = 'cake', four = { 'cake', cluster = 4 },\n"
        "               rej = { 'rejection', max_rounds = 8 } } }\n"), TKP_CPU, &plan, &err);
    REQUIRE(rc == TKP_OK, "%s", err.msg);
    CHECK(strcmp(options_of(&plan, "four", 1), "topp_launch=fused,cluster=4") == 0, "%s",
          options_of(&plan, "four", 1));
    rc = tkp_plan_dispatch(&plan, "t100", rows, n_rows, &err);
    CHECK(rc == TKP_OK, "%s", err.msg);
    static const char *const want[][3] = {
        { "auto", "1", "topp_launch=fused,cluster=4" },
        { "auto", "16", "topp_launch=fused,cluster=1" },
        { "four", "16", "topp_launch=fused,cluster=4" },
        { "rej", "1", "max_rounds=8" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *got = options_of(&plan, want[i][0], atoi(want[i][1]));
        CHECK(strcmp(got, want[i][2]) == 0, "%s B=%s: '%s', not '%s'", want[i][0], want[i][1],
              got, want[i][2]);
    }
    static const struct tkp_dispatch_row bad[] = {
        { "t100", "cake", "*", 1, 32768, 50, "cluster=3", 1, "bad.tsv:7" },
    };
    rc = tkp_plan_dispatch(&plan, "t100", bad, 1, &err);
    CHECK(rc == TKP_EINVAL && strstr(err.msg, "bad.tsv:7") && strstr(err.msg, "cluster"),
          "rc %d: %s", rc, err.msg);
    tkp_plan_free(&plan);
}

/* An option whose choices are numbers takes a number by its spelling and refuses any other,
 * naming the option, the number and the choices (threads = 1 was once the choice at index 1,
 * "512"; heavy_n = 2 was "1024"). */
TEST(number_choices_refuse_a_number_that_is_none_of_them)
{
    static const char *const bad[][2] = {
        { "{ 'cake', threads = 1 }", "'1'" },     { "{ 'qrita', heavy_n = 2 }", "'2'" },
        { "{ 'cake', cluster = 3 }", "'3'" },     { "{ 'rejection', cluster = 4.5 }", "'4.5'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "sweep 'n' { algos = { %s }, vocab = 64, batch = 1, k = 5 }\n",
                 bad[i][0]);
        struct tkp_plan plan;
        struct tkp_error err = { 0 };
        const int rc = tkp_config_load(write_scratch("number_choice.lua", text), TKP_CPU, &plan,
                                       &err);
        CHECK(rc != TKP_OK && strstr(err.msg, bad[i][1]) && strstr(err.msg, "is not one of"),
              "%s: rc %d: %s", bad[i][0], rc, err.msg);
        if (rc == TKP_OK)
            tkp_plan_free(&plan);
    }
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    REQUIRE(tkp_config_load(write_scratch("number_choice.lua",
                                          "sweep 'n' { algos = { { 'cake', threads = 256 },\n"
                                          "  { 'qrita', heavy_n = 0 } }, vocab = 64, batch = 1,"
                                          " k = 5 }\n"),
                            TKP_CPU, &plan, &err) == TKP_OK,
            "%s", err.msg);
    int seen = 0;
    for (size_t i = 0; i < plan.n; i++) {
        const char *o = plan.cells[i].options, *name = plan.cells[i].algo->name;
        seen += strcmp(o, strcmp(name, "cake") == 0 ? "topp_launch=fused,threads=256"
                                                     : "truncation=auto,search=quaternary,"
                                                       "dedup=on,autotune=on,sigma_margin=0.15,"
                                                       "sample_block=8192,max_iter=32,heavy_n=0")
                == 0;
    }
    CHECK(seen == 2 && plan.n == 2, "%d of %zu cells take their number's choice", seen, plan.n);
    tkp_plan_free(&plan);
}

TEST(cluster_option_wins_over_the_env_hook)
{
    struct tkp_error err = { 0 };
    int size = -1;
    setenv("TKP_TEST_CLUSTER", "2", 1);
    CHECK(tkp_forced_cluster(0, "TKP_TEST_CLUSTER", &size, &err) == TKP_OK && size == 2,
          "auto with the hook at 2: %d", size);
    for (int i = 1; tkp_cluster_choices[i]; i++)
        CHECK(tkp_forced_cluster(i, "TKP_TEST_CLUSTER", &size, &err) == TKP_OK &&
                  size == atoi(tkp_cluster_choices[i]),
              "cluster=%s: %d", tkp_cluster_choices[i], size);
    unsetenv("TKP_TEST_CLUSTER");
    CHECK(tkp_forced_cluster(0, "TKP_TEST_CLUSTER", &size, &err) == TKP_OK && size == 0,
          "auto, no hook: %d", size);
    const char *const modules[] = { "cake", "rejection" };
    for (int m = 0; m < 2; m++) {
        const struct tkp_algo *a = tkp_algo_find(modules[m]);
        REQUIRE(a && tkp_option_find(a, "cluster"), "%s has no cluster option", modules[m]);
        CHECK(strstr(tkp_option_find(a, "cluster")->help, "CPU ignores it") != NULL,
              "%s: the help does not say the CPU ignores it", modules[m]);
    }
}

/* Every row compiled in from dispatch/ names a module with those options. */
TEST(dispatch_compiled_tables_name_modules_and_options)
{
    for (size_t i = 0; i < tkp_dispatch_count; i++) {
        const struct tkp_dispatch_row *r = &tkp_dispatch_rows[i];
        const struct tkp_algo *a = tkp_algo_find(r->module);
        REQUIRE(a, "%s: no module '%s'", r->where, r->module);
        char opts[512];
        REQUIRE(a->opts_size <= sizeof opts, "%s: options struct too large", r->module);
        tkp_options_defaults(a, opts);
        struct tkp_error err = { 0 };
        CHECK(tkp_dispatch_apply(a, opts, 0, r, &err) == TKP_OK, "%s", err.msg);
    }
    CHECK(tkp_dispatch_rows[tkp_dispatch_count].slug == NULL, "the table has no end row");
}

/* scripts/dispatch-tables.awk on a table `text` named `name`: its exit status, output in out. */
static int generate(const char *name, const char *text)
{
    return run_cmd(out, sizeof out, "awk -f scripts/dispatch-tables.awk /dev/null %s",
                   write_scratch(name, text));
}

TEST(dispatch_tables_awk_refuses_malformed_tables_naming_file_line_field)
{
    const char *head = "# comment\nmodule\tdtype\tbatch\tvocab\tk\toptions\tus\n";
    char text[512];
    snprintf(text, sizeof text, "%scake\tbf16\t4\t32768\t50\tcluster=4\t12.5\n", head);
    CHECK(generate("t100.tsv", text) == 0 &&
              strstr(out, "{ \"t100\", \"cake\", \"bf16\", 4, 32768, 50, \"cluster=4\", 12.5, ") &&
              strstr(out, "t100.tsv:3\" }") && strstr(out, "tkp_dispatch_count = 1;"),
          "%s", out);
    static const char *const bad[][2] = {
        { "cake\tf64\t4\t32768\t50\tcluster=4\t1\n", ":3: field dtype: 'f64'" },
        { "cake\tf32\t4\tx\t50\tcluster=4\t1\n", ":3: field vocab: 'x'" },
        { "cake\tf32\t0\t32768\t50\tcluster=4\t1\n", ":3: field batch: '0'" },
        { "cake\tf32\t4\t32768\t50\tcluster 4\t1\n", ":3: field options: 'cluster 4'" },
        { "Cake\tf32\t4\t32768\t50\tcluster=4\t1\n", ":3: field module: 'Cake'" },
        { "cake\tf32\t4\t32768\t50\tcluster=4\t0\n", ":3: field us: '0'" },
        { "cake\tf32\t4\t32768\t50\tcluster=4\tfast\n", ":3: field us: 'fast'" },
        { "cake\tf32\t4\t32768\t50\tcluster=4\n", ":3: 6 fields, not 7" },
        { "cake\tf32\t4\t32768\t50\tcluster=4\t1\ncake\tf32\t4\t32768\t50\tcluster=4\t2\n",
          ":4: the variant cluster=4 at cake f32 B=4 V=32768 k=50 is also " },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s", head, bad[i][0]);
        CHECK(generate("t100.tsv", text) != 0 && strstr(out, "t100.tsv") &&
                  strstr(out, bad[i][1]), "%s: %s", bad[i][1], out);
    }
    CHECK(generate("t100.tsv", "module\tdtype\n") != 0 && strstr(out, "t100.tsv:1: the header"),
          "%s", out);
    CHECK(generate("Example.tsv", head) != 0 && strstr(out, "Example.tsv:1: a table is named"),
          "%s", out);
}

/* A synthetic `topkp export` of the fit config's sweeps: cake f32 at V = 1000, k = 50,
 * variants cluster=1 and cluster=4 (topp_launch the same everywhere, so not a variant); fit
 * cells B = 1 (4 wins) and 16 (1 wins, and is the faster at B = 8 in log-log; in a sweep of
 * its own, dispatch_fit_b16, as the config names a batch's), a bf16 cell that was not timed
 * (left out), a cell of another sweep (dispatch_fitx: not read), held-out B = 8 with the times
 * `held` gives. */
#define FITC "dispatch_fit\tcake\ttopp_launch=fused,"
#define FITC16 "dispatch_fit_b16\tcake\ttopp_launch=fused,"
#define HELD "dispatch_heldout_b8\tcake\ttopp_launch=fused,"

static const char *synthetic_export(const char *name, const char *held)
{
    static char text[2048];
    const char *head = "sweep\talgo\toptions\tdtype\tbatch\tvocab\tk\tstatus\tmedian_us\n";
    snprintf(text, sizeof text,
             "%s" FITC "cluster=1\tf32\t1\t1000\t50\tok\t10\n"
             FITC "cluster=4\tf32\t1\t1000\t50\tok\t5\n"
             FITC16 "cluster=1\tf32\t16\t1000\t50\tok\t5\n"
             FITC16 "cluster=4\tf32\t16\t1000\t50\tok\t9\n"
             FITC16 "cluster=4\tbf16\t16\t1000\t50\tunsupported\tnan\n"
             "dispatch_fitx\tcake\ttopp_launch=fused,cluster=4\tf32\t16\t1000\t50\tok\t1\n"
             "%s",
             head, held);
    return write_scratch(name, text);
}

TEST(dispatch_fit_script_picks_the_fastest_and_checks_held_out_cells)
{
    if (access(PYTHON, X_OK) != 0 ||
        run_cmd(NULL, 0, "%s -c 'import h5py, numpy'", PYTHON) != 0) {
        test_skip("no " PYTHON " with h5py and numpy");
        return;
    }
    const char *good = synthetic_export(
        "fit_good.tsv", HELD "cluster=1\tf32\t8\t1000\t50\tok\t10\n"
                        HELD "cluster=4\tf32\t8\t1000\t50\tok\t10.4\n");
    char table[512];
    snprintf(table, sizeof table, "%s/x100.tsv", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s scripts/fit-dispatch.py %s x100 > %s", PYTHON, good,
                    table) == 0, "fit: %s", out);
    char *fitted = slurp(table, NULL);
    REQUIRE(fitted, "no table");
    CHECK(strstr(fitted, "module\tdtype\tbatch\tvocab\tk\toptions\tus\n"
                         "cake\tf32\t1\t1000\t50\tcluster=1\t10.0000\n"
                         "cake\tf32\t1\t1000\t50\tcluster=4\t5.0000\n"
                         "cake\tf32\t16\t1000\t50\tcluster=1\t5.0000\n"
                         "cake\tf32\t16\t1000\t50\tcluster=4\t9.0000\n") &&
              !strstr(fitted, "bf16"),
          "%s", fitted);
    free(fitted);
    CHECK(run_cmd(out, sizeof out, "awk -f scripts/dispatch-tables.awk /dev/null %s", table) == 0,
          "the fitted table does not compile: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s scripts/fit-dispatch.py %s x100 --check", PYTHON, good) ==
                  0 && strstr(out, "cake\tf32\t8\t1000\t50\tcluster=1\tcluster=1\t1.000"),
          "%s", out);
    const char *slow = synthetic_export(
        "fit_slow.tsv", HELD "cluster=1\tf32\t8\t1000\t50\tok\t11\n"
                        HELD "cluster=4\tf32\t8\t1000\t50\tok\t10\n");
    CHECK(run_cmd(out, sizeof out, "%s scripts/fit-dispatch.py %s x100 --check", PYTHON, slow) ==
                  1 && strstr(out, "cake\tf32\t8\t1000\t50\tcluster=1\tcluster=4\t1.100") &&
              strstr(out, "1 past 1.05"),
          "%s", out);
    CHECK(run_cmd(out, sizeof out, "%s scripts/fit-dispatch.py %s x100 --check --topkp %s",
                  PYTHON, good, topkp_bin()) == 1 &&
              strstr(out, "the binary takes None, the fit cluster=1"),
          "a binary with no table for x100 agrees with the fit: %s", out);
}

/* Each committed check is the binary's: its compiled-in dispatch/SLUG.tsv and C lookup give
 * every held-out cell of the committed fit run the variant the check names, and the file is
 * what --check prints today (the table is not stale against the results; the fit runs are
 * kept compressed, read by scripts/topkp_results.py). */
TEST(dispatch_checks_are_the_binary_lookup_on_the_committed_fits)
{
    if (access(PYTHON, X_OK) != 0 ||
        run_cmd(NULL, 0, "%s -c 'import h5py, numpy'", PYTHON) != 0) {
        test_skip("no " PYTHON " with h5py and numpy");
        return;
    }
    static const struct { const char *slug, *dir; } fits[] = {
        { "h100", "results/h100-2026-12-06/dispatch" },
        { "h200", "results/h200/d7af87f-2026-12-06" },
    };
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
        char *committed = NULL, path[256];
        snprintf(path, sizeof path, "%s/check.tsv", fits[i].dir);
        REQUIRE((committed = slurp(path, NULL)) != NULL, "no %s", path);
        run_cmd(out, sizeof out,
                "%s scripts/fit-dispatch.py %s/dispatch_fit.h5.xz %s --check --topkp %s", PYTHON,
                fits[i].dir, fits[i].slug, topkp_bin());
        CHECK(strcmp(out, committed) == 0 && strstr(out, "\n# 64 held-out cells, "),
              "%s differs from --check --topkp:\n%s", path, out);
        free(committed);
    }
}

/* `topkp run --dry-run --backend gpu` shows the variant a GPU's table gives each cell, in a
 * build without CUDA too (it only plans): TKP_DISPATCH_SLUG=h100 names the compiled-in H100
 * table; the explicit cluster = 2 wins and takes the fastest row of that size (its threads
 * too); threads = 256, which the table has at no corner of B = 8, takes no row; a slug with
 * no table leaves the cell at auto. */
TEST(dispatch_dry_run_shows_the_variant_a_cell_takes)
{
    const char *cfg = write_scratch("dispatch_dry.lua",
        "ablation 'd' { base = { vocab = 151936, batch = 8, k = 1000 },\n"
        "  variants = { auto = 'cake', two = { 'cake', cluster = 2 },\n"
        "               shape = { 'cake', threads = '256' } } }\n");
    const struct tkp_dispatch_row *r = tkp_dispatch_lookup(
        tkp_dispatch_rows, tkp_dispatch_count, "h100", "cake", "f32", 8, 151936, 1000, NULL,
        NULL);
    const struct tkp_dispatch_row *r2 = tkp_dispatch_lookup(
        tkp_dispatch_rows, tkp_dispatch_count, "h100", "cake", "f32", 8, 151936, 1000,
        "cluster=2", NULL);
    REQUIRE(r && r2 && strncmp(r2->options, "cluster=2,", 10) == 0,
            "dispatch/h100.tsv gives cake f32 B=8 V=151936 k=1000 no variant (of cluster=2)");
    char want[160], want2[160];
    snprintf(want, sizeof want, "\tcake:auto\ttopp_launch=fused,%s\t", r->options);
    snprintf(want2, sizeof want2, "\tcake:two\ttopp_launch=fused,%s\t", r2->options);
    CHECK(run_cmd(out, sizeof out, "TKP_DISPATCH_SLUG=h100 %s run %s --dry-run --backend gpu",
                  topkp_bin(), cfg) == 0 &&
              strstr(out, want) && strstr(out, want2) &&
              strstr(out, "\tcake:shape\ttopp_launch=fused,threads=256\t"),
          "want '%s' and '%s': %s", want, want2, out);
    CHECK(run_cmd(out, sizeof out, "TKP_DISPATCH_SLUG=zz000 %s run %s --dry-run --backend gpu",
                  topkp_bin(), cfg) == 0 &&
              strstr(out, "\tcake:auto\ttopp_launch=fused\t"),
          "%s", out);
}

/* test_config.c — the Lua experiment language: plans of small configs, and every kind of
 * error naming the config's file:line. */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "cli_util.h"
#include "test.h"

/* Load `text` as a config; returns the error message ("" when it loaded). */
static const char *load_error(const char *name, const char *text, size_t *cells)
{
    static struct tkp_error err;
    struct tkp_plan plan;
    err.msg[0] = 0;
    *cells = 0;
    if (tkp_config_load(write_scratch(name, text), TKP_CPU, &plan, &err) == TKP_OK) {
        *cells = plan.n;
        tkp_plan_free(&plan);
        return "";
    }
    return err.msg;
}

TEST(config_cross_product_where_filter_and_helpers)
{
    size_t cells;
    const char *e = load_error("ok.lua",
                               "sweep \"s\" {\n"
                               "  algos = { \"naive_sort\", { \"rtopk\", max_iter = 3 } },\n"
                               "  vocab = pow2(10, 12), batch = range(1, 5, 2),\n"
                               "  k = { 0, 50 }, p = { 0.9, 1.0 },\n"
                               "  where = function(c) return c.algo ~= \"rtopk\" or c.p == 1 end,\n"
                               "}\n",
                               &cells);
    CHECK(e[0] == 0, "valid config rejected: %s", e);
    /* naive_sort: 3 vocab x 3 batch x 2 k x 2 p = 36; rtopk only p == 1: 18 */
    CHECK(cells == 54, "expected 54 cells, got %zu", cells);
}

TEST(config_ablation_carries_variant_labels_in_order)
{
    struct tkp_plan plan;
    struct tkp_error err;
    const char *path = write_scratch("abl.lua",
                                     "ablation \"t4\" {\n"
                                     "  base = { vocab = 1000, batch = { 1, 2 }, k = 5 },\n"
                                     "  variants = { B = { \"rtopk\", max_iter = 2 },\n"
                                     "               A = \"rtopk\" },\n"
                                     "}\n");
    REQUIRE(tkp_config_load(path, TKP_CPU, &plan, &err) == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 4, "expected 4 cells, got %zu", plan.n);
    CHECK(strcmp(plan.cells[0].variant, "A") == 0 && strcmp(plan.cells[2].variant, "B") == 0,
          "variants must come in label order: %s %s", plan.cells[0].variant,
          plan.cells[2].variant);
    CHECK(strstr(plan.cells[2].options, "max_iter=2") != NULL, "variant options lost: %s",
          plan.cells[2].options);
    tkp_plan_free(&plan);
}

/* Each bad config must fail with its file:line and a message naming the problem. */
TEST(config_errors_name_file_line_and_the_problem)
{
    static const struct {
        const char *name, *text, *line, *words;
    } cases[] = {
        { "e1.lua", "\nsweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1, kk = 5 }\n",
          ":2:", "unknown key 'kk'" },
        { "e2.lua", "sweep \"s\" {\n algos = {\"nosuch\"}, vocab = 10, batch = 1 }\n", ":1:",
          "unknown algorithm 'nosuch'" },
        { "e3.lua", "\n\nsweep \"s\" { algos = {{\"rtopk\", bogus = 1}}, vocab = 10, batch = 1 }\n",
          ":3:", "no option 'bogus'" },
        { "e4.lua", "sweep \"s\" { algos = {{\"rtopk\", max_iter = -4}}, vocab = 10, batch = 1 }\n",
          ":1:", "out of range" },
        { "e5.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 0, batch = 1 }\n", ":1:",
          "vocab = 0" },
        { "e6.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10 }\n", ":1:",
          "'batch' is required" },
        { "e7.lua", "x = 1\nsweep \"s\" { algos = {\"naive_sort\"}, vocab = \"big\", batch = 1 }\n",
          ":2:", "'vocab' must be a number" },
        { "e8.lua", "sweep \"s\" {\n", ":", "expected" },
        { "e9.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1,\n"
                    "  where = function(c) return c.nope.x end }\n", ":2:", "nope" },
        { "e10.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1, p = 0/0 }\n",
          ":1:", "NaN" },
        { "e11.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1, dataset = \"nope\" }\n",
          ":1:", "unknown dataset 'nope'" },
        { "e12.lua", "sweep \"s\" { algos = { \"rtopk\", max_iter = 2 }, vocab = 10, batch = 1 }\n",
          ":1:", "write options inside an entry" },
        { "e13.lua", "io.open(\"/etc/passwd\")\n", ":1:", "io" },
        { "e14.lua", "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1 }\n"
                     "sweep \"s\" { algos = {\"naive_sort\"}, vocab = 10, batch = 1 }\n",
          ":2:", "declared twice" },
        { "e15.lua", "ablation \"a\" { base = { vocab = 10, batch = 1 }, variants = { A = { \"rtopk\", search = \"x\" } } }\n",
          ":1:", "no option 'search'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t cells;
        const char *e = load_error(cases[i].name, cases[i].text, &cells);
        char where[128];
        snprintf(where, sizeof where, "%s%s", cases[i].name, cases[i].line);
        CHECK(e[0] && strstr(e, where), "%s: error does not name %s: '%s'", cases[i].name, where,
              e);
        CHECK(e[0] && strstr(e, cases[i].words), "%s: error does not say '%s': '%s'",
              cases[i].name, cases[i].words, e);
    }
}

TEST(config_cli_dry_run_prints_the_plan_and_errors_exit_nonzero)
{
    char out[8192];
    const char *good = write_scratch("dry.lua", "sweep \"d\" { algos = { \"naive_sort\" }, "
                                                "vocab = { 64, 128 }, batch = 2 }\n");
    CHECK(run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), good) == 0 &&
              strstr(out, "2 cells") && strstr(out, "V=128"),
          "dry run did not print the plan: %s", out);
    const char *bad = write_scratch("bad.lua", "sweep \"d\" { algos = 3, vocab = 1, batch = 1 }\n");
    CHECK(run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(), bad) != 0 &&
              strstr(out, "bad.lua:1:"),
          "a bad config must exit non-zero naming file:line: %s", out);
}

TEST(config_sees_the_backend_of_the_run)
{
    const char *path = write_scratch("backend.lua",
                                     "sweep \"b\" { algos = { \"naive_sort\" }, vocab = 10,\n"
                                     "  batch = backend == \"gpu\" and { 1, 2, 4 } or 1 }\n");
    struct tkp_plan plan;
    struct tkp_error err;
    REQUIRE(tkp_config_load(path, TKP_CPU, &plan, &err) == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 1, "cpu: expected 1 cell, got %zu", plan.n);
    tkp_plan_free(&plan);
    REQUIRE(tkp_config_load(path, TKP_GPU, &plan, &err) == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 3, "gpu: expected 3 cells, got %zu", plan.n);
    tkp_plan_free(&plan);
}

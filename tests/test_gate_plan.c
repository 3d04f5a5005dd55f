/* test_gate_plan.c — a plan has each cell once, and a config is UTF-8 text (docs/ROBUSTNESS.md,
 * "Duplicates" and "Text that enters"): repeated values, a sweep called twice through a local
 * name, and algorithm entries that resolve to the same options plan each cell once with a
 * note; a run stores each once and --resume adds nothing; a UTF-8 BOM is skipped, a UTF-16 one
 * and a directory are refused by name. */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "cli_util.h"
#include "test.h"

/* The plan of `text`: its cell count, or -1 (the error into err). */
static long plan_cells(const char *name, const char *text, struct tkp_error *err)
{
    struct tkp_plan plan;
    if (tkp_config_load(write_scratch(name, text), TKP_CPU, &plan, err))
        return -1;
    const long n = (long)plan.n;
    tkp_plan_free(&plan);
    return n;
}

#define T " timing = { max_reps = 2, min_reps = 1 }"

TEST(gate_plan_has_each_cell_once)
{
    static const struct {
        const char *what, *text;
        long cells;
    } cases[] = {
        { "repeated values", "sweep \"a\" { algos = \"naive_sort\", vocab = { 10, 10, 12 }, batch = 1,"
                             " k = { 3, 3 } }\n", 2 },
        { "a sweep called twice", "local s = sweep \"a\"\ns { algos = \"naive_sort\", vocab = 10, "
                                  "batch = 1, k = { 1, 2 } }\ns { algos = \"naive_sort\", vocab = 10,"
                                  " batch = 1, k = { 2, 3 } }\n", 3 },
        { "entries with the same options", "sweep \"a\" { algos = { \"rtopk\", { \"rtopk\" }, { "
                                           "\"rtopk\", max_iter = 0 } }, vocab = 10, batch = 1 }\n", 1 },
        { "the same cell in two sweeps", "sweep \"a\" { algos = \"naive_sort\", vocab = 10, batch = 1 }\n"
                                         "sweep \"b\" { algos = \"naive_sort\", vocab = 10, batch = 1 }\n", 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tkp_error err = { "" };
        const long n = plan_cells("dup.lua", cases[i].text, &err);
        CHECK(n == cases[i].cells, "%s: %ld cells, want %ld (%s)", cases[i].what, n, cases[i].cells,
              err.msg);
    }
    char out[1 << 14], path[1024];
    const char *cfg = write_scratch("dup_run.lua", "local s = sweep \"a\"\ns { algos = \"naive_sort\","
                                    " vocab = { 10, 10 }, batch = 1," T " }\ns { algos = \"naive_sort\","
                                    " vocab = 10, batch = 1," T " }\n");
    CHECK(run_into(cfg, "dup", "", path, sizeof path) == 0, "the run failed");
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --dry-run", topkp_bin(), cfg, path) == 0 &&
              strstr(out, "note: ") && strstr(out, "3 times") && strstr(out, "runs once"),
          "no note names the merged cell: %s", out);
    const int rows = export_without(path, timing_columns, out, sizeof out);
    CHECK(rows == 1, "the file holds %d rows, want 1: %s", rows, out);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu --resume", topkp_bin(), cfg, path) == 0 &&
              export_without(path, timing_columns, out, sizeof out) == 1,
          "--resume changed the file to %d rows", export_without(path, timing_columns, out, sizeof out));
}

TEST(gate_config_encoding_and_kind)
{
    struct tkp_error err = { "" };
    CHECK(plan_cells("bom.lua", "\xef\xbb\xbfsweep \"a\" { algos = \"naive_sort\", vocab = 10, batch = 1 }\n",
                     &err) == 1, "a UTF-8 BOM is not skipped: %s", err.msg);
    CHECK(plan_cells("u16.lua", "\xff\xfes\0w\0", &err) < 0 && strstr(err.msg, "UTF-16 LE byte-order mark"),
          "a UTF-16 BOM: %s", err.msg);
    CHECK(plan_cells("latin1.lua", "-- caf\xe9\nsweep \"a\" { algos = \"naive_sort\", vocab = 10, batch = 1 }\n",
                     &err) < 0 && strstr(err.msg, "line 1, byte 7 is \\xE9: not UTF-8"),
          "a Latin-1 byte: %s", err.msg);
    struct tkp_plan plan;
    CHECK(tkp_config_load(scratch_dir(), TKP_CPU, &plan, &err) != 0 &&
              strstr(err.msg, "is a directory"), "a directory as the config: %s", err.msg);
}

/* test_timing_graph.c — graph mode's config and results on any machine (docs/DESIGN.md, "A run,
 * step by step"): `timing = { graph = true }` puts graph = 1 in every cell of its sweep, the
 * graph axis lists eager and graph cells side by side (the key says graph only when on),
 * both spellings in one sweep are refused naming them, the CPU backend records its graph cells
 * as `unsupported` (never timed eagerly) beside its timed eager ones in the graph column, and
 * files written before the column read it as 0. The replays themselves: test_gpu_graph.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "peers_util.h"
#include "plan.h"
#include "results.h"
#include "test.h"

/* Load a config; 0 with *plan filled, or the error into err. */
static int load(const char *name, const char *text, struct tkp_plan *plan, struct tkp_error *err)
{
    err->msg[0] = 0;
    return tkp_config_load(write_scratch(name, text), TKP_CPU, plan, err);
}

TEST(graph_timing_flag_puts_graph_in_every_cell)
{
    struct tkp_plan plan;
    struct tkp_error err;
    REQUIRE(load("g1.lua",
                 "sweep \"s\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 100, batch = 2,\n"
                 "  k = { 5, 7 }, timing = { graph = true } }\n",
                 &plan, &err) == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 4, "%zu cells, want 4", plan.n);
    for (size_t i = 0; i < plan.n; i++) {
        char key[TKP_RESULT_KEY_BYTES];
        tkp_cell_key(&plan.cells[i], TKP_GPU, key);
        CHECK(plan.cells[i].graph == 1 && strstr(key, "|1|gpu"), "cell %zu: graph %d, key %s",
              i, plan.cells[i].graph, key);
    }
    tkp_plan_free(&plan);
}

TEST(graph_axis_lists_eager_and_graph_cells)
{
    struct tkp_plan plan;
    struct tkp_error err;
    REQUIRE(load("g2.lua",
                 "sweep \"s\" { algos = \"naive_sort\", vocab = 100, batch = 2, k = 5,\n"
                 "  graph = { 0, 1 }, where = function(c) return c.graph >= 0 end }\n",
                 &plan, &err) == TKP_OK, "%s", err.msg);
    REQUIRE(plan.n == 2, "%zu cells, want 2", plan.n);
    char k0[TKP_RESULT_KEY_BYTES], k1[TKP_RESULT_KEY_BYTES];
    tkp_cell_key(&plan.cells[0], TKP_GPU, k0);
    tkp_cell_key(&plan.cells[1], TKP_GPU, k1);
    CHECK(plan.cells[0].graph == 0 && plan.cells[1].graph == 1, "graph %d, %d",
          plan.cells[0].graph, plan.cells[1].graph);
    /* quiet: the eager key is the key of every file written before the axis */
    CHECK(strcmp(k0, "naive_sort|||gaussian|100|2|5|1|1|1|gpu") == 0, "eager key %s", k0);
    CHECK(strcmp(k1, "naive_sort|||gaussian|100|2|5|1|1|1|1|gpu") == 0, "graph key %s", k1);
    tkp_plan_free(&plan);
}

TEST(graph_both_spellings_in_one_sweep_are_refused)
{
    struct tkp_plan plan;
    struct tkp_error err;
    int rc = load("g3.lua",
                  "sweep \"s\" { algos = \"naive_sort\", vocab = 100, batch = 2, k = 5,\n"
                  "  graph = 0, timing = { graph = true } }\n",
                  &plan, &err);
    CHECK(rc != TKP_OK && strstr(err.msg, "g3.lua:") &&
              strstr(err.msg, "timing.graph and the graph axis"),
          "both spellings: rc %d, %s", rc, err.msg);
    if (rc == TKP_OK)
        tkp_plan_free(&plan);
    rc = load("g4.lua", "sweep \"s\" { algos = \"naive_sort\", vocab = 100, batch = 2,\n"
                        "  graph = 2 }\n", &plan, &err);
    CHECK(rc != TKP_OK && strstr(err.msg, "graph"), "graph = 2: rc %d, %s", rc, err.msg);
    if (rc == TKP_OK)
        tkp_plan_free(&plan);
}

/* Field `col` of the export's data row whose column `by` is `value` (first match). */
static void row_field(const char *tsv, const char *by, const char *value, const char *col,
                      char *out, size_t n)
{
    const int c_by = tsv_column(tsv, by), c = tsv_column(tsv, col);
    out[0] = 0;
    for (const char *line = strchr(tsv, '\n'); c >= 0 && c_by >= 0 && line && line[1];
         line = strchr(line + 1, '\n')) {
        char v[64];
        tsv_field(line + 1, c_by, v, sizeof v);
        if (strcmp(v, value) == 0) {
            tsv_field(line + 1, c, out, n);
            return;
        }
    }
}

TEST(graph_cpu_cells_are_unsupported_beside_timed_eager_ones)
{
    char path[512], out[1 << 15], f[320];
    const char *cfg = write_scratch("gcpu.lua",
                                    "sweep \"s\" { algos = \"naive_sort\", vocab = 300, batch = 2,\n"
                                    "  k = 5, graph = { 0, 1 },\n"
                                    "  timing = { min_reps = 2, max_reps = 3 } }\n");
    REQUIRE(run_into(cfg, "gcpu", "", path, sizeof path) == 0, "run failed");
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), path) == 0, "%s", out);
    row_field(out, "graph", "0", "status", f, sizeof f);
    CHECK(strcmp(f, "ok") == 0, "eager cell: status %s", f);
    row_field(out, "graph", "0", "n_samples", f, sizeof f);
    CHECK(atoi(f) >= 2, "eager cell: %s samples", f);
    row_field(out, "graph", "1", "status", f, sizeof f);
    CHECK(strcmp(f, "unsupported") == 0, "graph cell on the CPU: status '%s'", f);
    row_field(out, "graph", "1", "message", f, sizeof f);
    CHECK(strstr(f, "CUDA graph") && strstr(f, "CPU"), "graph cell's message: %s", f);
    row_field(out, "graph", "1", "n_samples", f, sizeof f);
    CHECK(atoi(f) == 0, "graph cell on the CPU: %s samples (timed eagerly?)", f);
}

TEST(graph_column_reads_0_in_files_written_before_it)
{
    char out[1 << 16];
    const char *old = "results/h200/table1_hitrate.h5";
    REQUIRE(run_cmd(out, sizeof out, "%s export %s 2>/dev/null | head -3", topkp_bin(), old) == 0, "%s",
            out);
    const int c = tsv_column(out, "graph");
    REQUIRE(c >= 0, "export of %s has no graph column:\n%.300s", old, out);
    char v[16];
    tsv_field(strchr(out, '\n') + 1, c, v, sizeof v);
    CHECK(strcmp(v, "0") == 0, "%s: graph '%s' in a file written before the column", old, v);
}

/* The worker's side (peers/worker.py, docs/PEERS.md "Graph mode"): `graph` on a cell opened on
 * the CPU answers unsupported with the reason (the harness itself refuses CPU graph cells before
 * any request; this is the worker's own guard). */
TEST(graph_worker_refuses_capture_without_cuda)
{
    if (!torch_ready())
        return;
    float rows[2][8] = { { 1, 5, 2, 8, 3, 0, 7, 4 }, { 9, 1, 1, 2, 6, 3, 5, 0 } };
    char path[600], out[4096];
    snprintf(path, sizeof path, "%s/graph-worker.f32", scratch_dir());
    FILE *f = fopen(path, "wb");
    REQUIRE(f && fwrite(rows, sizeof rows, 1, f) == 1 && fclose(f) == 0, "cannot write %s", path);
    const int rc = run_cmd(out, sizeof out,
                           "printf 'open\\tpeer=torch.topk\\tlogits=%s\\trows=2\\tdevice=cpu\\t"
                           "flush_bytes=0\\tvocab=8\\tbatch=2\\tk=3\\tp=1\\tseed=1\\tdtype=f32\\t"
                           "graph=1\\toptions=\\ngraph\\nquit\\n' | " PYTHON " peers/worker.py",
                           path);
    CHECK(rc == 0 && strstr(out, "ok\tcrc=") && strstr(out, "unsupported\tmsg=torch.topk: "
                                                             "graph = 1 needs CUDA"),
          "worker: rc %d, replies:\n%s", rc, out);
}

/* test_peers.c — the peer bridge on the CPU (docs/PEERS.md), through `topkp run`: the Python
 * catalog and the C table name the same peers; torch's peers get the modules' very logits,
 * are timed under the run's policy and are judged by the oracle (exact where they should be,
 * their wrong rows reported where they are not); a peer that raises, hangs, exits or is
 * missing becomes a row and the sweep goes on (16-bit logits: test_peers_16bit.c). Skipped
 * when /usr/bin/python3 lacks torch (scripts/install-python-deps.sh installs it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../algos/tkp.h"
#include "axes.h"
#include "peer_cell.h"
#include "peer_worker.h"
#include "peers.h"
#include "timing.h"
#include "cli_util.h"
#include "test.h"
#include "peers_util.h"

/* docs/PEERS.md's table row of `peer` ends with its 16-bit column, which starts with the
 * catalog's cast (native or float32). */
static void check_cast_documented(const char *doc, const char *peer, const char *cast)
{
    char head[96];
    snprintf(head, sizeof head, "\n| `%s` |", peer);
    const char *row = doc ? strstr(doc, head) : NULL;
    const char *end = row ? strchr(row + 1, '\n') : NULL;
    const char *last = NULL;
    for (const char *q = row ? row + 1 : NULL; q && q < end; q++)
        if (*q == '|' && q + 1 < end && q[1] == ' ' && q + 2 < end && q[2] != '|')
            last = q + 2; /* the start of the row's last cell so far */
    CHECK(last && strncmp(last, cast, strlen(cast)) == 0,
          "docs/PEERS.md's row of %s does not give its 16-bit logits as %s", peer, cast);
}

TEST(peers_python_catalog_names_the_c_peers)
{
    if (!torch_ready())
        return;
    char out[1 << 16], names[4096];
    REQUIRE(run_cmd(names, sizeof names, PYTHON " -c 'import sys; sys.path.insert(0, \"peers\"); "
                    "import catalog; print(\" \".join(p.name + \":\" + \",\".join(p.devices) "
                    "+ \":\" + p.cast for p in catalog.PEERS))'") == 0,
            "cannot import peers/catalog.py: %s", names);
    char *doc = NULL;
    size_t doc_len = 0;
    FILE *doc_file = open_memstream(&doc, &doc_len), *src = fopen("docs/PEERS.md", "r");
    for (int ch; src && (ch = fgetc(src)) != EOF;)
        fputc(ch, doc_file);
    if (src)
        fclose(src);
    fclose(doc_file);
    int n_py = 0;
    for (char *save, *w = strtok_r(names, " \n", &save); w; w = strtok_r(NULL, " \n", &save), n_py++) {
        char *devices = strchr(w, ':'), *cast = devices ? strchr(devices + 1, ':') : NULL;
        REQUIRE(devices && cast, "catalog line %s", w);
        *devices++ = 0;
        *cast++ = 0;
        check_cast_documented(doc, w, cast);
        const struct tkp_algo *a = tkp_algo_find(w);
        CHECK(a && (a->flags & TKP_PEER) && tkp_peer_of(a) && tkp_peer_of(a)->package,
              "peers/catalog.py names %s, which harness/module/peers.c lacks", w);
        CHECK(!a || !!(tkp_algo_backends(a) & TKP_CPU) == !!strstr(devices, "cpu"),
              "%s: peers.c and catalog.py disagree on the CPU backend (catalog: %s)", w, devices);
        CHECK(!a || !!(tkp_algo_backends(a) & TKP_GPU) == !!strstr(devices, "cuda"),
              "%s: peers.c and catalog.py disagree on the GPU backend (catalog: %s)", w, devices);
    }
    int n_c = 0; /* the bridged ones: a native peer has no Python (cub.topk) */
    for (int i = 0; tkp_peers[i]; i++)
        n_c += tkp_peer_bridged(&tkp_peers[i]->algo);
    free(doc);
    CHECK(n_py == n_c, "catalog.py has %d peers, peers.c %d", n_py, n_c);
    REQUIRE(run_cmd(out, sizeof out, "TOPKP_PYTHON=" PYTHON " %s list", topkp_bin()) == 0, "%s", out);
    for (int i = 0; tkp_peers[i]; i++) {
        char line[128];
        snprintf(line, sizeof line, "  %s ", tkp_peers[i]->algo.name);
        const char *at = strstr(out, line);
        if (!tkp_peer_bridged(&tkp_peers[i]->algo)) {
            CHECK(at && strstr(at, "    native (no Python): "), "`topkp list` does not say "
                  "whether the native peer %s is built here", tkp_peers[i]->algo.name);
            continue;
        }
        CHECK(at && strstr(at, "importable here: ") && strstr(at, "package="),
              "`topkp list` does not show %s with its package and importability",
              tkp_peers[i]->algo.name);
        const char *next = at ? strstr(at + 1, "\n  ") : NULL; /* past its own lines */
        while (next && next[3] == ' ')
            next = strstr(next + 1, "\n  ");
        const char *cast = at ? strstr(at, "\n    16-bit logits: ") : NULL;
        CHECK(cast && (!next || cast < next), "`topkp list` does not say what %s does with 16-bit "
              "logits", tkp_peers[i]->algo.name);
    }
    CHECK(strstr(out, "importable here: yes (torch "), "torch.sort should import here:\n%s", out);
}

static const char *exact_config =
    "sweep \"exact\" {\n"
    "  algos = { \"naive_sort\", \"torch.sort\", \"torch.sample\", \"torch.topk\" },\n"
    "  dataset = \"gaussian\", vocab = 3001, batch = 8, k = { 0, 50 }, p = { 0.9, 1.0 },\n"
    "  where = function(c) return c.mode ~= \"none\" end, verify = 8, draws = 64,\n"
    "  timing = { warmup = 1, min_reps = 4, max_reps = 6, max_seconds = 5 },\n"
    "}\n";

TEST(peers_torch_cells_are_timed_and_exact_on_the_modules_logits)
{
    if (!torch_ready())
        return;
    char log[1 << 16];
    REQUIRE(run_peers("exact", "", exact_config, log, sizeof log) == 0, "run failed: %s", log);
    const char *modes[] = { "topk", "topp", "topk_topp" };
    for (int m = 0; m < 3; m++) {
        for (int a = 0; a < 2; a++) {
            const char *algo = a ? "torch.sample" : "torch.sort";
            char status[32], message[300];
            cell_field(algo, NULL, modes[m], "status", status, sizeof status);
            cell_field(algo, NULL, modes[m], "message", message, sizeof message);
            CHECK(strcmp(status, "ok") == 0 && !message[0], "%s %s: %s %s", algo, modes[m], status,
                  message);
            CHECK(cell_int(algo, NULL, modes[m], "rows_checked") == 8 &&
                      cell_int(algo, NULL, modes[m], "rows_exact") == 8,
                  "%s %s: %lld of %lld rows exact", algo, modes[m],
                  cell_int(algo, NULL, modes[m], "rows_exact"),
                  cell_int(algo, NULL, modes[m], "rows_checked"));
            long long reps = cell_int(algo, NULL, modes[m], "n_samples");
            CHECK(reps >= 4 && reps <= 6, "%s %s: %lld repetitions, the policy asks 4..6", algo,
                  modes[m], reps);
            char median[32];
            cell_field(algo, NULL, modes[m], "median_us", median, sizeof median);
            CHECK(atof(median) > 0, "%s %s: median %s", algo, modes[m], median);
        }
    }
    char status[32], message[300];
    cell_field("torch.topk", NULL, "topk", "status", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "torch.topk top-k: %s", status);
    cell_field("torch.topk", NULL, "topp", "message", message, sizeof message);
    CHECK(strstr(message, "cannot do this problem"), "torch.topk top-p should be unsupported: %s",
          message);
}

TEST(peers_wrong_rows_are_reported_not_hidden)
{
    if (!torch_ready())
        return;
    /* bf16 rows are full of ties: torch.topk does not keep the lower indices of a tied k-th
     * value, which the contract asks for; the cell stays ok and says which row differs */
    char log[1 << 16];
    const char *cfg = "sweep \"ties\" { algos = { \"torch.topk\" }, dataset = \"bf16\", vocab = 4096,\n"
                      "  batch = 16, k = 50, p = 1.0, verify = 16,\n"
                      "  timing = { warmup = 0, min_reps = 1, max_reps = 1 } }\n";
    REQUIRE(run_peers("ties", "", cfg, log, sizeof log) == 0, "run failed: %s", log);
    EXPECT_CELL("ties", "torch.topk", "ok", "differ from the oracle; row ");
    long long exact = cell_int("torch.topk", NULL, NULL, "rows_exact");
    CHECK(exact >= 0 && exact < 16, "rows_exact %lld: expected some tied rows to differ", exact);
}

TEST(peers_input_check_catches_other_logits)
{
    if (!torch_ready())
        return;
    char log[1 << 16];
    const char *cfg = "sweep \"crc\" { algos = { \"torch.sort\" }, dataset = \"gaussian\",\n"
                      "  vocab = 1000, batch = 2, k = 50, p = 1.0 }\n";
    REQUIRE(run_peers("crc", "TOPKP_PEER_FAULT=crc", cfg, log, sizeof log) == 0, "%s", log);
    EXPECT_CELL("crc", "torch.sort", "error", "read other logits than the modules");
}

/* A faulty first peer cell, then a sound peer cell and a module: the fault is a row, the
 * worker comes back for the next cell, and the run ends in time. Only the faulty cell has a
 * short time limit, and not too short: the limit covers the worker's `open` too, whose torch
 * import took more than 3 s on the CI machine under the sanitizer build. */
static void check_fault(const char *fault, const char *expect)
{
    char env[128], log[1 << 16];
    snprintf(env, sizeof env, "TOPKP_PEER_FAULT=%s:torch.topk", fault);
    const char *cfg = "sweep \"fault\" { algos = { \"torch.topk\" },\n"
                      "  dataset = \"gaussian\", vocab = 1000, batch = 2, k = 50, p = 1.0,\n"
                      "  timing = { warmup = 1, min_reps = 2, max_reps = 2, timeout = 20 } }\n"
                      "sweep \"after\" { algos = { \"torch.sort\", \"naive_sort\" },\n"
                      "  dataset = \"gaussian\", vocab = 1000, batch = 2, k = 50, p = 1.0,\n"
                      "  timing = { warmup = 1, min_reps = 2, max_reps = 2 } }\n";
    double t0 = tkp_now_us();
    REQUIRE(run_peers("fault", env, cfg, log, sizeof log) == 0, "%s: run failed: %s", fault, log);
    double seconds = (tkp_now_us() - t0) * 1e-6;
    EXPECT_CELL(fault, "torch.topk", "error", expect);
    EXPECT_CELL(fault, "torch.sort", "ok", NULL);
    EXPECT_CELL(fault, "naive_sort", "ok", NULL);
    CHECK(seconds < 120, "%s: the run took %.0f s", fault, seconds);
}

TEST(peers_raise_hang_and_exit_become_error_rows)
{
    if (!torch_ready())
        return;
    check_fault("raise", "RuntimeError: TOPKP_PEER_FAULT=raise");
    check_fault("hang", "did not answer `rep` within the cell's time limit");
    check_fault("exit", "the peer worker died during `rep` (exited with status 3)");
    check_fault("orphan", "the peer worker died during `rep` (exited with status 3)");
}

TEST(peers_a_peer_that_writes_its_input_fails_alone)
{
    if (!torch_ready())
        return;
    /* torch.topk adds 1 to the shared logits: its cell fails, and torch.sort after it, on the
     * same file, gets the harness's logits again and stays exact */
    char log[1 << 16];
    const char *cfg = "sweep \"write\" { algos = { \"torch.topk\", \"torch.sort\" },\n"
                      "  dataset = \"gaussian\", vocab = 1000, batch = 4, k = 50, p = 1.0, verify = 4,\n"
                      "  timing = { warmup = 0, min_reps = 1, max_reps = 1 } }\n";
    REQUIRE(run_peers("write", "TOPKP_PEER_FAULT=write:torch.topk", cfg, log, sizeof log) == 0,
            "%s", log);
    EXPECT_CELL("write", "torch.topk", "error", "wrote into its input logits");
    EXPECT_CELL("write", "torch.sort", "ok", "");
    CHECK(cell_int("torch.sort", NULL, NULL, "rows_exact") == 4, "the next peer is not exact");
}

TEST(peers_kill_9_leaves_no_worker_and_resume_completes)
{
    if (!torch_ready())
        return;
    /* the second cell's peer hangs; topkp is killed with -9 while it waits: the worker must go
     * with it (it would hold the results file open), the next run must remove the scratch
     * folder left behind, and --resume must finish the sweep; killed with SIGTERM, topkp
     * removes its scratch folder itself */
    char out[1 << 16], tmp[600], cfg_text[512], h5[700];
    snprintf(tmp, sizeof tmp, "%s/kill9-tmp", scratch_dir());
    snprintf(h5, sizeof h5, "%s/kill9.h5", scratch_dir());
    snprintf(cfg_text, sizeof cfg_text,
             "sweep \"kill9\" { algos = { \"naive_sort\", \"torch.sort\" }, dataset = \"gaussian\",\n"
             "  vocab = 1000, batch = 2, k = 50, p = 1.0, timing = { timeout = 600 } }\n");
    const char *cfg = write_scratch("kill9.lua", cfg_text);
    const char *marker = "-Xpycache_prefix=/tmp/topkp-kill9-marker";
    const char *pattern = "[X]pycache_prefix=/tmp/topkp-kill9-marker"; /* never matches this shell */
    REQUIRE(run_cmd(out, sizeof out, "rm -rf %s %s; mkdir -p %s; TMPDIR=%s TOPKP_PEER_FAULT=hang "
                    "TOPKP_PYTHON='" PYTHON " %s' %s run %s -o %s --backend cpu >/dev/null 2>&1 & "
                    "echo $!", tmp, h5, tmp, tmp, marker, topkp_bin(), cfg, h5) == 0, "%s", out);
    int pid = atoi(out);
    /* a second shell, whose command line holds only the pattern, not the marker */
    REQUIRE(run_cmd(out, sizeof out, "for i in $(seq 100); do pgrep -f -- '%s' >/dev/null && break; "
                    "sleep 0.2; done; sleep 1; kill -9 %d; sleep 1; pgrep -f -- '%s' || echo no-worker; "
                    "ls %s", pattern, pid, pattern, tmp) == 0, "%s", out);
    CHECK(strstr(out, "no-worker"), "a worker outlived topkp -9: %s", out);
    CHECK(strstr(out, "topkp-peers-"), "expected the killed run's scratch folder in %s: %s", tmp, out);
    REQUIRE(run_cmd(out, sizeof out, "TMPDIR=%s TOPKP_PYTHON=" PYTHON " %s run %s -o %s --backend cpu "
                    "--resume && %s export %s && ls %s | wc -l", tmp, topkp_bin(), cfg, h5,
                    topkp_bin(), h5, tmp) == 0, "resume failed: %s", out);
    CHECK(strstr(out, "torch.sort") && strstr(out, "\tok\t"), "resume did not run torch.sort: %s", out);
    CHECK(out[strlen(out) - 2] == '0', "the stale scratch folder is still in %s: %s", tmp, out);
    /* SIGTERM (what `timeout` sends): the worker and the scratch folder go at once */
    REQUIRE(run_cmd(out, sizeof out, "rm -f %s; TMPDIR=%s TOPKP_PEER_FAULT=hang TOPKP_PYTHON='" PYTHON
                    " %s' %s run %s -o %s --backend cpu >/dev/null 2>&1 & echo $!", h5, tmp, marker,
                    topkp_bin(), cfg, h5) == 0, "%s", out);
    pid = atoi(out);
    REQUIRE(run_cmd(out, sizeof out, "for i in $(seq 100); do pgrep -f -- '%s' >/dev/null && break; "
                    "sleep 0.2; done; sleep 1; kill -TERM %d; sleep 1; pgrep -f -- '%s' || echo no-worker; "
                    "ls %s | wc -l", pattern, pid, pattern, tmp) == 0, "%s", out);
    CHECK(strstr(out, "no-worker") && out[strlen(out) - 2] == '0',
          "after SIGTERM a worker or the scratch folder is left: %s", out);
}

TEST(peers_missing_package_or_python_is_a_row)
{
    if (!torch_ready())
        return;
    char log[1 << 16];
    const char *cfg = "sweep \"missing\" { algos = { \"vllm.pytorch\", \"naive_sort\" },\n"
                      "  dataset = \"gaussian\", vocab = 1000, batch = 2, k = 50, p = 1.0 }\n";
    /* -S: no site-packages, so a vllm installed here is hidden; torch is then missing too */
    REQUIRE(run_peers("missing", "TOPKP_PYTHON='" PYTHON " -S'", cfg, log, sizeof log) == 0, "%s", log);
    EXPECT_CELL("-S", "vllm.pytorch", "unsupported", "cannot be imported");
    EXPECT_CELL("-S", "naive_sort", "ok", NULL);
    REQUIRE(run_peers("missing", "TOPKP_PYTHON=/nonexistent/python", cfg, log, sizeof log) == 0,
            "%s", log);
    EXPECT_CELL("no python", "vllm.pytorch", "error", "cannot start the peer worker");
}

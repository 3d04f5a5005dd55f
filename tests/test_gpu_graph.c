/* test_gpu_graph.c — the timer's graph mode on the GPU (docs/DESIGN.md, "A run, step by step"):
 * for every module with GPU code and every native peer built here, the call captured once
 * (tkp_graph_capture, harness/measure/timing_graph.c) and replayed over poisoned outputs gives
 * the eager call's kept mask and draws, byte for byte, replay after replay; and a `topkp run`
 * whose sweep lists graph = {1, 0} records the column, judges the replays' outputs like the
 * eager ones, and runs each eager cell's own call after a graph cell (the timer drops the
 * graph). Every test skips when no GPU is present. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "cases.h"
#include "cli_util.h"
#include "gpu.h"
#include "peers.h"
#include "test.h"
#include "timing_graph.h"

/* The outputs of one call on the host: eager (timer NULL) or a replay of its graph. */
static int call_once(struct tkp_gpu_timer *timer, struct tkp_instance_call *ctx,
                     struct tkp_staged *st, size_t kept_bytes, size_t sample_bytes,
                     struct tkp_error *err)
{
    int rc = TKP_OK;
    if (kept_bytes)
        rc = tkp_gpu_fill(st->io.kept, 0xAB, kept_bytes, err); /* poison */
    if (!rc && sample_bytes)
        rc = tkp_gpu_fill(st->io.samples, 0xAB, sample_bytes, err);
    double us, mhz;
    if (!rc)
        rc = timer ? tkp_gpu_time(timer, 1, tkp_instance_call_launch, ctx, &us, &mhz, err)
                   : tkp_instance_call_launch(ctx, err);
    if (!rc)
        rc = tkp_gpu_sync(err);
    return rc ? rc : tkp_staged_fetch(st, err);
}

static void replay_equals_eager(const void *arg)
{
    REQUIRE_GPU();
    const struct tkp_algo *a = arg;
    struct test_case c;
    case_gaussian(&c, 40, 12, 40000, 2.0f);
    for (int64_t r = 0; r < c.b.batch; r++) /* one k a batch: native peers take k_max */
        c.b.k[r] = 50, c.b.p[r] = (a->ops & TKP_TOPK_TOPP) ? 0.9f : 1.0f;
    const int32_t draws = (a->outputs & TKP_OUT_SAMPLE) ? 2 : 0;
    const size_t kb = (a->outputs & TKP_OUT_SET) ? (size_t)(c.b.batch * c.b.vocab) : 0;
    const size_t sb = sizeof(int64_t) * (size_t)(c.b.batch * draws);
    uint8_t *kept = kb ? malloc(kb) : NULL, *kept_eager = kb ? malloc(kb) : NULL;
    int64_t *drawn = sb ? malloc(sb) : NULL, *drawn_eager = sb ? malloc(sb) : NULL;
    const unsigned outputs = (kb ? TKP_OUT_SET : 0u) | (sb ? TKP_OUT_SAMPLE : 0u);
    struct tkp_problem pb = tkp_problem_of(&c.b, TKP_GPU, outputs, draws);
    struct tkp_error err = { "" };
    struct tkp_instance in;
    struct tkp_staged st;
    struct tkp_gpu_timer *timer = NULL;
    int rc = tkp_instance_open(&in, a, NULL, &pb, &err), opened = rc == TKP_OK, staged = 0;
    if (rc == TKP_EUNSUPPORTED && tkp_peer_of(a)) { /* a native peer not built here */
        test_skip(err.msg);
        goto out;
    }
    if (!rc && !(rc = tkp_stage(&st, &c.b, TKP_GPU, kept, drawn, draws, 7, 0, &err)))
        staged = 1;
    struct tkp_instance_call ctx = { &in, &st.io };
    if (!rc)
        rc = call_once(NULL, &ctx, &st, kb, sb, &err);
    if (kb && !rc)
        memcpy(kept_eager, kept, kb);
    if (sb && !rc)
        memcpy(drawn_eager, drawn, sb);
    if (!rc)
        rc = tkp_gpu_timer_open(&timer, &err);
    if (!rc)
        rc = tkp_graph_capture(timer, tkp_instance_call_launch, &ctx, a->name, &err);
    for (int rep = 0; !rc && rep < 3; rep++) {
        rc = call_once(timer, &ctx, &st, kb, sb, &err);
        CHECK(rc || !kb || memcmp(kept, kept_eager, kb) == 0,
              "%s: graph replay %d's kept mask differs from the eager call's", a->name, rep);
        CHECK(rc || !sb || memcmp(drawn, drawn_eager, sb) == 0,
              "%s: graph replay %d's draws differ from the eager call's", a->name, rep);
    }
    CHECK(rc == TKP_OK, "%s: eager call, capture or replay: %s", a->name, err.msg);
    tkp_graph_release(timer);
    tkp_gpu_timer_close(timer);
out:
    if (staged)
        tkp_staged_release(&st);
    if (opened)
        tkp_instance_close(&in);
    free(kept), free(kept_eager), free(drawn), free(drawn_eager);
    free(c.b.logits), free(c.b.k), free(c.b.p);
}

/* `topkp run` of `config` on the GPU into scratch/<name>.h5, then its export into out; 0 when
 * both succeeded (else the failing command's output stays in out). */
static int run_and_export(const char *name, const char *config, char *out, size_t n)
{
    char cfg[80], path[512];
    snprintf(cfg, sizeof cfg, "%s.lua", name);
    snprintf(path, sizeof path, "%s/%s.h5", scratch_dir(), name);
    if (run_cmd(out, n, "%s run %s -o %s --backend gpu", topkp_bin(), write_scratch(cfg, config),
                path))
        return -1;
    return run_cmd(out, n, "%s export %s", topkp_bin(), path) ? -1 : 0;
}

/* One sweep over every module and cub.topk, graph = {1, 0}: the eager cell after each graph
 * cell runs its own call (a stale graph would write another module's outputs). */
static const char *run_config =
    "sweep \"g\" {\n"
    "  algos = { \"naive_sort\", \"rtopk\", \"qrita\", \"cake\", \"rejection\", \"cub.topk\" },\n"
    "  dataset = \"gaussian\", vocab = 32768, batch = 16, k = 50, draws = 8,\n"
    "  graph = { 1, 0 }, verify = 16,\n"
    "  timing = { warmup = 1, min_reps = 3, max_reps = 5 },\n"
    "}\n";

TEST(gpu_graph_run_records_the_column_and_judges_the_replays)
{
    REQUIRE_GPU();
    char out[1 << 16];
    REQUIRE(run_and_export("graph", run_config, out, sizeof out) == 0, "run or export: %s", out);
    const int c_algo = tsv_column(out, "algo"), c_graph = tsv_column(out, "graph"),
              c_status = tsv_column(out, "status"), c_msg = tsv_column(out, "message");
    REQUIRE(c_algo >= 0 && c_graph >= 0 && c_status >= 0, "export lacks algo/graph/status");
    int rows[2] = { 0, 0 };
    for (const char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char algo[64], graph[8], status[32], msg[300];
        tsv_field(line + 1, c_algo, algo, sizeof algo);
        tsv_field(line + 1, c_graph, graph, sizeof graph);
        tsv_field(line + 1, c_status, status, sizeof status);
        tsv_field(line + 1, c_msg, msg, sizeof msg);
        rows[atoi(graph) == 1]++;
        const int unbuilt = strcmp(algo, "cub.topk") == 0 && strstr(msg, "not in this build");
        CHECK(strcmp(status, "ok") == 0 || unbuilt, "%s graph=%s: %s %s", algo, graph, status,
              msg);
        CHECK(strcmp(algo, "cub.topk") == 0 || !msg[0], "%s graph=%s: %s", algo, graph, msg);
    }
    CHECK(rows[0] == 6 && rows[1] == 6, "%d eager and %d graph rows, want 6 each", rows[0],
          rows[1]);
}

/* The Python peers in graph mode (docs/PEERS.md, "Graph mode"): a graph cell is ok, timed as
 * replays and judged on the replay's outputs, or unsupported saying why; torch.topk, which
 * captures, is ok wherever its eager cell is. Uses the interpreter of TOPKP_PYTHON. */
static const char *peer_config =
    "sweep \"p\" {\n"
    "  algos = { \"torch.topk\", \"torch.sort\", \"flashinfer.topk\", \"vllm.triton\" },\n"
    "  dataset = \"gaussian\", vocab = 32768, batch = 16, k = 50, graph = { 1, 0 },\n"
    "  verify = 16, timing = { warmup = 1, min_reps = 3, max_reps = 5 },\n"
    "}\n";

TEST(gpu_graph_peers_replay_or_say_why)
{
    REQUIRE_GPU();
    char out[1 << 16];
    REQUIRE(run_and_export("graph_peers", peer_config, out, sizeof out) == 0,
            "run or export: %s", out);
    const int c_algo = tsv_column(out, "algo"), c_graph = tsv_column(out, "graph"),
              c_status = tsv_column(out, "status"), c_msg = tsv_column(out, "message"),
              c_n = tsv_column(out, "n_samples");
    char topk_status[2][32] = { "", "" };
    for (const char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char algo[64], graph[8], status[32], msg[300], n[32];
        tsv_field(line + 1, c_algo, algo, sizeof algo);
        tsv_field(line + 1, c_graph, graph, sizeof graph);
        tsv_field(line + 1, c_status, status, sizeof status);
        tsv_field(line + 1, c_msg, msg, sizeof msg);
        tsv_field(line + 1, c_n, n, sizeof n);
        const int g = atoi(graph) == 1;
        if (strcmp(algo, "torch.topk") == 0)
            snprintf(topk_status[g], sizeof topk_status[g], "%s", status);
        CHECK(!g || (strcmp(status, "ok") == 0 && atoi(n) > 0) ||
                  (strcmp(status, "unsupported") == 0 && msg[0]),
              "%s graph=1: %s (%s), %s samples", algo, status, msg, n);
    }
    CHECK(strcmp(topk_status[0], "ok") != 0 || strcmp(topk_status[1], "ok") == 0,
          "torch.topk: eager %s but graph %s", topk_status[0], topk_status[1]);
}

__attribute__((constructor)) static void register_gpu_graph(void)
{
    for (int i = 0; tkp_algos[i]; i++)
        test_register_named("gpu_graph_replay_equals_eager_", tkp_algos[i]->name,
                            replay_equals_eager, tkp_algos[i]);
    for (int i = 0; tkp_peers[i]; i++)
        if (tkp_peers[i]->native)
            test_register_named("gpu_graph_replay_equals_eager_", tkp_peers[i]->algo.name,
                                replay_equals_eager, &tkp_peers[i]->algo);
}

/* test_gpu_batch_invariance.c — batch invariance on the GPU, the twin of
 * tests/test_batch_invariance.c: the same checks (tests/batch_invariance.c) on each module's
 * GPU backend (the GPU's draws under per-row keys equal the CPU's through the adversarial
 * suite's row-key cases in check_gpu_matches_cpu); and graph-safe per-row keys: a run captured
 * once into a CUDA graph, replayed after new seeds and offsets are written into the device
 * arrays, draws what an uncaptured CPU run with those seeds draws (docs/SEMANTICS.md,
 * "Sampling: two keying modes"); for a module with min-p, new min_p values written the same way
 * between replays fold into k as the CPU folds them ("min-p"). Every test skips when no GPU is
 * present. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/tkp.h"
#include "gpu.h"
#include "batch_invariance.h"
#include "cases.h"
#include "test.h"

/* min_p of row r at replay rep: off on some rows, small, large and 1 on others, a new mix at
 * every replay (the first row always on, so the problem has min-p when the graph is made). */
static float replay_min_p(size_t r, int rep)
{
    static const float mps[] = { 0.02f, 0.0f, 0.3f, 1e-4f, 0.9f, -1.0f, 1.0f };
    return r == 0 ? 0.05f * (float)(rep + 2) : mps[(r + (size_t)(rep + 1) * 3) % 7];
}

/* Replay `rep` of the graph: new seeds and offsets (and min_p values, when the case has them)
 * written where the captured run reads them, then the draws against the CPU's with the same
 * keys. */
static int replay_once(struct tkp_gpu_timer *timer, struct tkp_instance_call *ctx,
                       struct tkp_staged *st, struct test_case *c, const char *algo,
                       int32_t draws, int rep, int64_t *sg, struct tkp_error *err)
{
    const size_t rows = (size_t)c->b.batch, n = rows * (size_t)draws;
    for (size_t r = 0; r < rows; r++) {
        c->b.seed[r] = 0x9E3779B97F4A7C15ull * (r + 1) * (uint64_t)(rep + 2);
        c->b.offset[r] = UINT64_MAX - r * (uint64_t)rep;
        if (c->b.min_p)
            c->b.min_p[r] = replay_min_p(r, rep);
    }
    int64_t *sc = malloc(sizeof(int64_t) * n);
    int rc = tkp_gpu_upload((void *)st->io.row_seed, c->b.seed, 8 * rows, err);
    if (rc == TKP_OK)
        rc = tkp_gpu_upload((void *)st->io.row_offset, c->b.offset, 8 * rows, err);
    if (rc == TKP_OK && c->b.min_p)
        rc = tkp_gpu_upload((void *)st->io.min_p, c->b.min_p, sizeof(float) * rows, err);
    double us, mhz;
    if (rc == TKP_OK)
        rc = tkp_gpu_time(timer, 0, tkp_instance_call_launch, ctx, &us, &mhz, err);
    if (rc == TKP_OK)
        rc = tkp_staged_fetch(st, err);
    if (rc == TKP_OK)
        rc = tkp_apply(tkp_algo_find(algo), NULL, TKP_CPU, &c->b, NULL, sc, draws, 0, 0, NULL,
                       err);
    CHECK(rc != TKP_OK || memcmp(sc, sg, 8 * n) == 0,
          "%s graph replay %d (seed %llu): the GPU's draws differ from the CPU's with the new "
          "keys%s", algo, rep, (unsigned long long)c->seed,
          c->b.min_p ? " and min_p values" : "");
    free(sc);
    return rc;
}

static void graph_replay_gpu(const void *arg)
{
    REQUIRE_GPU();
    const char *algo = ((const struct tkp_algo *)arg)->name;
    struct test_case c;
    const int32_t draws = 4;
    case_gaussian(&c, 211, 32, 5000, 1.5f);
    cases_fit(arg, &c, 1);
    c.b.seed = calloc((size_t)c.b.batch, 8);
    c.b.offset = calloc((size_t)c.b.batch, 8);
    if (((const struct tkp_algo *)arg)->ops & TKP_MINP) {
        c.b.min_p = malloc(sizeof(float) * (size_t)c.b.batch);
        for (size_t r = 0; r < (size_t)c.b.batch; r++)
            c.b.min_p[r] = replay_min_p(r, -1);
    }
    int64_t *sg = malloc(sizeof(int64_t) * (size_t)(c.b.batch * draws));
    struct tkp_error err = { "" };
    struct tkp_problem pb = tkp_problem_of(&c.b, TKP_GPU, TKP_OUT_SAMPLE, draws);
    struct tkp_instance in;
    struct tkp_staged st;
    struct tkp_gpu_timer *timer = NULL;
    int rc = tkp_instance_open(&in, arg, NULL, &pb, &err), opened = rc == TKP_OK, staged = 0;
    if (rc == TKP_OK && (rc = tkp_stage(&st, &c.b, TKP_GPU, NULL, sg, draws, 0, 0, &err)) == 0)
        staged = 1;
    if (rc == TKP_OK)
        rc = tkp_gpu_timer_open(&timer, &err);
    struct tkp_instance_call ctx = { &in, &st.io };
    if (rc == TKP_OK)
        rc = tkp_gpu_timer_use_graph(timer, tkp_instance_call_launch, &ctx, &err);
    for (int rep = 0; rc == TKP_OK && rep < 3; rep++)
        rc = replay_once(timer, &ctx, &st, &c, algo, draws, rep, sg, &err);
    CHECK(rc == TKP_OK, "%s graph replay with per-row keys: %s", algo, err.msg);
    tkp_gpu_timer_close(timer);
    if (staged)
        tkp_staged_release(&st);
    if (opened)
        tkp_instance_close(&in);
    free(sg);
    free(c.b.logits), free(c.b.k), free(c.b.p), free(c.b.seed), free(c.b.offset), free(c.b.min_p);
}

static void invariant_gpu(const void *arg)
{
    REQUIRE_GPU();
    const struct tkp_algo *a = arg;
    for (uint64_t seed = 1; seed <= 3 && !test_failed(); seed++)
        check_batch_invariance(a->name, TKP_GPU, seed);
}

static void batch_keying_gpu(const void *arg)
{
    REQUIRE_GPU();
    check_batch_keying_depends_on_row(((const struct tkp_algo *)arg)->name, TKP_GPU, 4);
}

__attribute__((constructor)) static void register_gpu_batch_invariance(void)
{
    for (int i = 0; tkp_algos[i]; i++) {
        const struct tkp_algo *a = tkp_algos[i];
        test_register_named("gpu_batch_invariance_", a->name, invariant_gpu, a);
        if (a->outputs & TKP_OUT_SAMPLE) {
            test_register_named("gpu_batch_keying_moves_with_the_row_", a->name,
                                batch_keying_gpu, a);
            test_register_named("gpu_graph_replays_new_row_keys_", a->name, graph_replay_gpu, a);
        }
    }
}

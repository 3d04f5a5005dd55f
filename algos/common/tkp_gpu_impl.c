/* tkp_gpu_impl.c — the GPU implementation (struct tkp_impl, algos/tkp.h) of every module, one
 * row each: the module's plan struct and the plan, run and stats functions of its CUDA launcher
 * (algos/common/gpu_impl.h), plus a GPU-only refusal where the module has one. The state, the
 * bookkeeping of the last run and the glue to the harness are written once here. Compiled only
 * in CUDA builds (Makefile: *_gpu_impl.c); each module's table names its row through
 * TKP_GPU_IMPL. */
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "../cake/cake_gpu.h"
#include "../cake/cake_impl.h"
#include "../naive_sort/naive_sort_gpu.h"
#include "../naive_sort/naive_sort_impl.h"
#include "../qrita/qrita.h"
#include "../qrita/qrita_gpu.h"
#include "../rejection/rejection_gpu.h"
#include "../rejection/rejection_impl.h"
#include "../rtopk/rtopk_gpu.h"
#include "../rtopk/rtopk_impl.h"
#include "gpu_impl.h"

/* Every GPU implementation's state: the last run, then the module's plan (plan_size bytes). */
struct gpu_state {
    int64_t batch;         /* of the problem */
    int64_t rows;          /* of the last run: batch after a run that succeeded, else 0 */
    const void *workspace; /* the last run's device workspace and stream, for stats */
    void *stream;
    alignas(max_align_t) unsigned char plan[];
};

static int gpu_init(tkp_gpu_plan_fn *plan, void *state, const struct tkp_problem *pb,
                    const void *opts, size_t *workspace_bytes, struct tkp_error *err)
{
    struct gpu_state *s = state;
    s->batch = pb->batch;
    s->rows = 0;
    *workspace_bytes = 0;
    return plan(pb, opts, s->plan, workspace_bytes, err);
}

static int gpu_run(tkp_gpu_run_fn *run, void *state, const struct tkp_io *io, void *workspace,
                   void *stream, struct tkp_error *err)
{
    struct gpu_state *s = state;
    s->rows = 0;
    const int rc = run(s->plan, io, workspace, stream, err);
    if (rc == TKP_OK) {
        s->rows = s->batch;
        s->workspace = workspace;
        s->stream = stream;
    }
    return rc;
}

/* Nothing before a run (or after a failed one); the rows alone where the module reports no
 * statistic (stats NULL); nothing when reading them back fails. */
static void gpu_stats(tkp_gpu_stats_fn *stats, const void *state, struct tkp_stats *out)
{
    const struct gpu_state *s = state;
    memset(out, 0, sizeof *out);
    if (!s->rows)
        return;
    if (stats && stats(s->plan, s->workspace, s->stream, out) != TKP_OK) {
        memset(out, 0, sizeof *out);
        return;
    }
    out->rows = s->rows;
}

/* One row of the table: the implementation `sym` from plan struct `plan_t`, the launcher's
 * functions and a GPU-only refusal (NULL: none). Every kernel of every module reads bf16 and
 * fp16 rows, converting exactly as it loads (algos/common/gpu_logits.cuh; docs/SEMANTICS.md,
 * "16-bit logits"). */
#define TKP_GPU_ROW(sym, plan_t, plan_fn, run_fn, stats_fn, supports_fn)                       \
    static int sym##_init(void *state, const struct tkp_problem *pb, const void *opts,          \
                          size_t *workspace_bytes, struct tkp_error *err)                       \
    {                                                                                           \
        return gpu_init(plan_fn, state, pb, opts, workspace_bytes, err);                        \
    }                                                                                           \
    static int sym##_run(void *state, const struct tkp_io *io, void *workspace, void *stream,   \
                         struct tkp_error *err)                                                 \
    {                                                                                           \
        return gpu_run(run_fn, state, io, workspace, stream, err);                              \
    }                                                                                           \
    static void sym##_stats(const void *state, struct tkp_stats *out)                           \
    {                                                                                           \
        gpu_stats(stats_fn, state, out);                                                        \
    }                                                                                           \
    const struct tkp_impl sym = {                                                               \
        .state_size = sizeof(struct gpu_state) + sizeof(plan_t),                                \
        .supports = supports_fn,                                                                \
        .init = sym##_init,                                                                     \
        .run = sym##_run,                                                                       \
        .stats = sym##_stats,                                                                   \
        .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),                             \
    }

/* The table: one row per module with a GPU implementation. A refusal that holds on every
 * backend (cake's slab limit, for one) stays in the module's own supports(). */
TKP_GPU_ROW(tkp_cake_gpu, struct cake_gpu_plan, cake_gpu_plan, cake_gpu_run, NULL, NULL);
TKP_GPU_ROW(tkp_naive_sort_gpu, struct naive_gpu_plan, naive_gpu_plan, naive_gpu_run, NULL, NULL);
TKP_GPU_ROW(tkp_qrita_gpu, struct qrita_gpu_plan, qrita_gpu_plan, qrita_gpu_run, qrita_gpu_stats,
            qrita_gpu_supports);
TKP_GPU_ROW(tkp_rejection_gpu, struct rej_gpu_plan, rej_gpu_plan, rej_gpu_run, rej_gpu_stats,
            NULL);
TKP_GPU_ROW(tkp_rtopk_gpu, struct rtopk_gpu_plan, rtopk_gpu_plan, rtopk_gpu_run, rtopk_gpu_stats,
            NULL);

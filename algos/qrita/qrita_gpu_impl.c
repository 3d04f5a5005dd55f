/* qrita_gpu_impl.c — the GPU implementation of qrita (struct tkp_impl, algos/tkp.h): the glue
 * between the harness and the kernels of qrita_gpu.cu. Compiled only in CUDA builds
 * (Makefile); qrita.c names it through TKP_GPU_IMPL. */
#include <stdint.h>
#include <string.h>

#include "qrita.h"
#include "qrita_gpu.h"

struct qrita_gpu_state {
    struct tkp_problem pb;
    struct qrita_opts opts;
    struct qrita_gpu_plan plan;
    const void *workspace; /* the last run's, for stats() */
    void *stream;          /* and its stream */
};

/* The kernels index a row with 32 bits, and search=sort hands the whole batch to CUB's
 * segmented sort, which counts keys in an int (qrita_gpu_plan keeps the same guard). */
static int qrita_gpu_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    const struct qrita_opts *o = opts;
    if (pb->vocab >= ((int64_t)1 << 31)) {
        *why = "qrita: the GPU kernels index a row with 32 bits";
        return 0;
    }
    if (o->search == QRITA_SORT && pb->batch * pb->vocab > INT32_MAX) {
        *why = "qrita: search=sort on the GPU sorts at most 2^31 - 1 keys per run (batch x "
               "vocab); use a smaller batch";
        return 0;
    }
    return 1;
}

static int qrita_gpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                          size_t *workspace_bytes, struct tkp_error *err)
{
    struct qrita_gpu_state *s = state;
    s->pb = *pb;
    s->opts = *(const struct qrita_opts *)opts;
    s->workspace = NULL;
    s->stream = NULL;
    const struct qrita_opts *o = &s->opts;
    int rc = qrita_gpu_plan(&s->plan, pb->batch, pb->vocab, pb->stride, pb->dtype, pb->ops,
                            pb->k_max,
                            o->truncation, o->search, o->dedup, o->autotune, o->sigma_margin,
                            o->sample_block, o->max_iter, qrita_outlier_capacity(pb->vocab), err);
    *workspace_bytes = s->plan.ws_bytes;
    return rc;
}

static int qrita_gpu_enqueue(void *state, const struct tkp_io *io, void *workspace, void *stream,
                             struct tkp_error *err)
{
    struct qrita_gpu_state *s = state;
    s->workspace = workspace;
    s->stream = stream;
    return qrita_gpu_run(&s->plan, io, workspace, stream, err);
}

/* The statistics of the last run: per-row values summed in row order, as the CPU does. */
static void qrita_gpu_report(const void *state, struct tkp_stats *out)
{
    const struct qrita_gpu_state *s = state;
    if (qrita_gpu_stats(&s->plan, s->workspace, s->stream, out) != TKP_OK)
        memset(out, 0, sizeof *out);
    else
        out->reported = qrita_reported(&s->pb, &s->opts);
}

/* Every kernel that reads the logits is instantiated for bf16 and fp16 too (qrita_gpu.cu), on
 * every option's path; their results equal those on the float32 upcast (docs/SEMANTICS.md,
 * "16-bit logits"). */
const struct tkp_impl tkp_qrita_gpu = {
    .state_size = sizeof(struct qrita_gpu_state),
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
    .supports = qrita_gpu_supports,
    .init = qrita_gpu_init,
    .run = qrita_gpu_enqueue,
    .stats = qrita_gpu_report,
};

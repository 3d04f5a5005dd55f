/* rejection_gpu_impl.c — the GPU implementation of rejection (struct tkp_impl, algos/tkp.h): the
 * glue between the harness and the kernel of rejection_gpu.cu. Compiled only in CUDA builds
 * (Makefile); rejection.c names it through TKP_GPU_IMPL. */
#include <string.h>

#include "rejection_gpu.h"
#include "rejection_impl.h"

struct rej_gpu_state {
    struct tkp_problem pb;
    int max_rounds;
    struct rej_gpu_plan plan;
    void *slots;  /* the device workspace of the last run (per-CTA statistics) */
    void *stream; /* its stream */
};

static int rej_gpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                        size_t *workspace_bytes, struct tkp_error *err)
{
    struct rej_gpu_state *s = state;
    s->pb = *pb;
    s->max_rounds = ((const struct rej_opts *)opts)->max_rounds;
    s->slots = s->stream = NULL;
    int forced = 0; /* TKP_REJ_CLUSTER: a cluster size forced for tests and experiments */
    const int rc = tkp_env_cluster("TKP_REJ_CLUSTER", &forced, err);
    if (rc != TKP_OK)
        return rc;
    rej_gpu_plan_for(pb, forced, &s->plan);
    *workspace_bytes = s->plan.workspace;
    return TKP_OK;
}

static int rej_gpu_enqueue(void *state, const struct tkp_io *io, void *workspace, void *stream,
                           struct tkp_error *err)
{
    struct rej_gpu_state *s = state;
    if (!io->samples)
        return TKP_OK;
    s->slots = workspace;
    s->stream = stream;
    return rej_gpu_run(&s->pb, &s->plan, s->max_rounds, io, workspace, stream, err);
}

/* The statistics of the last run: every CTA rewrites its slot in each run, so CUDA-graph
 * replays need no reset; this waits for the stream. */
static void rej_gpu_report(const void *state, struct tkp_stats *out)
{
    const struct rej_gpu_state *s = state;
    memset(out, 0, sizeof *out);
    if (s->slots && rej_gpu_stats(&s->plan, s->slots, s->stream, out) == 0)
        out->rows = s->pb.batch;
    out->reported = REJ_REPORTED;
}

const struct tkp_impl tkp_rejection_gpu = {
    .state_size = sizeof(struct rej_gpu_state),
    .init = rej_gpu_init,
    .run = rej_gpu_enqueue,
    .stats = rej_gpu_report,
    /* Every kernel reads bf16 and fp16 rows, converting exactly as it loads (rejection_gpu.cu;
     * docs/SEMANTICS.md, "16-bit logits"). */
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
};

/* naive_sort_gpu_impl.c — the GPU implementation of naive_sort (struct tkp_impl, algos/tkp.h):
 * the glue between the harness and the kernels of naive_sort_gpu.cu. Compiled only in CUDA
 * builds (Makefile); naive_sort.c names it through TKP_GPU_IMPL. */
#include <string.h>

#include "naive_sort_gpu.h"
#include "naive_sort_impl.h"

struct naive_gpu_state {
    struct tkp_problem pb;
    struct naive_gpu_plan plan; /* chunking and CUB storage */
    int64_t rows;               /* of the last run */
};

static int naive_gpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                          size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    struct naive_gpu_state *s = state;
    s->pb = *pb;
    int rc = naive_gpu_plan(pb, &s->plan, err);
    *workspace_bytes = rc == TKP_OK ? s->plan.workspace : 0;
    return rc;
}

static int naive_gpu_enqueue(void *state, const struct tkp_io *io, void *workspace, void *stream,
                             struct tkp_error *err)
{
    struct naive_gpu_state *s = state;
    s->rows = 0;
    int rc = naive_gpu_run(&s->plan, &s->pb, io, workspace, stream, err);
    if (rc == TKP_OK)
        s->rows = s->pb.batch;
    return rc;
}

/* Rows only: the sort has no statistic to report. */
static void naive_gpu_stats(const void *state, struct tkp_stats *out)
{
    memset(out, 0, sizeof *out);
    out->rows = ((const struct naive_gpu_state *)state)->rows;
}

const struct tkp_impl tkp_naive_sort_gpu = {
    .state_size = sizeof(struct naive_gpu_state),
    .init = naive_gpu_init,
    .run = naive_gpu_enqueue,
    .stats = naive_gpu_stats,
    /* both kernels that read logits read 16-bit rows (naive_sort_gpu.cu) */
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
};

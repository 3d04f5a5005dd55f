/* rtopk_gpu_impl.c — the GPU implementation of rtopk (struct tkp_impl, algos/tkp.h): the glue
 * between the harness and the kernels of rtopk_gpu.cu. Compiled only in CUDA builds
 * (Makefile); rtopk.c names it through TKP_GPU_IMPL. */
#include <string.h>

#include "rtopk_gpu.h"
#include "rtopk_impl.h"

struct rtopk_gpu_state {
    struct tkp_problem pb;
    int max_iter;
    struct rtopk_gpu_plan plan; /* launch shape (rtopk_gpu.cu) */
    const void *iters;          /* device per-row iteration counters of the last run */
    void *stream;               /* the stream of the last run */
};

static int rtopk_gpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                          size_t *workspace_bytes, struct tkp_error *err)
{
    struct rtopk_gpu_state *s = state;
    s->pb = *pb;
    s->max_iter = ((const struct rtopk_opts *)opts)->max_iter;
    s->iters = NULL;
    s->stream = NULL;
    /* workspace: one iteration counter per row */
    return rtopk_gpu_plan(pb, &s->plan, workspace_bytes, err);
}

static int rtopk_gpu_enqueue(void *state, const struct tkp_io *io, void *workspace, void *stream,
                             struct tkp_error *err)
{
    struct rtopk_gpu_state *s = state;
    int rc = rtopk_gpu_run(&s->plan, &s->pb, io, s->max_iter, workspace, stream, err);
    if (rc == TKP_OK) {
        s->iters = workspace;
        s->stream = stream;
    }
    return rc;
}

/* The last run's rows and search iterations (waits for its stream); nothing before a run. */
static void rtopk_gpu_stats(const void *state, struct tkp_stats *out)
{
    const struct rtopk_gpu_state *s = state;
    memset(out, 0, sizeof *out);
    struct tkp_error err;
    double it = 0;
    if (s->iters && rtopk_gpu_iterations(s->iters, s->pb.batch, s->stream, &it, &err) == TKP_OK) {
        out->rows = s->pb.batch;
        out->total[RTOPK_STAT_ITERATIONS] = it;
        out->reported = TKP_STAT_BIT(RTOPK_STAT_ITERATIONS);
    }
}

const struct tkp_impl tkp_rtopk_gpu = {
    .state_size = sizeof(struct rtopk_gpu_state),
    .init = rtopk_gpu_init,
    .run = rtopk_gpu_enqueue,
    .stats = rtopk_gpu_stats,
    /* every kernel path (cached or streaming) reads 16-bit rows (rtopk_gpu.cu) */
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
};

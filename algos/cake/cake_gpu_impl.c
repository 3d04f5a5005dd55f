/* cake_gpu_impl.c — the GPU implementation of cake (struct tkp_impl, algos/tkp.h): the glue
 * between the harness and the kernels of cake_gpu.cu. Compiled only in CUDA builds
 * (Makefile); cake.c names it through TKP_GPU_IMPL. The slab limit is cake.c's supports(),
 * shared with the CPU. */
#include <string.h>

#include "cake_gpu.h"
#include "cake_impl.h"

struct cake_gpu_state {
    struct tkp_problem pb;
    struct cake_gpu_plan plan; /* launch shape (cake_gpu.cu) */
    int64_t rows;              /* of the last run */
};

static int cake_gpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                         size_t *workspace_bytes, struct tkp_error *err)
{
    struct cake_gpu_state *s = state;
    s->pb = *pb;
    const int launch = opts ? ((const struct cake_opts *)opts)->topp_launch : 0;
    int rc = cake_gpu_plan(pb->batch, pb->vocab, pb->dtype, launch, &s->plan, err);
    *workspace_bytes = s->plan.workspace_bytes; /* 0 unless chained */
    return rc;
}

static int cake_gpu_enqueue(void *state, const struct tkp_io *io, void *workspace, void *stream,
                            struct tkp_error *err)
{
    struct cake_gpu_state *s = state;
    s->rows = 0;
    int rc = cake_gpu_run(&s->plan, s->pb.batch, s->pb.vocab, s->pb.stride, s->pb.draws, io,
                          workspace, stream, err);
    if (rc == TKP_OK)
        s->rows = s->pb.batch;
    return rc;
}

/* Rows only: the per-row pass counts stay on the device, so no statistic is reported. */
static void cake_gpu_stats(const void *state, struct tkp_stats *out)
{
    memset(out, 0, sizeof *out);
    out->rows = ((const struct cake_gpu_state *)state)->rows;
}

const struct tkp_impl tkp_cake_gpu = {
    .state_size = sizeof(struct cake_gpu_state),
    .init = cake_gpu_init,
    .run = cake_gpu_enqueue,
    .stats = cake_gpu_stats,
    /* cake_kernel reads bf16 and fp16 rows in every path (fused and chained: the chained
     * kernel reads only the gathered keys), converting exactly as it loads (cake_gpu.cu;
     * docs/SEMANTICS.md, "16-bit logits"). */
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
};

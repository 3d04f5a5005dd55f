/* naive_sort.c — the sort-based baseline (what PyTorch and vLLM's fallback do).
 *
 * Per row: stable-sort the valid tokens by value, descending (ties by index), keep the first
 * min(k, #valid), then walk that prefix accumulating fixed-point mass until top-p is reached.
 * Outputs the kept set and samples drawn from it. Exact by construction: it *is* the
 * canonical order of docs/SEMANTICS.md. This file holds the module's table and its CPU
 * implementation; the GPU one is its row in algos/common/tkp_gpu_impl.c. */
#include <string.h>

#include "../common/cpu_row.h"
#include "../common/prob.h"
#include "../tkp.h"
#include "naive_sort_impl.h"

struct naive_state {
    struct tkp_problem pb;
    struct tkp_stats stats; /* of the last run */
};

/* Workspace of one row: a 16-bit row's upcast, the sorted order, merge scratch, the kept mask
 * when the caller wants samples only, and the prefix sums of sampling. */
struct naive_work {
    float *row;
    int32_t *order, *tmp;
    uint8_t *mask;
    uint64_t *cum;
};

static const struct tkp_option naive_options[] = { { NULL } };

static size_t naive_workspace(int64_t vocab)
{
    return (size_t)vocab * (2 * sizeof(int32_t) + sizeof(uint64_t) + 1);
}

static int naive_init(void *state, const struct tkp_problem *pb, const void *opts,
                      size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    (void)err;
    struct naive_state *s = state;
    s->pb = *pb;
    *workspace_bytes = tkp_cpu_row_scratch_bytes(pb) + naive_workspace(pb->vocab);
    return TKP_OK;
}

static void naive_row(struct naive_state *s, const struct tkp_io *io, int64_t r,
                      const struct naive_work *w)
{
    const int64_t vocab = s->pb.vocab;
    const float *x = tkp_cpu_row_f32(&s->pb, io->logits, r, w->row);
    int64_t valid = tkp_canonical_order(x, vocab, w->order, w->tmp);

    float max = valid ? x[w->order[0]] : 0.0f;
    const int32_t k = tkp_minp_fold_k(x, vocab, max, io->k[r], io->min_p, r);
    int64_t n = valid;
    if (tkp_topk_on(k, vocab) && k < n)
        n = k;
    if (tkp_topp_on(io->p[r]))
        n = tkp_topp_count(x, w->order, n, max, io->p[r]);

    uint8_t *kept = io->kept ? io->kept + r * vocab : w->mask;
    memset(kept, 0, (size_t)vocab);
    for (int64_t j = 0; j < n; j++)
        kept[w->order[j]] = 1;
    if (io->samples)
        tkp_sample_kept(x, kept, vocab, max, tkp_io_row_key(io, r), s->pb.draws, w->cum,
                        io->samples + r * s->pb.draws);
    s->stats.rows++;
}

static int naive_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                     struct tkp_error *err)
{
    (void)stream;
    (void)err;
    struct naive_state *s = state;
    memset(&s->stats, 0, sizeof s->stats);
    const int64_t vocab = s->pb.vocab;
    struct naive_work w;
    w.row = workspace;
    w.cum = (uint64_t *)((char *)workspace + tkp_cpu_row_scratch_bytes(&s->pb));
    w.order = (int32_t *)(w.cum + vocab);
    w.tmp = w.order + vocab;
    w.mask = (uint8_t *)(w.tmp + vocab);
    for (int64_t r = 0; r < s->pb.batch; r++)
        naive_row(s, io, r, &w);
    return TKP_OK;
}

static void naive_stats(const void *state, struct tkp_stats *out)
{
    *out = ((const struct naive_state *)state)->stats;
}

static const struct tkp_impl naive_cpu = {
    .state_size = sizeof(struct naive_state),
    .init = naive_init,
    .run = naive_run,
    .stats = naive_stats,
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16), /* cpu_row.h: tkp_cpu_row_f32 */
};

const struct tkp_algo tkp_algo_naive_sort = {
    .abi = TKP_ABI,
    .name = "naive_sort",
    .summary = "stable sort + prefix sum (the PyTorch baseline)",
    .ops = TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP | TKP_MINP,
    .outputs = TKP_OUT_SET | TKP_OUT_SAMPLE,
    .flags = TKP_EXACT | TKP_DETERMINISTIC,
    .options = naive_options,
    .opts_size = sizeof(int),
    .cpu = &naive_cpu,
    .gpu = TKP_GPU_IMPL(tkp_naive_sort_gpu),
};

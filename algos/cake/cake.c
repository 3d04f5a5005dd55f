/* cake.c — CPU reference of FlashInfer's cake_sampling (thread-block-cluster radix select).
 *
 * Per row, three stages, each written as the sequential form of what one thread-block
 * cluster does on the GPU, so that a CUDA version can reproduce every slab bit for bit:
 *  1. exact top-k slab: radix select on the order keys of the logits with 11/11/10-bit
 *     digits (one histogram per digit, walk the buckets from the top to the one holding the
 *     k-th key, narrow the prefix), then collect the keys above the pivot and the first (in
 *     index order) keys equal to it; the at most 1024 (key, index) entries are sorted by a
 *     bitonic network on 64-bit composites (key << 32 | ~index);
 *  2. top-p on the slab with exact 64-bit fixed-point prefix sums (the rule of prob.h);
 *  3. inverse-CDF sampling over the kept slab entries, in slab order, driven by Philox.
 * The slab holds 1024 entries, so every row's effective k (k, or V when top-k is off) must
 * be at most 1024. This file holds the module's table and its CPU implementation; the GPU one
 * is its row in algos/common/tkp_gpu_impl.c. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cpu_row.h"
#include "../common/philox.h"
#include "../common/prob.h"
#include "../tkp.h"
#include "cake_impl.h"

#define CAKE_BUCKETS 2048
#define CAKE_PASSES 3

/* The radix digits of a 32-bit order key, most significant first. */
static const struct {
    int shift, bits;
} cake_digits[CAKE_PASSES] = { { 21, 11 }, { 10, 11 }, { 0, 10 } };

struct cake_state {
    struct tkp_problem pb;
    struct tkp_stats stats; /* of the last run */
};

/* Workspace of one row: the fixed-point prefix of the slab, the slab itself (composites),
 * the order keys of the row and the histogram of one digit pass. */
struct cake_work {
    float *row; /* a 16-bit row's upcast (cpu_row.h) */
    uint64_t *incl, *slab;
    uint32_t *keys, *hist;
};

/* Where the radix select stopped: every key whose bits under `mask` exceed `prefix` is in
 * the top-k set, and so are the first `take` keys (in index order) whose bits under `mask`
 * equal `prefix`. */
struct cake_pivot {
    uint32_t prefix, mask;
    int64_t take;
    int passes;
};

static const char *const launch_choices[] = { "fused", "chained", NULL };
static const char *const cake_thread_choices[] = { "auto", "512", "256", NULL };

int cake_threads_chosen(const struct cake_opts *o)
{
    return o && o->threads > 0 ? atoi(cake_thread_choices[o->threads]) : 0;
}

static const struct tkp_option cake_options[] = {
    { "topp_launch", "GPU: top-p, mask and draws in rank 0 of each cluster (fused), or in a "
      "second kernel chained by programmatic dependent launch (chained; measured slower)",
      TKP_OPT_ENUM, offsetof(struct cake_opts, topp_launch), 0, 0, 0, launch_choices },
    { "cluster", "GPU only (the CPU ignores it): CTAs per row, or auto (the dispatch table of "
      "the device, else the cost model); a size the device cannot run takes the cost model",
      TKP_OPT_ENUM_QUIET, offsetof(struct cake_opts, cluster), 0, 0, 0, tkp_cluster_choices },
    { "threads", "GPU only: threads per CTA, 512 or 256 (two CTAs a SM), or auto (the dispatch "
      "table of the device, else 256 when the batch has more rows than the device has SMs and "
      "k <= 256, else 512)",
      TKP_OPT_ENUM_QUIET, offsetof(struct cake_opts, threads), 0, 0, 0, cake_thread_choices },
    { NULL },
};

static int cake_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)opts;
    if (pb->k_max > CAKE_SLAB) {
        *why = "cake: k > 1024 does not fit the 1024-entry slab (k <= 1024 required)";
        return 0;
    }
    if ((pb->ops & TKP_TOPP) && pb->vocab > CAKE_SLAB) {
        *why = "cake: a top-p-only row needs its whole row in the 1024-entry slab "
               "(vocabulary <= 1024 required when top-k is off)";
        return 0;
    }
    /* Every backend refuses here, before any row is read: a kernel cannot refuse a row by
     * name without a synchronisation. The problem's largest set covers a row with neither
     * filter too (it counts as the whole vocabulary). */
    if (pb->set_max > CAKE_SLAB) {
        *why = "cake: a row's top-k set (k, or the vocabulary when top-k is off) exceeds the "
               "1024-entry slab (k <= 1024 required)";
        return 0;
    }
    return 1;
}

static int cake_init(void *state, const struct tkp_problem *pb, const void *opts,
                     size_t *workspace_bytes, struct tkp_error *err)
{
    (void)err;
    (void)opts; /* topp_launch, cluster, threads: GPU only */
    struct cake_state *s = state;
    s->pb = *pb;
    *workspace_bytes = tkp_cpu_row_scratch_bytes(pb) + 2 * CAKE_SLAB * sizeof(uint64_t) +
                       ((size_t)pb->vocab + CAKE_BUCKETS) * sizeof(uint32_t);
    return TKP_OK;
}

/* The order keys of a row (0 for invalid values); returns the number of valid tokens. */
static int64_t cake_keys(const float *x, int64_t vocab, uint32_t *keys)
{
    int64_t valid = 0;
    for (int64_t i = 0; i < vocab; i++) {
        keys[i] = tkp_order_key(x[i]);
        valid += keys[i] != 0;
    }
    return valid;
}

/* Radix select of the k-th largest key, 1 <= k <= #valid. Each pass histograms the keys
 * that match the prefix found so far on the next digit and walks the buckets from the top
 * until the running count reaches the remaining k; it stops early when the selected bucket
 * is taken whole, since then no tie inside it needs resolving. */
static struct cake_pivot cake_radix_select(const uint32_t *keys, int64_t vocab, int64_t k,
                                           uint32_t *hist)
{
    struct cake_pivot pv = { 0, 0, k, 0 };
    for (int d = 0; d < CAKE_PASSES; d++) {
        const int shift = cake_digits[d].shift;
        const uint32_t digit_mask = (1u << cake_digits[d].bits) - 1;
        memset(hist, 0, (digit_mask + 1) * sizeof *hist);
        for (int64_t i = 0; i < vocab; i++)
            if ((keys[i] & pv.mask) == pv.prefix)
                hist[(keys[i] >> shift) & digit_mask]++;
        uint32_t bucket = digit_mask;
        int64_t above = 0;
        while (above + hist[bucket] < pv.take)
            above += hist[bucket--];
        pv.prefix |= bucket << shift;
        pv.mask |= digit_mask << shift;
        pv.take -= above;
        pv.passes++;
        if (hist[bucket] == pv.take)
            break;
    }
    return pv;
}

/* The slab entries in index order: keys above the pivot, then the first `take` equal ones.
 * Returns the number of entries (the k of the select). */
static int64_t cake_collect(const uint32_t *keys, int64_t vocab, struct cake_pivot pv,
                            uint64_t *slab)
{
    int64_t n = 0, ties = pv.take;
    for (int64_t i = 0; i < vocab; i++) {
        uint32_t high = keys[i] & pv.mask;
        int take = high > pv.prefix;
        if (high == pv.prefix && ties > 0) {
            take = 1;
            ties--;
        }
        if (take)
            slab[n++] = ((uint64_t)keys[i] << 32) | (uint32_t)~(uint32_t)i;
    }
    return n;
}

/* Sort n composites descending (descending key, ascending index) with a bitonic network over
 * the next power of two; the padding is 0, below every valid composite. */
static void cake_bitonic_sort(uint64_t *a, int64_t n)
{
    int64_t size = 1;
    while (size < n)
        size <<= 1;
    for (int64_t i = n; i < size; i++)
        a[i] = 0;
    for (int64_t span = 2; span <= size; span <<= 1)
        for (int64_t stride = span >> 1; stride > 0; stride >>= 1)
            for (int64_t i = 0; i < size; i++) {
                int64_t j = i ^ stride;
                int descending = (i & span) == 0;
                if (j > i && (descending ? a[i] < a[j] : a[i] > a[j])) {
                    uint64_t t = a[i];
                    a[i] = a[j];
                    a[j] = t;
                }
            }
}

static float cake_value(uint64_t entry) { return tkp_key_value((uint32_t)(entry >> 32)); }
static int64_t cake_index(uint64_t entry) { return (int64_t)(uint32_t)~(uint32_t)entry; }

/* Stage 2: the inclusive fixed-point prefix of the slab and the number of entries top-p
 * keeps: entry j is kept iff j == 0 or the mass before it is < the target. */
static int64_t cake_topp(const uint64_t *slab, int64_t n, float p, uint64_t *incl)
{
    const float top = cake_value(slab[0]);
    uint64_t total = 0;
    for (int64_t j = 0; j < n; j++) {
        total += tkp_weight(cake_value(slab[j]), top);
        incl[j] = total;
    }
    const uint64_t target = tkp_topp_target(p, total);
    int64_t kept = 1;
    while (kept < n && incl[kept - 1] < target)
        kept++;
    return kept;
}

/* Stage 3: each draw picks the kept entry j with incl[j-1] <= u < incl[j]. */
static void cake_sample(const uint64_t *slab, const uint64_t *incl, int64_t kept,
                        struct tkp_row_key key, int32_t draws, int64_t *out)
{
    const uint64_t total = incl[kept - 1];
    for (int32_t d = 0; d < draws; d++) {
        uint64_t u = tkp_draw_target(key.seed, key.row, key.offset, (uint32_t)d, total);
        out[d] = cake_index(slab[tkp_first_above(incl, kept, u)]);
    }
}

/* min-p on the sorted slab's n entries (docs/SEMANTICS.md, "min-p"): its first min(n, k')
 * stay, k' the row's k with min-p folded in (tkp_minp_fold_k). The selection ran with the
 * row's own k, as on the GPU, which folds k' from the slab (cake_gpu_finish.cuh): the first
 * k' of the canonical order are the first k' of the top k, so the set is the same (and the
 * statistics, iterations and hit rate, are those of the select with k). */
static int64_t cake_minp_cut(const float *x, int64_t vocab, const struct tkp_io *io, int64_t r,
                             int64_t n)
{
    if (!io->min_p || !tkp_minp_on(io->min_p[r]))
        return n;
    const int32_t folded =
        tkp_minp_fold_k(x, vocab, tkp_row_scan(x, vocab).max, io->k[r], io->min_p, r);
    return tkp_topk_on(folded, vocab) && folded < n ? folded : n;
}

static void cake_row(struct cake_state *s, const struct tkp_io *io, int64_t r,
                     const struct cake_work *w)
{
    const int64_t vocab = s->pb.vocab;
    const float *x = tkp_cpu_row_f32(&s->pb, io->logits, r, w->row);
    uint8_t *kept_mask = io->kept ? io->kept + r * vocab : NULL;
    int64_t *samples = io->samples ? io->samples + r * s->pb.draws : NULL;
    int64_t valid = cake_keys(x, vocab, w->keys);
    int64_t k = tkp_topk_on(io->k[r], vocab) ? io->k[r] : vocab; /* <= 1024: cake_supports */
    if (k > valid)
        k = valid;

    int64_t n = 0, kept = 0;
    if (k > 0) {
        struct cake_pivot pv = cake_radix_select(w->keys, vocab, k, w->hist);
        n = cake_collect(w->keys, vocab, pv, w->slab);
        cake_bitonic_sort(w->slab, n);
        n = cake_minp_cut(x, vocab, io, r, n);
        kept = cake_topp(w->slab, n, io->p[r], w->incl);
        s->stats.total[CAKE_STAT_ITERATIONS] += pv.passes;
        s->stats.total[CAKE_STAT_HIT_RATE] += pv.passes < CAKE_PASSES;
    }
    if (kept_mask) {
        memset(kept_mask, 0, (size_t)vocab);
        for (int64_t j = 0; j < kept; j++)
            kept_mask[cake_index(w->slab[j])] = 1;
    }
    if (samples && kept)
        cake_sample(w->slab, w->incl, kept, tkp_io_row_key(io, r), s->pb.draws, samples);
    else if (samples)
        for (int32_t d = 0; d < s->pb.draws; d++)
            samples[d] = -1;
    s->stats.rows++;
}

static int cake_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                    struct tkp_error *err)
{
    (void)stream;
    (void)err;
    struct cake_state *s = state;
    memset(&s->stats, 0, sizeof s->stats);
    struct cake_work w;
    w.row = workspace;
    w.incl = (uint64_t *)((char *)workspace + tkp_cpu_row_scratch_bytes(&s->pb));
    w.slab = w.incl + CAKE_SLAB;
    w.keys = (uint32_t *)(w.slab + CAKE_SLAB);
    w.hist = w.keys + s->pb.vocab;
    for (int64_t r = 0; r < s->pb.batch; r++)
        cake_row(s, io, r, &w);
    return TKP_OK;
}

/* Every statistic of CAKE_STATS (cake_impl.h); the GPU keeps its pass counts on the device and
 * reports none (cake_gpu.h). */
static void cake_stats(const void *state, struct tkp_stats *out)
{
    const struct cake_state *s = state;
    *out = s->stats;
    out->reported = TKP_STAT_ALL(CAKE_STAT_COUNT);
}

static const struct tkp_impl cake_cpu = {
    .state_size = sizeof(struct cake_state),
    .init = cake_init,
    .run = cake_run,
    .stats = cake_stats,
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16), /* cpu_row.h: tkp_cpu_row_f32 */
};

static const struct tkp_stat cake_statistics[] = { CAKE_STATS(TKP_STAT_ROW) { NULL } };

const struct tkp_algo tkp_algo_cake = {
    .abi = TKP_ABI,
    .name = "cake",
    .summary = "cluster radix-select top-k slab (k <= 1024), top-p on the slab, inverse CDF",
    .ops = TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP | TKP_MINP,
    .outputs = TKP_OUT_SET | TKP_OUT_SAMPLE,
    .flags = TKP_EXACT | TKP_DETERMINISTIC,
    .options = cake_options,
    .opts_size = sizeof(struct cake_opts),
    .supports = cake_supports,
    .cpu = &cake_cpu,
    .gpu = TKP_GPU_IMPL(tkp_cake_gpu),
    .max_set = CAKE_SLAB,
    .statistics = cake_statistics,
};

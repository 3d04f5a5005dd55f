/* qrita.c — Qrita (Park, Kim, Cheung, Stoica; arXiv 2602.01518): top-k and top-p by pivot search
 * over a sigma-truncated set of outliers, with duplicate handling that keeps the output equal to
 * a stable sort. The module table, its options, and the CPU reference of one row:
 *
 * 0. sample: mean and std of the finite values of the first `sample_block` tokens; the gather
 *    threshold t from them (qrita_rules.h);
 * 1. scan: max, min, valid count, and the keys > t compacted into a bounded outlier buffer;
 *    (2. top-p without top-k: the row's fixed-point mass, and that of the outliers;)
 *    the outliers suffice ("truncation hit") when they are at least k (top-k) or carry at least
 *    the top-p target (top-p alone) and the buffer did not overflow; otherwise the searches read
 *    the whole row ("fallback");
 * 3. search: the boundary of the top-k set by pivot search (or sort), then, within that set
 *    renormalised, the boundary of top-p with the fixed-point mass as the measure;
 * 4. mask: keep the keys above the boundary and its first `keep` copies in index order.
 * min-p folds into k (struct row_k): passes 0-2 run on the row's k, the searches on k with
 * min-p folded in, as the GPU does (README.md, "min-p").
 * The kept set is exactly naive_sort's. algos/qrita/README.md maps options to the paper. The GPU
 * implementation is its row in algos/common/tkp_gpu_impl.c. */
#include <stdlib.h>
#include <string.h>

#include "../common/cpu_row.h"
#include "../tkp.h"
#include "qrita.h"

static const double qrita_quantile[QRITA_QUANTILE_BINS - 1] = QRITA_NORMAL_QUANTILES;

static const char *const truncation_choices[] = { "auto", "off", "force_fallback", NULL };
static const char *const search_choices[] = { "quaternary", "ternary", "binary", "sort", NULL };
static const char *const switch_choices[] = { "on", "off", NULL };
static const char *const qrita_heavy_choices[] = { "auto", "0", "1024", "4096", NULL };

int qrita_heavy_n_chosen(const struct qrita_opts *o)
{
    return o->heavy_n > 0 ? atoi(qrita_heavy_choices[o->heavy_n]) : -1;
}

static const struct tkp_option qrita_options[] = {
    { "truncation", "sigma-truncation: auto (use the outliers when they suffice), off, "
      "force_fallback (gather, then search the whole row anyway)",
      TKP_OPT_ENUM, offsetof(struct qrita_opts, truncation), QRITA_TRUNC_AUTO, 0, 0,
      truncation_choices },
    { "search", "boundary search: quaternary (3 pivots), ternary (2), binary (1), sort",
      TKP_OPT_ENUM, offsetof(struct qrita_opts, search), QRITA_QUATERNARY, 0, 0,
      search_choices },
    { "dedup", "duplicate handling: on keeps exactly the stable-sort set; off keeps every copy "
      "of the boundary value (approximate)",
      TKP_OPT_ENUM, offsetof(struct qrita_opts, dedup), QRITA_ON, 0, 0, switch_choices },
    { "autotune", "tiered block sizes on the GPU (recorded only on the CPU)",
      TKP_OPT_ENUM, offsetof(struct qrita_opts, autotune), QRITA_ON, 0, 0, switch_choices },
    { "sigma_margin", "lower the truncation coefficient delta by this fraction of |delta|",
      TKP_OPT_DOUBLE, offsetof(struct qrita_opts, sigma_margin), 0.15, 0.0, 1.0, NULL },
    { "sample_block", "tokens at the start of the row that give the mean and std",
      TKP_OPT_INT, offsetof(struct qrita_opts, sample_block), 8192, 1, 1 << 20, NULL },
    { "max_iter", "pivot-search iteration cap (below 16/21/32 for quaternary/ternary/binary "
      "the search may stop unresolved: approximate)",
      TKP_OPT_INT, offsetof(struct qrita_opts, max_iter), 32, 1, 64, NULL },
    { "heavy_n", "GPU only: where a warp searches each row (past B = #SMs), the candidates above "
      "which it hands the row to a block: 0, 1024, 4096, or auto (0 up to twice as many rows "
      "as the device has SMs, four times where vocab x k > 2^27 with k > 256, else 4096; not in "
      "the dispatch table)",
      TKP_OPT_ENUM_QUIET, offsetof(struct qrita_opts, heavy_n), 0, 0, 0, qrita_heavy_choices },
    { NULL },
};

struct qrita_state {
    struct tkp_problem pb;
    struct qrita_opts opts;
    int64_t capacity;       /* outlier buffer, in keys */
    struct tkp_stats stats; /* of the last run */
};

/* Workspace: the outlier buffer, and for search=sort a row of keys and its radix-sort scratch. */
struct qrita_work {
    float *row; /* a 16-bit row's upcast (cpu_row.h) */
    uint32_t *outliers, *sorted, *sort_tmp;
};

static int pivots_per_iteration(int search)
{
    return search == QRITA_QUATERNARY ? 3 : search == QRITA_TERNARY ? 2 : 1;
}

int64_t qrita_outlier_capacity(int64_t vocab)
{
    int64_t capacity = vocab / 4 > 4096 ? vocab / 4 : 4096;
    return capacity < vocab ? capacity : vocab;
}

int64_t qrita_block_rows_per_sm(const struct tkp_problem *pb)
{
    const int long_search = pb->set_max > 256 && pb->set_max < pb->vocab &&
                            pb->vocab * pb->set_max > ((int64_t)1 << 27);
    return long_search ? 4 : 2;
}

static int qrita_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)opts;
    if (!(pb->outputs & TKP_OUT_SET)) {
        *why = "qrita: outputs a kept set only, and no set was asked for";
        return 0;
    }
    return 1;
}

static int qrita_approximate(const void *opts)
{
    const struct qrita_opts *o = opts;
    if (o->dedup == QRITA_OFF)
        return 1;
    return o->search != QRITA_SORT &&
           o->max_iter < qrita_iterations_needed(pivots_per_iteration(o->search));
}

static int qrita_init(void *state, const struct tkp_problem *pb, const void *opts,
                      size_t *workspace_bytes, struct tkp_error *err)
{
    (void)err;
    struct qrita_state *s = state;
    s->pb = *pb;
    s->opts = *(const struct qrita_opts *)opts;
    s->capacity = qrita_outlier_capacity(pb->vocab);
    size_t sort_keys = s->opts.search == QRITA_SORT ? 2 * (size_t)pb->vocab : 0;
    *workspace_bytes = tkp_cpu_row_scratch_bytes(pb) +
                       ((size_t)s->capacity + sort_keys) * sizeof(uint32_t);
    return TKP_OK;
}

/* Pass 0: the gather threshold of a row, or 0 when truncation has no threshold to offer (an
 * empty sample, or a k or p in the last quantile bin). */
static int sigma_threshold(const struct qrita_state *s, const float *x, int32_t k, float p,
                           uint32_t *key)
{
    int64_t vocab = s->pb.vocab;
    struct qrita_sample sample =
        qrita_sample_stats(x, s->opts.sample_block < vocab ? s->opts.sample_block : vocab);
    if (sample.count == 0)
        return 0;
    double delta = tkp_topk_on(k, vocab) ? qrita_delta_topk(k, vocab, qrita_quantile)
                                         : qrita_delta_topp(p, sample.std, qrita_quantile);
    if (delta == -INFINITY)
        return 0;
    *key = qrita_threshold_key(sample.mean, sample.std, delta, s->opts.sigma_margin);
    return 1;
}

/* Where the searches of a row look, and the sorted pool for search=sort. */
struct row_search {
    struct qrita_pool pool;
    struct qrita_searcher searcher;
    const uint32_t *sorted;
    int64_t sorted_size;
};

static struct qrita_boundary find_boundary(struct row_search *r, const struct qrita_query *q)
{
    if (r->sorted)
        return qrita_sorted_boundary(r->sorted, r->sorted_size, r->searcher.dedup, q);
    return qrita_pivot_search(&r->searcher, &r->pool, q);
}

/* Narrow the top-p query to the top-k set b (renormalisation: the mass is summed over it only);
 * returns the set's mass. */
static uint64_t enter_topk_set(const struct row_search *r, struct qrita_boundary b,
                               struct qrita_query *q)
{
    uint32_t below_set = b.key - 1;
    struct qrita_pivot_stat set;
    qrita_evaluate(&r->pool, &below_set, 1, q->measure, b, &set);
    q->lo = below_set;
    q->set_size = set.count;
    q->set = b;
    return set.mass;
}

/* The k a row's passes run on (README.md, "min-p"): `trunc` for the truncation (threshold,
 * gather, hit), `search` for the searches, min-p folded in (tkp_minp_fold_k). They differ only
 * where min-p and top-k are both on (`late`): with top-k off, min-p may switch it on, which the
 * threshold depends on, so the truncation runs on the folded k too. The GPU folds at the same
 * points (qrita_gpu_minp.cuh), so the statistics stay equal. */
struct row_k {
    int32_t trunc, search;
    int late;
};

/* Passes 1-2's verdict on a row (the outliers suffice: a hit) and the truncation's statistics;
 * row_total and hist: the row's mass, where the truncation sees it as top-p alone. */
static int truncation_hit(struct qrita_state *s, const float *x, const struct qrita_scan *scan,
                          struct row_k k, float p, int truncate, int has_threshold,
                          uint32_t trunc_key, uint64_t *row_total, uint64_t *hist)
{
    const int64_t vocab = s->pb.vocab;
    const int topk = tkp_topk_on(k.trunc, vocab) && k.trunc < scan->valid, topp = tkp_topp_on(p);
    uint64_t outlier_mass = 0;
    *row_total = 0;
    if (!topk && topp)
        qrita_row_mass(x, vocab, scan->max, trunc_key, row_total, &outlier_mass, hist);
    if (!truncate)
        return 0;
    int fits = has_threshold && scan->gathered <= s->capacity;
    int hit = s->opts.truncation == QRITA_TRUNC_AUTO && fits &&
              !qrita_minp_whole_row(k.late, k.trunc, scan->valid) &&
              (topk ? scan->gathered >= k.trunc
                    : scan->gathered >= 1 && outlier_mass >= tkp_topp_target(p, *row_total));
    s->stats.total[QRITA_STAT_HIT_RATE] += hit;
    s->stats.total[QRITA_STAT_FALLBACKS] += !hit;
    s->stats.total[QRITA_STAT_OUTLIERS] += (double)scan->gathered;
    if (!topk && topp)
        s->stats.total[QRITA_STAT_OUTLIER_MASS] += (double)outlier_mass / (double)*row_total;
    return hit;
}

static void qrita_row(struct qrita_state *s, const float *x, struct row_k k, float p,
                      uint8_t *kept, const struct qrita_work *w)
{
    const int64_t vocab = s->pb.vocab;
    const struct qrita_opts *o = &s->opts;
    uint32_t trunc_key = UINT32_MAX; /* nothing is gathered above it */
    int truncate =
        o->truncation != QRITA_TRUNC_OFF && (tkp_topk_on(k.trunc, vocab) || tkp_topp_on(p));
    int has_threshold = truncate && sigma_threshold(s, x, k.trunc, p, &trunc_key);
    struct qrita_scan scan = qrita_scan_gather(x, vocab, trunc_key, w->outliers, s->capacity);
    s->stats.rows++;

    int topk = tkp_topk_on(k.search, vocab) && k.search < scan.valid, topp = tkp_topp_on(p);
    if (scan.valid == 0 || (!topk && !topp)) {
        qrita_mask(x, vocab, qrita_all_valid(), kept);
        return;
    }
    uint64_t row_total, hist[TKP_MASS_BINS];
    int hit = truncation_hit(s, x, &scan, k, p, truncate, has_threshold, trunc_key, &row_total,
                             hist);
    int whole = qrita_minp_whole_row(k.late, k.trunc, scan.valid);

    struct row_search r = { .searcher = { pivots_per_iteration(o->search), o->max_iter,
                                          o->dedup == QRITA_ON, 0 } };
    r.pool.keys = hit ? w->outliers : NULL;
    r.pool.row = hit ? NULL : x;
    r.pool.size = hit ? scan.gathered : vocab;
    struct qrita_measure weight = { 0, scan.max };
    struct qrita_query q = { hit ? trunc_key : scan.min_key - 1, scan.max_key, weight, 0,
                             scan.valid, qrita_all_valid() };
    if (!topk && o->truncation == QRITA_TRUNC_AUTO && !whole) {
        /* second-level truncation: start at the mass floor when it is tighter (qrita_rules.h);
         * the truncation's top-k is off too (only a whole row differs), so hist is the row's */
        uint32_t mass_floor = tkp_mass_floor(hist, tkp_topp_target(p, row_total), scan.max,
                                          scan.min_key, scan.max_key);
        if (mass_floor > q.lo)
            q.lo = mass_floor;
    }
    if (o->search == QRITA_SORT) { /* the candidates above the query's lower end, sorted */
        r.sorted_size = qrita_sort_pool(&r.pool, q.lo, w->sorted, w->sort_tmp);
        r.sorted = w->sorted;
        s->stats.total[QRITA_STAT_SORTED] += (double)r.sorted_size;
    }
    struct qrita_boundary b = qrita_all_valid();
    if (topk) {
        struct qrita_query qk = q;
        qk.measure.unit = 1;
        qk.target = (uint64_t)k.search;
        b = find_boundary(&r, &qk);
    }
    if (topp) {
        if (topk)
            row_total = enter_topk_set(&r, b, &q);
        q.target = tkp_topp_target(p, row_total);
        b = find_boundary(&r, &q);
    }
    s->stats.total[QRITA_STAT_ITERATIONS] += (double)r.searcher.iterations;
    qrita_mask(x, vocab, b, kept);
}

static int qrita_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                     struct tkp_error *err)
{
    (void)stream;
    (void)err;
    struct qrita_state *s = state;
    memset(&s->stats, 0, sizeof s->stats);
    struct qrita_work w = {
        .row = workspace,
        .outliers = (uint32_t *)((char *)workspace + tkp_cpu_row_scratch_bytes(&s->pb)),
    };
    if (s->opts.search == QRITA_SORT) {
        w.sorted = w.outliers + s->capacity;
        w.sort_tmp = w.sorted + s->pb.vocab;
    }
    const int64_t vocab = s->pb.vocab;
    for (int64_t r = 0; r < s->pb.batch; r++) {
        const float *x = tkp_cpu_row_f32(&s->pb, io->logits, r, w.row);
        struct row_k k = { io->k[r], io->k[r], 0 };
        if (io->min_p && tkp_minp_on(io->min_p[r])) {
            k.search = tkp_minp_fold_k(x, vocab, tkp_row_scan(x, vocab).max, k.trunc, io->min_p, r);
            k.late = tkp_topk_on(k.trunc, vocab);
            if (!k.late)
                k.trunc = k.search;
        }
        qrita_row(s, x, k, io->p[r], io->kept + r * vocab, &w);
    }
    return TKP_OK;
}

/* The truncation's hits, fallbacks and outliers unless it is off, the outliers' mass where
 * some row has top-p alone, and the keys sorted by search=sort or the iterations of a pivot
 * search. A problem with neither filter: none. */
unsigned qrita_reported(const struct tkp_problem *pb, const struct qrita_opts *o)
{
    if (!pb->ops)
        return 0;
    unsigned r = TKP_STAT_BIT(o->search == QRITA_SORT ? QRITA_STAT_SORTED : QRITA_STAT_ITERATIONS);
    if (o->truncation != QRITA_TRUNC_OFF)
        r |= TKP_STAT_BIT(QRITA_STAT_HIT_RATE) | TKP_STAT_BIT(QRITA_STAT_FALLBACKS) |
             TKP_STAT_BIT(QRITA_STAT_OUTLIERS) |
             (pb->ops & TKP_TOPP ? TKP_STAT_BIT(QRITA_STAT_OUTLIER_MASS) : 0u);
    return r;
}

static void qrita_stats(const void *state, struct tkp_stats *out)
{
    const struct qrita_state *s = state;
    *out = s->stats;
    out->reported = qrita_reported(&s->pb, &s->opts);
}

static const struct tkp_impl qrita_cpu = {
    .state_size = sizeof(struct qrita_state),
    .init = qrita_init,
    .run = qrita_run,
    .stats = qrita_stats,
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16), /* cpu_row.h: tkp_cpu_row_f32 */
};

static const struct tkp_stat qrita_statistics[] = { QRITA_STATS(TKP_STAT_ROW) { NULL } };

const struct tkp_algo tkp_algo_qrita = {
    .abi = TKP_ABI,
    .name = "qrita",
    .summary = "sigma-truncation + quaternary pivot search with duplicate handling",
    .ops = TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP | TKP_MINP,
    .outputs = TKP_OUT_SET,
    .flags = TKP_EXACT | TKP_DETERMINISTIC,
    .options = qrita_options,
    .opts_size = sizeof(struct qrita_opts),
    .supports = qrita_supports,
    .approximate = qrita_approximate,
    .cpu = &qrita_cpu,
    .gpu = TKP_GPU_IMPL(tkp_qrita_gpu),
    .statistics = qrita_statistics,
};

/* rtopk.c — RTop-k (Xie et al., ICLR 2025): top-k by binary search on the threshold VALUE.
 *
 * Per row, the passes a GPU block will make, in the same order and with the same decisions:
 * 1. scan: min, max, number of tokens equal to the max, number of valid tokens;
 * 2. search: bisect [lo, hi] on values, one pass per iteration counting #(x >= mid), until
 *    the count is k or no float lies strictly between lo and hi (then the k-th largest value
 *    is lo); `max_iter` > 0 stops early with threshold = the next midpoint (RTop-k's early
 *    stop, approximate);
 * 3. select, each pass in index order and stopping at k kept: A keeps x > t, B keeps x == t
 *    (the ties at the k-th value, lower indices first), C (only after an early stop that
 *    undershot) keeps the remaining valid x < t.
 * RTop-k's own pass A keeps x >= t in index order, which drops a larger token that comes
 * after the ties ([1, 1, 2], k = 2); splitting it into A and B makes the default exact.
 * This file holds the module's table and its CPU implementation; the GPU one is
 * its row in algos/common/tkp_gpu_impl.c. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "../common/cpu_row.h"
#include "../common/prob.h"
#include "../tkp.h"
#include "rtopk_impl.h"

struct rtopk_state {
    struct tkp_problem pb;
    struct rtopk_opts opts;
    int64_t rows, iterations; /* of the last run */
};

/* What the scan pass learns about the valid tokens of a row. */
struct rtopk_scan {
    float lo, hi;   /* smallest and largest valid value */
    int64_t at_max; /* tokens equal to hi */
    int64_t valid;
};

/* The selection passes, in the order they run. */
enum rtopk_pass { PASS_ABOVE, PASS_AT, PASS_BELOW };

static const struct tkp_option rtopk_options[] = {
    { "max_iter", "search iterations before RTop-k's early stop (0: search to the exact threshold)",
      TKP_OPT_INT, offsetof(struct rtopk_opts, max_iter), 0, 0, 1e9, NULL },
    { NULL },
};

static struct rtopk_scan rtopk_scan_row(const float *x, int64_t vocab)
{
    struct rtopk_scan s = { INFINITY, -INFINITY, 0, 0 };
    for (int64_t i = 0; i < vocab; i++) {
        if (!tkp_is_valid(x[i]))
            continue;
        s.valid++;
        if (x[i] < s.lo)
            s.lo = x[i];
        if (x[i] > s.hi) {
            s.hi = x[i];
            s.at_max = 1;
        } else if (x[i] == s.hi) {
            s.at_max++;
        }
    }
    return s;
}

/* (lo + hi) / 2 rounded to nearest, for finite lo < hi or hi = +inf: it lies strictly
 * between them whenever some float does. Halving before adding cannot overflow; +inf counts
 * as 2^128, the next value after FLT_MAX, as IEEE rounding does (a sum that rounds past
 * FLT_MAX becomes +inf = hi). Comparisons make -0.0 and +0.0 alike. */
static float rtopk_midpoint(float lo, float hi)
{
    return 0.5f * lo + (hi == INFINITY ? 0x1p127f : 0.5f * hi);
}

/* #(x >= t) over the row; t is never below the smallest valid value, so -inf and NaN never
 * count. */
static int64_t rtopk_count_at_least(const float *x, int64_t vocab, float t)
{
    int64_t c = 0;
    for (int64_t i = 0; i < vocab; i++)
        c += x[i] >= t;
    return c;
}

/* The threshold of a row with valid > k >= 1; adds the counting passes to *iterations.
 * Invariant: #(x >= lo) > k and #(x >= hi) < k, so the k-th largest value is in [lo, hi). */
static float rtopk_search(const float *x, int64_t vocab, int64_t k, const struct rtopk_scan *s,
                          int max_iter, int64_t *iterations)
{
    if (s->at_max >= k)
        return s->hi;
    float lo = s->lo, hi = s->hi;
    for (int it = 0;; it++) {
        float mid = rtopk_midpoint(lo, hi);
        if (mid == lo || mid == hi)
            return lo;
        if (max_iter > 0 && it == max_iter)
            return mid;
        int64_t c = rtopk_count_at_least(x, vocab, mid);
        ++*iterations;
        if (c == k)
            return mid;
        if (c < k)
            hi = mid;
        else
            lo = mid;
    }
}

static int rtopk_pass_takes(enum rtopk_pass pass, float v, float t)
{
    switch (pass) {
    case PASS_ABOVE: return v > t;
    case PASS_AT: return v == t;
    case PASS_BELOW: return v < t && tkp_is_valid(v);
    }
    return 0;
}

/* One selection pass: mark the tokens it takes, in index order, until n are kept in all. */
static int64_t rtopk_select(const float *x, int64_t vocab, float t, enum rtopk_pass pass,
                            int64_t kept_n, int64_t n, uint8_t *kept)
{
    for (int64_t i = 0; i < vocab && kept_n < n; i++)
        if (rtopk_pass_takes(pass, x[i], t)) {
            kept[i] = 1;
            kept_n++;
        }
    return kept_n;
}

static void rtopk_row(struct rtopk_state *s, const float *x, int32_t k, uint8_t *kept)
{
    const int64_t vocab = s->pb.vocab;
    memset(kept, 0, (size_t)vocab);
    struct rtopk_scan scan = rtopk_scan_row(x, vocab);
    int64_t n = tkp_topk_on(k, vocab) && k < scan.valid ? k : scan.valid;
    /* Keeping every valid token is threshold -inf: pass A takes exactly the valid tokens. */
    float t = n == scan.valid ? -INFINITY
                              : rtopk_search(x, vocab, n, &scan, s->opts.max_iter,
                                             &s->iterations);
    int64_t kept_n = 0;
    for (enum rtopk_pass pass = PASS_ABOVE; pass <= PASS_BELOW && kept_n < n; pass++)
        kept_n = rtopk_select(x, vocab, t, pass, kept_n, n, kept);
    s->rows++;
}

static int rtopk_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)opts;
    if (!(pb->outputs & TKP_OUT_SET)) {
        *why = "rtopk: returns a kept set only, and no set was asked for";
        return 0;
    }
    return 1;
}

static int rtopk_approximate(const void *opts)
{
    return ((const struct rtopk_opts *)opts)->max_iter > 0;
}

static int rtopk_init(void *state, const struct tkp_problem *pb, const void *opts,
                      size_t *workspace_bytes, struct tkp_error *err)
{
    (void)err;
    struct rtopk_state *s = state;
    s->pb = *pb;
    s->opts = *(const struct rtopk_opts *)opts;
    /* the passes only read the row and write the kept mask: the workspace holds a 16-bit
     * row's upcast (cpu_row.h), nothing for float32 */
    *workspace_bytes = tkp_cpu_row_scratch_bytes(pb);
    return TKP_OK;
}

static int rtopk_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                     struct tkp_error *err)
{
    (void)stream;
    (void)err;
    struct rtopk_state *s = state;
    s->rows = s->iterations = 0;
    for (int64_t r = 0; r < s->pb.batch; r++)
        rtopk_row(s, tkp_cpu_row_f32(&s->pb, io->logits, r, workspace), io->k[r],
                  io->kept + r * s->pb.vocab);
    return TKP_OK;
}

static void rtopk_stats(const void *state, struct tkp_stats *out)
{
    const struct rtopk_state *s = state;
    memset(out, 0, sizeof *out);
    out->rows = s->rows;
    out->total[RTOPK_STAT_ITERATIONS] = (double)s->iterations;
    out->reported = TKP_STAT_BIT(RTOPK_STAT_ITERATIONS);
}

static const struct tkp_impl rtopk_cpu = {
    .state_size = sizeof(struct rtopk_state),
    .init = rtopk_init,
    .run = rtopk_run,
    .stats = rtopk_stats,
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16), /* cpu_row.h: tkp_cpu_row_f32 */
};

static const struct tkp_stat rtopk_statistics[] = { RTOPK_STATS(TKP_STAT_ROW) { NULL } };

const struct tkp_algo tkp_algo_rtopk = {
    .abi = TKP_ABI,
    .name = "rtopk",
    .summary = "binary search on the threshold value, then index-order selection (RTop-k)",
    .ops = TKP_TOPK,
    .outputs = TKP_OUT_SET,
    .flags = TKP_EXACT | TKP_DETERMINISTIC,
    .options = rtopk_options,
    .opts_size = sizeof(struct rtopk_opts),
    .supports = rtopk_supports,
    .approximate = rtopk_approximate,
    .cpu = &rtopk_cpu,
    .gpu = TKP_GPU_IMPL(tkp_rtopk_gpu),
    .statistics = rtopk_statistics,
};

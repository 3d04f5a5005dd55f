/* qrita.h — the CPU passes of Qrita (qrita_passes.c), one function per pass a GPU program makes
 * over a row or over its outlier buffer, the module's options, and what its two implementations
 * share (qrita.c: the table and the CPU one; a row of algos/common/tkp_gpu_impl.c: the GPU one).
 * qrita.c strings the passes together per row; the decisions between them are in qrita_rules.h. */
#ifndef QRITA_H
#define QRITA_H

#include <stdint.h>

#include "../tkp.h"
#include "qrita_rules.h"

#ifdef __cplusplus
extern "C" {
#endif

enum qrita_truncation { QRITA_TRUNC_AUTO, QRITA_TRUNC_OFF, QRITA_TRUNC_FORCE_FALLBACK };
enum qrita_search { QRITA_QUATERNARY, QRITA_TERNARY, QRITA_BINARY, QRITA_SORT };
enum qrita_switch { QRITA_ON, QRITA_OFF };

struct qrita_opts {
    int truncation, search, dedup, autotune; /* enum indices */
    double sigma_margin;
    int sample_block, max_iter;
    int heavy_n; /* index into qrita_heavy_choices: auto, 0, 1024, 4096 (GPU only; qrita.c) */
};

/* Shared by both implementations (qrita.c). The outlier buffer of a row, in keys: a quarter of
 * the row (4096 keys for small rows, never more than V); a row whose outliers overflow it falls
 * back to the full row. */
int64_t qrita_outlier_capacity(int64_t vocab);
/* The candidates the option heavy_n chose, -1 for auto (the choices: qrita.c). */
int qrita_heavy_n_chosen(const struct qrita_opts *o);
/* The GPU's heavy_n=auto: rows a SM up to which every row's search is a block's (past it a
 * warp searches each row): 2, or 4 where every row has top-k on and the largest k is past 256
 * over a long row (vocab x k > 2^27: at k = 1000 a row buffers ~2000 candidates that one warp
 * searches slowly).
 * Measured on the H100 (README, "Past B = #SMs"). */
int64_t qrita_block_rows_per_sm(const struct tkp_problem *pb);
/* The statistics both backends count (algos/tkp.h, struct tkp_stat): X(id, name, unit,
 * meaning), the indices of struct tkp_stats.total. */
#define QRITA_STATS(X)                                                                    \
    X(QRITA_STAT_HIT_RATE, "hit_rate", "fraction of rows",                                \
      "rows whose truncation sufficed (the search read the outlier buffer)")              \
    X(QRITA_STAT_OUTLIERS, "outliers", "candidates per row", "candidates gathered (N_t)") \
    X(QRITA_STAT_OUTLIER_MASS, "outlier_mass", "probability mass per row",                \
      "probability mass gathered by a top-p-alone row (S_t)")                             \
    X(QRITA_STAT_ITERATIONS, "iterations", "iterations per row",                          \
      "pivot-search iterations")                                                          \
    X(QRITA_STAT_SORTED, "sorted", "keys per row", "keys sorted by search=sort")          \
    X(QRITA_STAT_FALLBACKS, "fallbacks", "fallbacks per row",                             \
      "rows that tried truncation and searched the whole row")                            \
    /* one row per statistic, each ending in a backslash */
enum { QRITA_STATS(TKP_STAT_ID) QRITA_STAT_COUNT };
/* The statistics that apply to problem pb with options o (TKP_STAT_BIT of QRITA_STAT_*). */
unsigned qrita_reported(const struct tkp_problem *pb, const struct qrita_opts *o);

/* The GPU implementation (algos/common/tkp_gpu_impl.c, CUDA builds only; algos/tkp.h,
 * TKP_GPU_IMPL). */
extern const struct tkp_impl tkp_qrita_gpu;

/* Pass 0: count, mean and standard deviation of the finite values among x[0..n). Sums are in
 * double with a fixed shape that a GPU block reproduces: lane j (of QRITA_STAT_LANES) adds the
 * values i = j, j + LANES, ... in order, then lanes are folded pairwise by halving strides. */
#define QRITA_STAT_LANES 256
struct qrita_sample {
    int64_t count;
    double mean, std;
};
struct qrita_sample qrita_sample_stats(const float *x, int64_t n);

/* Pass 1: largest valid value, smallest and largest valid key, number of valid tokens, and the
 * keys > `above` written in index order to `buffer` while they fit in `capacity`; `gathered`
 * counts them all, so gathered > capacity means the buffer overflowed. */
struct qrita_scan {
    float max;
    uint32_t min_key, max_key;
    int64_t valid, gathered;
};
struct qrita_scan qrita_scan_gather(const float *x, int64_t vocab, uint32_t above,
                                    uint32_t *buffer, int64_t capacity);

/* Pass 2 (top-p without top-k): the fixed-point mass of the row, and of its keys > `above`;
 * `hist` (TKP_MASS_BINS entries) the mass of each bin of tkp_mass_bin. */
void qrita_row_mass(const float *x, int64_t vocab, float max, uint32_t above, uint64_t *total,
                    uint64_t *above_mass, uint64_t *hist);

/* The tokens a search reads: the outlier buffer (keys) or the whole row (values). */
struct qrita_pool {
    const uint32_t *keys;
    const float *row;
    int64_t size;
};

/* One search pass: the statistics of `count` ascending pivots over the pool, restricted to
 * `set` (qrita_restrict). */
void qrita_evaluate(const struct qrita_pool *pool, const uint32_t *pivot, int count,
                    struct qrita_measure measure, struct qrita_boundary set,
                    struct qrita_pivot_stat *out);

/* One boundary search: the set is the first `set_size` tokens of the canonical order, every one
 * of them in the pool with a key > `lo` and <= `hi` (the largest key), restricted to `set`. */
struct qrita_query {
    uint32_t lo, hi;
    struct qrita_measure measure;
    uint64_t target;
    int64_t set_size;
    struct qrita_boundary set;
};

/* How a search runs: `pivots` per iteration (1..3), at most `max_iter` iterations; with
 * `dedup` off every copy of the boundary value is kept. `iterations` accumulates. */
struct qrita_searcher {
    int pivots, max_iter, dedup;
    int64_t iterations;
};

/* Quaternary/ternary/binary pivot search. A search stopped by max_iter before it resolves keeps
 * every token above its tightest low pivot (a superset of the exact answer). */
struct qrita_boundary qrita_pivot_search(struct qrita_searcher *s, const struct qrita_pool *pool,
                                         const struct qrita_query *q);

/* The same answer from the pool's valid keys sorted in descending order (`sorted`, n keys). */
struct qrita_boundary qrita_sorted_boundary(const uint32_t *sorted, int64_t n, int dedup,
                                            const struct qrita_query *q);

/* The valid keys of the pool above `lo` (a query's lower end) into `out`, sorted descending
 * (LSD radix sort, `tmp` as large); returns their number. */
int64_t qrita_sort_pool(const struct qrita_pool *pool, uint32_t lo, uint32_t *out, uint32_t *tmp);

/* Final pass: kept[i] = 1 for the tokens of boundary b, in index order. */
void qrita_mask(const float *x, int64_t vocab, struct qrita_boundary b, uint8_t *kept);

#ifdef __cplusplus
}
#endif
#endif

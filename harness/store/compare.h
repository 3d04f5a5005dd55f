/* compare.h — `topkp compare A.h5 B.h5`: every cell the two results files share (the same
 * sweep and key: the whole cell identity, tkp_results_key), its median time in B against A's
 * with a distribution-free 95 % confidence interval on the ratio, and a verdict: faster,
 * slower, unchanged, or no-interval (too few samples to judge) (docs/RESULTS.md, "Results"). */
#ifndef TKP_COMPARE_H
#define TKP_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "../algos/tkp.h"

/* The verdicts, in the order of the summary line. */
enum tkp_verdict {
    TKP_FASTER, TKP_SLOWER, TKP_UNCHANGED, TKP_NO_INTERVAL, TKP_ONLY_A, TKP_ONLY_B,
    TKP_NOT_TIMED,
    TKP_N_VERDICTS
};

/* A distribution-free confidence interval for the median of n sorted samples: the order
 * statistics [x(l), x(n+1-l)] with the largest l for which P(Bin(n, 1/2) < l) <= alpha / 2,
 * so that it covers the true median with probability >= 1 - alpha. 0 with *lo, *hi set; -1
 * when n is too small for that level (then no interval is claimed). */
int tkp_median_interval(const double *sorted, size_t n, double alpha, double *lo, double *hi);

/* The ratio B/A of the medians and its 95 % interval from each median's 97.5 % interval
 * (Bonferroni: both cover their medians together with probability >= 95 %): [B_lo / A_hi,
 * B_hi / A_lo]. A verdict other than unchanged needs the interval to exclude 1 and the ratio
 * to be past 1 + threshold (slower) or below 1 / (1 + threshold) (faster); no-interval when
 * none can be claimed (fewer than 7 samples in a cell, or A's lower end 0: the ratio is shown,
 * not judged). a and b are sorted; *lo and *hi are NaN when no interval can be claimed. */
enum tkp_verdict tkp_compare_samples(double median_a, const double *a, size_t na,
                                     double median_b, const double *b, size_t nb,
                                     double threshold, double *ratio, double *lo, double *hi);

/* `topkp compare A B`: prints one line per cell of either file and the summary line to `out`.
 * TKP_OK, or an error naming the file that cannot be read as results. */
int tkp_compare_files(const char *path_a, const char *path_b, const char *sweep,
                      double threshold, FILE *out, struct tkp_error *err);

#endif

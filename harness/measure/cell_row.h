/* cell_row.h — what a module cell and a peer cell share once their repetitions are taken
 * (runner.c, peer_cell.c): the oracle's verdict on a sample of rows, the time statistics,
 * the bytes moved and the status of the results row. */
#ifndef TKP_CELL_ROW_H
#define TKP_CELL_ROW_H

#include "apply.h"
#include "judge_memo.h"
#include "plan.h"
#include "results_row.h"

/* Check up to `rows` rows spread over the batch against the oracle: sets rows_checked and
 * rows_exact. With `exact_required`, a differing row is an error (the module breaks the
 * contract); without (an approximate variant, a peer), the first difference goes into the
 * message and the status stays ok. `memo` (may be NULL) holds the oracle's results for b's
 * rows across cells (judge_memo.h). Returns the status code. */
int tkp_row_judge(struct tkp_cell_row *row, const struct tkp_batch *b, const uint8_t *kept,
                  const int64_t *samples, int32_t draws, int rows, int exact_required,
                  struct tkp_judge_memo *memo, struct tkp_error *err);
/* Time statistics of the samples, whether they settled under `timing` (noisy otherwise), bytes
 * read and written, GB/s and the bandwidth fraction. Without samples the times, GB/s and the
 * fraction are NaN; stdev_us is NaN below two samples, bw_fraction without a measured copy
 * bandwidth. */
void tkp_row_times(struct tkp_cell_row *row, const struct tkp_batch *b, int set_output,
                   int32_t draws, const double *samples, int64_t n,
                   const struct tkp_timing *timing, double copy_gbps);
/* The statistics columns (tkp_cell_row.stats) per row from module a's stats `s`, one per
 * statistic of a's table (algos/tkp.h, struct tkp_stat); a column a does not declare or `s`
 * does not report, or every column when a or s is NULL or counted no rows, is NaN. */
void tkp_row_stats(struct tkp_cell_row *row, const struct tkp_algo *a,
                   const struct tkp_stats *s);
/* ok / unsupported / oom / error from a return code, and the message. */
void tkp_row_status(struct tkp_cell_row *row, int rc, const char *message);

#endif

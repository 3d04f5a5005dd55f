/* cell_row.c — see cell_row.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/oracle.h"
#include "cell_row.h"
#include "judge_memo.h"
#include "timing.h"

/* Judge row r against the oracle (built, or taken from the memo): 1 equal, 0 not (why in
 * msg), -1 when the oracle cannot be built (out of memory). */
static int judge_row(const struct tkp_batch *b, const uint8_t *kept, const int64_t *samples,
                     int32_t draws, int64_t r, struct tkp_judge_memo *memo, char *msg,
                     size_t msg_n)
{
    struct oracle_row o;
    const float min_p = b->min_p ? b->min_p[r] : 0.0f;
    /* the memo is keyed by (row, k, p): a row with min-p on is judged afresh */
    struct tkp_judge_memo *m = min_p > 0.0f ? NULL : memo;
    int held = m && tkp_judge_memo_get(m, r, b->k[r], b->p[r], &o);
    if (!held && oracle_row_init_minp(&o, b->logits + r * b->vocab, b->vocab, b->k[r], b->p[r],
                                      min_p))
        return -1;
    int ok = oracle_check_row(&o, kept ? kept + r * b->vocab : NULL,
                              samples ? samples + r * draws : NULL, draws, msg, msg_n);
    if (!held) {
        if (m)
            tkp_judge_memo_put(m, r, b->k[r], b->p[r], &o);
        oracle_row_free(&o);
    }
    return ok;
}

/* Check `rows` rows spread over the batch; returns rows equal to the oracle. The oracle orders
 * each row on the CPU (about 1.5 ms a 262k-token row with top-k, 27 ms with top-p alone, whose
 * total takes every token's mass), so the rows are judged in parallel (OpenMP), each once; the
 * counts, and the message of the first row that differs, are those of judging them in order,
 * stopping at a row whose oracle cannot be built. */
static int64_t verify(const struct tkp_batch *b, const uint8_t *kept, const int64_t *samples,
                      int32_t draws, int rows, struct tkp_judge_memo *memo, int64_t *checked,
                      char *why, size_t why_n)
{
    *checked = 0;
    if (rows <= 0 || b->batch <= 0)
        return 0;
    const int64_t step = b->batch > rows ? b->batch / rows : 1;
    int64_t n = (b->batch + step - 1) / step;
    if (n > rows)
        n = rows;
    signed char *ok = malloc((size_t)n);
    if (!ok)
        return 0;
    int64_t first_bad = n; /* the first differing row's index among the n, and its message */
    char first_msg[256] = "";
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (int64_t i = 0; i < n; i++) {
        char msg[256] = "";
        ok[i] = (signed char)judge_row(b, kept, samples, draws, i * step, memo, msg,
                                       sizeof msg);
        if (ok[i] == 0) {
#pragma omp critical(tkp_verify_first_bad)
            if (i < first_bad) {
                first_bad = i;
                memcpy(first_msg, msg, sizeof msg);
            }
        }
    }
    int64_t exact = 0;
    for (int64_t i = 0; i < n && ok[i] >= 0; i++) {
        if (i == first_bad)
            snprintf(why, why_n, "row %lld: %s", (long long)(i * step), first_msg);
        exact += ok[i];
        (*checked)++;
    }
    free(ok);
    return exact;
}

int tkp_row_judge(struct tkp_cell_row *row, const struct tkp_batch *b, const uint8_t *kept,
                  const int64_t *samples, int32_t draws, int rows, int exact_required,
                  struct tkp_judge_memo *memo, struct tkp_error *err)
{
    char why[300] = "";
    row->rows_exact = verify(b, kept, samples, draws, rows, memo, &row->rows_checked, why,
                             sizeof why);
    if (row->rows_exact == row->rows_checked)
        return TKP_OK;
    tkp_error_set(err, "%lld of %lld checked rows differ from the oracle; %s",
                  (long long)(row->rows_checked - row->rows_exact), (long long)row->rows_checked,
                  why);
    return exact_required ? TKP_EINVAL : TKP_OK;
}

void tkp_row_times(struct tkp_cell_row *row, const struct tkp_batch *b, int set_output,
                   int32_t draws, const double *samples, int64_t n,
                   const struct tkp_timing *timing, double copy_gbps)
{
    struct tkp_time_stats ts;
    tkp_time_summarize(samples, n, &ts);
    const int timed = n > 0 && samples;
    row->noisy = timed && !tkp_time_settled(timing, samples, n);
    row->median_us = timed ? ts.median : NAN;
    row->q1_us = timed ? ts.q1 : NAN;
    row->q3_us = timed ? ts.q3 : NAN;
    row->min_us = timed ? ts.min : NAN;
    row->max_us = timed ? ts.max : NAN;
    row->mean_us = timed ? ts.mean : NAN;
    row->stdev_us = timed && n > 1 ? ts.stdev : NAN;
    /* the logits in their element type, and each row's k and p */
    row->bytes_read = (double)(b->batch * b->vocab) * tkp_dtype_size(b->dtype) +
                      (double)b->batch * 8.0;
    row->bytes_written = (set_output ? (double)(b->batch * b->vocab) : 0.0) +
                         (double)(b->batch * draws) * 8.0;
    row->gbps = row->bw_fraction = NAN;
    if (timed && ts.median > 0) {
        row->gbps = (row->bytes_read + row->bytes_written) / (ts.median * 1e3);
        row->bw_fraction = copy_gbps > 0 ? row->gbps / copy_gbps : NAN;
    }
}

void tkp_row_stats(struct tkp_cell_row *row, const struct tkp_algo *a,
                   const struct tkp_stats *s)
{
    for (int i = 0; i < TKP_MAX_STAT_COLUMNS; i++)
        row->stats[i] = NAN;
    const struct tkp_stat *table = tkp_algo_statistics(a);
    for (int i = 0; s && s->rows > 0 && table && i < TKP_MAX_STATS && table[i].name; i++) {
        const int column = tkp_results_stat_column(table[i].name);
        if (column >= 0 && (s->reported & TKP_STAT_BIT(i)))
            row->stats[column] = s->total[i] / (double)s->rows;
    }
}

void tkp_row_status(struct tkp_cell_row *row, int rc, const char *message)
{
    const char *status = rc == TKP_OK ? "ok"
                         : rc == TKP_EUNSUPPORTED ? "unsupported"
                         : rc == TKP_ENOMEM ? "oom"
                                            : "error";
    snprintf(row->status, sizeof row->status, "%s", status);
    snprintf(row->message, sizeof row->message, "%s", message);
}

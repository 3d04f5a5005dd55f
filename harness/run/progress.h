/* progress.h — what `topkp run` tells the user while and after it runs (docs/USAGE.md, "A
 * five-minute tour"): a progress line per cell with the time left, and a summary at the end
 * (cells by status, the slowest cells, the file written). Times use tkp_format_us. */
#ifndef TKP_PROGRESS_H
#define TKP_PROGRESS_H

#include <stdio.h>

#include "plan.h"
#include "results.h"

#define TKP_PROGRESS_SLOWEST 3 /* cells the summary names */
#define TKP_PROGRESS_BUCKETS 120 /* a log-scale histogram of cell times, 10 a decade */

struct tkp_progress_group { /* the cells of one algorithm (options, variant) at one B x V */
    double seconds;         /* wall time of its finished cells, summed */
    int64_t done, left;
};

struct tkp_progress_cell { /* one of the slowest */
    size_t cell;
    double seconds, median_us;
};

struct tkp_progress {
    const struct tkp_plan *plan;
    uint32_t *group;   /* per cell: its index into groups */
    uint8_t *skipped;  /* per cell: already done (--resume) */
    struct tkp_progress_group *groups;
    size_t n_groups;
    double known_left;    /* seconds left in groups with a finished cell (their mean each) */
    int64_t unknown_left; /* cells left in groups with none */
    int64_t hist[TKP_PROGRESS_BUCKETS], finished;
    int64_t ok, noisy, unsupported, oom, error, skipped_n;
    struct tkp_progress_cell slowest[TKP_PROGRESS_SLOWEST];
    double started_us;
    int report_fd; /* TKP_PROGRESS_FD: where "cells DONE TOTAL" lines go (-1: nowhere) */
};

/* The environment variable a parent (`topkp run --gpus`, multi_gpu.c) sets to a pipe's file
 * descriptor: the run writes "cells DONE TOTAL\n" there once its --resume skips are counted and
 * after each cell. */
#define TKP_PROGRESS_FD_ENV "TKP_PROGRESS_FD"

/* Group the plan's cells; TKP_ENOMEM when the tables do not fit. */
int tkp_progress_init(struct tkp_progress *p, const struct tkp_plan *plan, struct tkp_error *err);
void tkp_progress_free(struct tkp_progress *p);
/* Write "cells DONE TOTAL" to the report descriptor, when there is one. */
void tkp_progress_report(struct tkp_progress *p);
/* Cell `i` was done before this run (--resume): it is neither run nor waited for. */
void tkp_progress_skip(struct tkp_progress *p, size_t i);
int tkp_progress_skipped(const struct tkp_progress *p, size_t i);
/* Cell `i` finished in `seconds` of wall time with this row: count it and print its line. */
void tkp_progress_done(struct tkp_progress *p, size_t i, const struct tkp_cell_row *row,
                       double seconds, FILE *out);
/* Seconds the cells not yet run should take: each the mean wall time of the finished cells of
 * its group (same algorithm, options and B x V), or, in a group with none yet, the median of
 * every finished cell (a sweep's cell times are heavy-tailed: one slow algorithm at the largest
 * size would make a mean overestimate every other cell). */
double tkp_progress_left_seconds(const struct tkp_progress *p);
/* The summary: cells by status, the slowest few with their time, and "wrote FILE" when
 * `wrote` (the run ended without an error). */
void tkp_progress_summary(const struct tkp_progress *p, const char *output, int wrote, FILE *out);

#endif

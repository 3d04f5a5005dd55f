/* timing.h — repetition statistics and the stopping rule shared by the CPU and GPU timers:
 * repeat until min_reps and a relative IQR below target_rel, at most max_reps, and never past
 * max_seconds of the cell's wall-clock time (warm-up, untimed work and the spread checks
 * included; docs/ROBUSTNESS.md, "Limits that bound"); report median, quartiles, min, max,
 * mean, stdev. */
#ifndef TKP_TIMING_H
#define TKP_TIMING_H

#include <stdint.h>

#include "plan.h"

/* The measurement policy (README, "Results"): a cell's times have settled only with at least
 * this many samples, whatever its config asks; fewer, and the row is flagged noisy. */
#define TKP_POLICY_MIN_SAMPLES 10
/* Warm-up (timing->warmup calls, then more until timing->warmup_seconds have passed) stops
 * after this many calls in any case. */
#define TKP_WARMUP_MAX_CALLS 10000

struct tkp_time_stats {
    double median, q1, q3, min, max, mean, stdev; /* microseconds */
    int64_t n;
};

void tkp_time_summarize(const double *us, int64_t n, struct tkp_time_stats *out);
/* Has the spread of n samples settled: at least min_reps and TKP_POLICY_MIN_SAMPLES, and a
 * relative IQR below target_rel? A cell whose timer stopped without it (time or repetition
 * cap) is `noisy`. */
int tkp_time_settled(const struct tkp_timing *t, const double *us, int64_t n);
double tkp_now_us(void); /* monotonic clock */
/* A time for people to read, in the unit that suits it: "12.3 us", "150.4 ms", "1.50 s",
 * "2 min 05 s", "1 h 03 min"; "-" for a negative or non-finite time. Every time the CLI
 * prints goes through it. Returns buf. */
char *tkp_format_us(double us, char *buf, size_t n);

/* One source of timed repetitions: warm() runs once untimed; ready() (NULL: nothing) runs
 * once after the warm-up, before the first timed repetition (a CUDA graph is captured there);
 * take() runs once timed (L2 flushed first when cold), giving microseconds and the SM clock
 * read after it (0: unknown). */
struct tkp_rep_source {
    int (*warm)(void *ctx, struct tkp_error *err);
    int (*ready)(void *ctx, struct tkp_error *err);
    int (*take)(void *ctx, int cold, double *us, double *clock_mhz, struct tkp_error *err);
    void *ctx;
};

/* The timer policy of docs/DESIGN.md shared by modules and peers: timing->warmup untimed runs and
 * more until timing->warmup_seconds have passed (the first cell of a run warms the process as
 * much as any other: clocks, page faults, lazily loaded kernels), then repetitions until the
 * rule above stops them (the spread checked at min_reps, then each time the count grew by a
 * sixteenth; one sample at least); a sample taken below 90% of max_clock_mhz is
 * counted in *throttled and left out. *samples is malloc'd (timing->max_reps entries). */
int tkp_time_repetitions(const struct tkp_timing *timing, const struct tkp_rep_source *src,
                         double max_clock_mhz, double **samples, int64_t *n, int64_t *throttled,
                         struct tkp_error *err);

#endif

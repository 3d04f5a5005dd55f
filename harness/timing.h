/* timing.h — repetition statistics and the stopping rule shared by the CPU and GPU timers:
 * repeat until min_reps and either max_seconds of measured time or a relative IQR below
 * target_rel, at most max_reps; report median, quartiles, min, max, mean, stdev. */
#ifndef TKP_TIMING_H
#define TKP_TIMING_H

#include <stdint.h>

#include "plan.h"

struct tkp_time_stats {
    double median, q1, q3, min, max, mean, stdev; /* microseconds */
    int64_t n;
};

void tkp_time_summarize(const double *us, int64_t n, struct tkp_time_stats *out);
/* Should a timer that has taken n samples (total_us of measured time) stop? */
int tkp_time_should_stop(const struct tkp_timing *t, const double *us, int64_t n,
                         double total_us);
double tkp_now_us(void); /* monotonic clock */

#endif

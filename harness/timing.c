/* timing.c — see timing.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted values, linearly interpolated. */
static double quantile(const double *sorted, int64_t n, double q)
{
    double pos = q * (double)(n - 1);
    int64_t lo = (int64_t)floor(pos);
    int64_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]);
}

void tkp_time_summarize(const double *us, int64_t n, struct tkp_time_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0)
        return;
    double *sorted = malloc(sizeof *sorted * (size_t)n);
    memcpy(sorted, us, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, by_value);
    out->median = quantile(sorted, n, 0.5);
    out->q1 = quantile(sorted, n, 0.25);
    out->q3 = quantile(sorted, n, 0.75);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++)
        sum += us[i];
    out->mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++)
        sq += (us[i] - out->mean) * (us[i] - out->mean);
    out->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    free(sorted);
}

int tkp_time_should_stop(const struct tkp_timing *t, const double *us, int64_t n,
                         double total_us)
{
    if (n >= t->max_reps)
        return 1;
    if (n < t->min_reps)
        return 0;
    if (total_us >= t->max_seconds * 1e6)
        return 1;
    struct tkp_time_stats s;
    tkp_time_summarize(us, n, &s);
    return s.median > 0 && (s.q3 - s.q1) / s.median < t->target_rel;
}

double tkp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* timing.c — see timing.h. */
#include <math.h>
#include <stdio.h>
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

int tkp_time_settled(const struct tkp_timing *t, const double *us, int64_t n)
{
    if (n < t->min_reps || n < TKP_POLICY_MIN_SAMPLES || n < 1)
        return 0;
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

/* Warm-up: timing->warmup calls, then more until warmup_seconds have passed (at most
 * TKP_WARMUP_MAX_CALLS), none once the cell's wall-clock cap `cap` has passed. */
static int warm_up(const struct tkp_timing *timing, const struct tkp_rep_source *src, double cap,
                   struct tkp_error *err)
{
    const double start = tkp_now_us();
    for (int w = 0; w < timing->warmup ||
                    (timing->warmup > 0 && w < TKP_WARMUP_MAX_CALLS &&
                     tkp_now_us() - start < timing->warmup_seconds * 1e6);
         w++) {
        if (w > 0 && tkp_now_us() >= cap)
            break;
        int rc = src->warm(src->ctx, err);
        if (rc)
            return rc;
    }
    return TKP_OK;
}

int tkp_time_repetitions(const struct tkp_timing *timing, const struct tkp_rep_source *src,
                         double max_clock_mhz, double **samples, int64_t *n, int64_t *throttled,
                         struct tkp_error *err)
{
    *samples = malloc(sizeof(double) * (size_t)timing->max_reps);
    *n = *throttled = 0;
    const double cap = tkp_now_us() + timing->max_seconds * 1e6;
    int rc = warm_up(timing, src, cap, err);
    if (rc == TKP_OK && src->ready)
        rc = src->ready(src->ctx, err);
    int64_t next_check = timing->min_reps;
    for (int attempts = 0; rc == TKP_OK && *n < timing->max_reps &&
                           attempts < 4 * timing->max_reps;
         attempts++) {
        if (*n > 0 && tkp_now_us() >= cap)
            break;
        /* the spread is checked at n = min_reps, then each time n grew by a sixteenth: the
         * sorts then cost O(n log n) in all, not one sort per sample */
        if (*n >= next_check) {
            if (tkp_time_settled(timing, *samples, *n))
                break;
            next_check = *n + (*n / 16 > 1 ? *n / 16 : 1);
        }
        double dt, clock = 0;
        rc = src->take(src->ctx, timing->cold, &dt, &clock, err);
        if (rc == TKP_OK && clock > 0 && max_clock_mhz > 0 && clock < 0.9 * max_clock_mhz)
            (*throttled)++;
        else if (rc == TKP_OK)
            (*samples)[(*n)++] = dt;
    }
    return rc;
}

char *tkp_format_us(double us, char *buf, size_t n)
{
    const double s = us * 1e-6;
    if (!isfinite(us) || us < 0)
        snprintf(buf, n, "-");
    else if (us < 999.95) /* thresholds at the rounding edge: never "1000.0 us" */
        snprintf(buf, n, "%.1f us", us);
    else if (us < 999950)
        snprintf(buf, n, "%.1f ms", us * 1e-3);
    else if (s < 59.995)
        snprintf(buf, n, "%.2f s", s);
    else if (s < 3599.5)
        snprintf(buf, n, "%d min %02d s", (int)(lround(s) / 60), (int)(lround(s) % 60));
    else
        snprintf(buf, n, "%lld h %02d min", (long long)(llround(s / 60) / 60),
                 (int)(llround(s / 60) % 60));
    return buf;
}

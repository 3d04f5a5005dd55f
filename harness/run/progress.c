/* progress.c — see progress.h. */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "axes.h"
#include "progress.h"
#include "timing.h"

/* FNV-1a over the fields that make a cell's group: algorithm, variant, options, B and V. */
static uint64_t group_hash(const struct tkp_cell *c)
{
    char text[sizeof c->variant + sizeof c->options + 128];
    snprintf(text, sizeof text, "%s|%s|%s|%lld|%lld", c->algo->name, c->variant, c->options,
             (long long)c->batch, (long long)c->vocab);
    uint64_t h = 1469598103934665603ull;
    for (const char *s = text; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

struct keyed {
    uint64_t hash;
    size_t cell;
};

static int by_hash(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    return (x->hash > y->hash) - (x->hash < y->hash);
}

/* Number the groups: cells of equal hash share one. */
static void assign_groups(struct tkp_progress *p, struct keyed *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        k[i] = (struct keyed){ group_hash(&p->plan->cells[i]), i };
    qsort(k, n, sizeof *k, by_hash);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || k[i].hash != k[i - 1].hash)
            p->n_groups++;
        p->group[k[i].cell] = (uint32_t)(p->n_groups - 1);
        p->groups[p->n_groups - 1].left++;
    }
    p->unknown_left = (int64_t)n;
}


/* The descriptor a parent set for its worker's progress lines (TKP_PROGRESS_FD_ENV): a whole
 * decimal number of an open descriptor above stderr, else none (-1): a damaged value never
 * sends the lines to stdin, stdout or stderr. */
static int report_fd_of(const char *text)
{
    char *end = NULL;
    long fd = text && *text ? strtol(text, &end, 10) : -1;
    if (!end || *end || fd <= 2 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0)
        return -1;
    return (int)fd;
}

int tkp_progress_init(struct tkp_progress *p, const struct tkp_plan *plan, struct tkp_error *err)
{
    memset(p, 0, sizeof *p);
    p->plan = plan;
    const size_t n = plan->n ? plan->n : 1;
    struct keyed *k = malloc(sizeof *k * n);
    p->group = malloc(sizeof *p->group * n);
    p->skipped = calloc(n, 1);
    p->groups = calloc(n, sizeof *p->groups);
    if (!k || !p->group || !p->skipped || !p->groups) {
        free(k);
        tkp_progress_free(p);
        tkp_error_set(err, "out of host memory for the progress of %zu cells", plan->n);
        return TKP_ENOMEM;
    }
    assign_groups(p, k, plan->n);
    free(k);
    p->started_us = tkp_now_us();
    p->report_fd = report_fd_of(getenv(TKP_PROGRESS_FD_ENV));
    if (p->report_fd >= 0) /* for this process only: a peer worker it starts gets none */
        fcntl(p->report_fd, F_SETFD, FD_CLOEXEC);
    return TKP_OK;
}

void tkp_progress_report(struct tkp_progress *p)
{
    if (p->report_fd < 0)
        return;
    char line[64];
    const int n = snprintf(line, sizeof line, "cells %lld %zu\n",
                           (long long)(p->finished + p->skipped_n), p->plan->n);
    if (write(p->report_fd, line, (size_t)n) != n) /* the parent went away: report no more */
        p->report_fd = -1;
}

void tkp_progress_free(struct tkp_progress *p)
{
    free(p->group);
    free(p->skipped);
    free(p->groups);
    memset(p, 0, sizeof *p);
}

/* One cell of group g is no longer waited for (it ran in `seconds`, or was skipped: < 0). */
static void group_take(struct tkp_progress *p, struct tkp_progress_group *g, double seconds)
{
    if (g->done)
        p->known_left -= g->seconds / (double)g->done * (double)g->left;
    else
        p->unknown_left -= g->left;
    g->left--;
    if (seconds >= 0) {
        g->seconds += seconds;
        g->done++;
    }
    if (g->done)
        p->known_left += g->seconds / (double)g->done * (double)g->left;
    else
        p->unknown_left += g->left;
}

void tkp_progress_skip(struct tkp_progress *p, size_t i)
{
    if (p->skipped[i])
        return;
    p->skipped[i] = 1;
    p->skipped_n++;
    group_take(p, &p->groups[p->group[i]], -1);
}

int tkp_progress_skipped(const struct tkp_progress *p, size_t i)
{
    return p->skipped[i];
}

static int bucket_of(double seconds)
{
    double b = seconds > 1e-6 ? floor(10.0 * log10(seconds * 1e6)) : 0;
    return b < TKP_PROGRESS_BUCKETS - 1 ? (int)b : TKP_PROGRESS_BUCKETS - 1;
}

/* The median finished cell time, to a bucket's width (about 25%). */
static double median_seconds(const struct tkp_progress *p)
{
    int64_t seen = 0;
    for (int b = 0; b < TKP_PROGRESS_BUCKETS; b++)
        if ((seen += p->hist[b]) * 2 >= p->finished)
            return 1e-6 * pow(10.0, (b + 0.5) / 10.0);
    return 0;
}

double tkp_progress_left_seconds(const struct tkp_progress *p)
{
    double left = p->known_left + (double)p->unknown_left * median_seconds(p);
    return left > 0 ? left : 0;
}

static void count_status(struct tkp_progress *p, const struct tkp_cell_row *row)
{
    if (strcmp(row->status, "ok") == 0) {
        p->ok++;
        p->noisy += row->noisy != 0;
    } else if (strcmp(row->status, "unsupported") == 0) {
        p->unsupported++;
    } else if (strcmp(row->status, "oom") == 0) {
        p->oom++;
    } else {
        p->error++;
    }
}

/* Keep the TKP_PROGRESS_SLOWEST slowest cells, slowest first. */
static void note_slowest(struct tkp_progress *p, size_t i, double seconds, double median_us)
{
    int at = TKP_PROGRESS_SLOWEST;
    while (at > 0 && (p->slowest[at - 1].seconds < seconds || !p->slowest[at - 1].seconds))
        at--;
    if (at == TKP_PROGRESS_SLOWEST)
        return;
    memmove(&p->slowest[at + 1], &p->slowest[at],
            sizeof p->slowest[0] * (TKP_PROGRESS_SLOWEST - 1 - (size_t)at));
    p->slowest[at] = (struct tkp_progress_cell){ i, seconds, median_us };
}

/* "quick naive_sort V=32768 B=64 k=50 p=0.9": the TKP_AXIS_PROGRESS axes (axes.c) */
static void cell_text(const struct tkp_cell *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s%s%s", c->sweep, c->algo->name, c->variant[0] ? ":" : "", c->variant);
    tkp_axes_append(c, TKP_AXES_PROGRESS, buf, n);
}

void tkp_progress_done(struct tkp_progress *p, size_t i, const struct tkp_cell_row *row,
                       double seconds, FILE *out)
{
    group_take(p, &p->groups[p->group[i]], seconds);
    p->hist[bucket_of(seconds)]++;
    p->finished++;
    count_status(p, row);
    note_slowest(p, i, seconds, row->n_samples > 0 ? row->median_us : NAN);
    char cell[512], t[32], median[40] = "", left[48] = "";
    cell_text(&p->plan->cells[i], cell, sizeof cell);
    if (row->n_samples > 0) /* a cell that never ran has no time */
        snprintf(median, sizeof median, " %s", tkp_format_us(row->median_us, t, sizeof t));
    const size_t done = (size_t)(p->finished + p->skipped_n);
    if (done < p->plan->n)
        snprintf(left, sizeof left, "  (%s left)",
                 tkp_format_us(tkp_progress_left_seconds(p) * 1e6, t, sizeof t));
    fprintf(out, "[%zu/%zu] %s: %s%s%s%s%s%s\n", i + 1, p->plan->n, cell, row->status, median,
            row->noisy ? ", noisy" : "", row->message[0] ? " — " : "", row->message, left);
    tkp_progress_report(p);
}

/* "  ok  36 (2 noisy)" and the other statuses that occurred. */
static void print_counts(const struct tkp_progress *p, FILE *out)
{
    fprintf(out, "  %-12s %6lld", "ok", (long long)p->ok);
    if (p->noisy)
        fprintf(out, "  (%lld noisy: timed to a cap before the times settled)",
                (long long)p->noisy);
    fputc('\n', out);
    const char *names[] = { "unsupported", "oom", "error" };
    const int64_t counts[] = { p->unsupported, p->oom, p->error };
    for (int s = 0; s < 3; s++)
        if (counts[s] || s != 1) /* oom only when it happened */
            fprintf(out, "  %-12s %6lld\n", names[s], (long long)counts[s]);
}

void tkp_progress_summary(const struct tkp_progress *p, const char *output, int wrote, FILE *out)
{
    char total[32];
    tkp_format_us(tkp_now_us() - p->started_us, total, sizeof total);
    fprintf(out, "summary: %lld cell%s run in %s", (long long)p->finished,
            p->finished == 1 ? "" : "s", total);
    if (p->skipped_n)
        fprintf(out, ", %lld already done", (long long)p->skipped_n);
    fputc('\n', out);
    print_counts(p, out);
    if (p->finished > 1 && p->slowest[0].seconds > 0)
        fputs("slowest cells (wall time, median of the repetitions):\n", out);
    for (int s = 0; p->finished > 1 && s < TKP_PROGRESS_SLOWEST && p->slowest[s].seconds > 0;
         s++) {
        char cell[512], wall[32], median[32];
        cell_text(&p->plan->cells[p->slowest[s].cell], cell, sizeof cell);
        fprintf(out, "  %10s  %10s  %s\n",
                tkp_format_us(p->slowest[s].seconds * 1e6, wall, sizeof wall),
                tkp_format_us(p->slowest[s].median_us, median, sizeof median), cell);
    }
    if (wrote)
        fprintf(out, "wrote %s\n", output);
}

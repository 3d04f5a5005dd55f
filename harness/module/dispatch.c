/* dispatch.c — see dispatch.h: the slug of a device, the lookup of a cell's variant in a
 * dispatch table (each variant's time interpolated between the fit's grid points) and the
 * setting of its options that a config left unset (docs/DESIGN.md, "Variants and the dispatch
 * table"). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "dispatch.h"
#include "gpu.h"

/* Does t[0..len) match ^[a-z]+[0-9]+[a-z]*$, letters of either case? */
static int slug_token(const char *t, size_t len)
{
    size_t i = 0;
    while (i < len && isalpha((unsigned char)t[i]))
        i++;
    const size_t letters = i;
    while (i < len && isdigit((unsigned char)t[i]))
        i++;
    const size_t digits = i - letters;
    while (i < len && isalpha((unsigned char)t[i]))
        i++;
    return letters && digits && i == len;
}

void tkp_dispatch_slug(const char *gpu_name, char *slug, size_t n)
{
    slug[0] = 0;
    for (const char *at = gpu_name; *at;) {
        size_t len = 0;
        while (isascii((unsigned char)at[len]) && isalnum((unsigned char)at[len]))
            len++;
        if (slug_token(at, len) && len < n) {
            for (size_t i = 0; i < len; i++)
                slug[i] = (char)tolower((unsigned char)at[i]);
            slug[len] = 0;
            return;
        }
        at += len ? len : 1;
    }
}

/* The table and the cell the lookup works on (tkp_dispatch_lookup). */
struct cell_query {
    const struct tkp_dispatch_row *rows;
    size_t n;
    const char *slug, *module, *dtype;
};

/* Is row r in the query's table: its slug and module, its dtype or "*"? */
static int in_table(const struct cell_query *q, const struct tkp_dispatch_row *r)
{
    return strcmp(r->slug, q->slug) == 0 && strcmp(r->module, q->module) == 0 &&
           (strcmp(r->dtype, "*") == 0 || strcmp(r->dtype, q->dtype) == 0);
}

static double log_k(int64_t k)
{
    return log((double)(k > 1 ? k : 1));
}

/* The table's k nearest to k in log, a tie to the larger; -1 when the table has no row. */
static int64_t nearest_k(const struct cell_query *q, int64_t k)
{
    int64_t best = -1;
    for (size_t i = 0; i < q->n; i++) {
        const int64_t rk = q->rows[i].k;
        if (!in_table(q, &q->rows[i]) || rk == best)
            continue;
        const double d = fabs(log_k(rk) - log_k(k)), bd = fabs(log_k(best) - log_k(k));
        if (best < 0 || d < bd || (d == bd && rk > best))
            best = rk;
    }
    return best;
}

/* The grid's neighbours of x along B (vocab 0) or V (vocab 1) at k: *lo the largest grid value
 * at or below x, *hi the smallest at or above; outside the grid both are its nearest end. */
static void neighbours(const struct cell_query *q, int64_t k, int vocab, int64_t x, int64_t *lo,
                       int64_t *hi)
{
    int64_t least = -1, most = -1;
    *lo = *hi = -1;
    for (size_t i = 0; i < q->n; i++) {
        const struct tkp_dispatch_row *r = &q->rows[i];
        if (!in_table(q, r) || r->k != k)
            continue;
        const int64_t g = vocab ? r->vocab : r->batch;
        least = least < 0 || g < least ? g : least;
        most = g > most ? g : most;
        if (g <= x && g > *lo)
            *lo = g;
        if (g >= x && (*hi < 0 || g < *hi))
            *hi = g;
    }
    if (*lo < 0)
        *lo = least;
    if (*hi < 0)
        *hi = most;
}

/* The time of variant `options` at grid point (b, v, k); -1 when the table has no such row. */
static double time_at(const struct cell_query *q, const char *options, int64_t b, int64_t v,
                      int64_t k)
{
    for (size_t i = 0; i < q->n; i++) {
        const struct tkp_dispatch_row *r = &q->rows[i];
        if (r->batch == b && r->vocab == v && r->k == k && in_table(q, r) &&
            strcmp(r->options, options) == 0)
            return r->us;
    }
    return -1;
}

/* The weight of x between grid values lo and hi in log (0 at lo; 0 when lo == hi). */
static double log_weight(int64_t x, int64_t lo, int64_t hi)
{
    return lo == hi ? 0 : (log((double)x) - log((double)lo)) / (log((double)hi) - log((double)lo));
}

/* One "name=value" of a list of them joined by commas (a row's options, a cell's given ones). */
struct assignment {
    const char *text, *value; /* the whole entry; its value (NULL: no '=') */
    size_t len, name_len, value_len;
};

/* The entry at *at into *e, *at moved past it; 0 at the end of the list. */
static int next_assignment(const char **at, struct assignment *e)
{
    if (!*at || !**at)
        return 0;
    const size_t len = strcspn(*at, ","), eq = strcspn(*at, "=");
    e->text = *at;
    e->len = len;
    e->name_len = eq < len ? eq : len;
    e->value = eq < len ? *at + eq + 1 : NULL;
    e->value_len = eq < len ? len - eq - 1 : 0;
    *at += len + ((*at)[len] != 0);
    return 1;
}

/* The entry of `list` that names option `name` (name_len bytes) into *found; 0 when none. */
static int find_assignment(const char *list, const char *name, size_t name_len,
                           struct assignment *found)
{
    for (const char *at = list; next_assignment(&at, found);)
        if (found->value && found->name_len == name_len &&
            strncmp(found->text, name, name_len) == 0)
            return 1;
    return 0;
}

/* Does every option of `options` that `given` names have the same value in both? */
static int agrees(const char *options, const char *given)
{
    struct assignment row, want;
    for (const char *at = options; given && next_assignment(&at, &row);)
        if (row.value && find_assignment(given, row.text, row.name_len, &want) &&
            (want.value_len != row.value_len ||
             strncmp(want.value, row.value, row.value_len) != 0))
            return 0;
    return 1;
}

const struct tkp_dispatch_row *tkp_dispatch_lookup(const struct tkp_dispatch_row *rows, size_t n,
                                                   const char *slug, const char *module,
                                                   const char *dtype, int64_t batch,
                                                   int64_t vocab, int64_t k, const char *given,
                                                   double *us)
{
    const struct cell_query q = { rows, n, slug, module, dtype };
    const int64_t gk = nearest_k(&q, k);
    int64_t b[2], v[2];
    neighbours(&q, gk, 0, batch, &b[0], &b[1]);
    neighbours(&q, gk, 1, vocab, &v[0], &v[1]);
    const double wb = log_weight(batch, b[0], b[1]), wv = log_weight(vocab, v[0], v[1]);
    const double w[2][2] = { { (1 - wb) * (1 - wv), (1 - wb) * wv }, { wb * (1 - wv), wb * wv } };
    const struct tkp_dispatch_row *best = NULL;
    double best_log = 0;
    for (size_t i = 0; gk >= 0 && i < n; i++) {
        const struct tkp_dispatch_row *r = &rows[i];
        if (r->batch != b[0] || r->vocab != v[0] || r->k != gk || !in_table(&q, r) ||
            !agrees(r->options, given))
            continue;
        double lt = 0;
        int missing = 0;
        for (int j = 0; j < 4; j++) {
            const double t = time_at(&q, r->options, b[j >> 1], v[j & 1], gk);
            missing |= !(t > 0);
            lt += missing ? 0 : w[j >> 1][j & 1] * log(t);
        }
        if (!missing && (!best || lt < best_log)) {
            best = r;
            best_log = lt;
        }
    }
    if (us)
        *us = best ? exp(best_log) : 0;
    return best;
}

/* Is option `name` (name_len bytes) of module a in the bitmask `given`? */
static int is_given(const struct tkp_algo *a, unsigned given, const char *name, size_t name_len)
{
    for (const struct tkp_option *o = a->options; o && o->name; o++)
        if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0)
            return (given >> (o - a->options)) & 1u;
    return 0;
}

int tkp_dispatch_apply(const struct tkp_algo *a, void *opts, unsigned given,
                       const struct tkp_dispatch_row *row, struct tkp_error *err)
{
    char assignment[128];
    struct assignment e;
    for (const char *at = row->options; next_assignment(&at, &e);) {
        snprintf(assignment, sizeof assignment, "%.*s", (int)e.len, e.text);
        struct tkp_error why;
        if (!is_given(a, given, e.text, e.name_len) &&
            tkp_option_assign(a, opts, assignment, &why) != TKP_OK) {
            tkp_error_set(err, "%s: %s", row->where, why.msg);
            return TKP_EINVAL;
        }
    }
    return TKP_OK;
}

int tkp_dispatch_device_slug(char *slug, size_t n)
{
    const char *forced = getenv("TKP_DISPATCH_SLUG");
    struct tkp_gpu_props props;
    struct tkp_error err;
    slug[0] = 0;
    if (forced && *forced)
        snprintf(slug, n, "%s", forced);
    else if (tkp_gpu_count() > 0 && tkp_gpu_props(&props, &err) == TKP_OK)
        tkp_dispatch_slug(props.name, slug, n);
    return slug[0] != 0;
}

/* oracle.c — see oracle.h. Deliberately simple: its own radix selection and sort on
 * order-preserving keys, and long-double masses. Only the prefix of the canonical order a
 * check can read is ordered: the top-k set (or its first token when p <= 0), or every valid
 * token when top-k is off (the top-p total sums every weight in canonical order). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

#define BAND 1e-6L

/* A valid token: `key` ascending is the canonical order's value part (value descending,
 * -0.0 == +0.0); ties keep index order, which every pass below preserves (stable). */
struct entry {
    uint32_t key;
    int32_t i;
};

static uint32_t canonical_key(float v)
{
    uint32_t u;
    if (v == 0.0f)
        v = 0.0f;
    memcpy(&u, &v, sizeof u);
    u = (u & 0x80000000u) ? ~u : u | 0x80000000u; /* ascending with v */
    return ~u;
}

/* Stable LSD radix sort of e[0..n) by key, three passes of 11 bits through tmp. */
static void sort_entries(struct entry *e, int64_t n, struct entry *tmp)
{
    static const int shift[] = { 0, 11, 22 };
    for (int d = 0; d < 3; d++) {
        int64_t count[2049] = { 0 };
        for (int64_t j = 0; j < n; j++)
            count[((e[j].key >> shift[d]) & 2047u) + 1]++;
        for (int b = 0; b < 2048; b++)
            count[b + 1] += count[b];
        for (int64_t j = 0; j < n; j++)
            tmp[count[(e[j].key >> shift[d]) & 2047u]++] = e[j];
        memcpy(e, tmp, sizeof *e * (size_t)n);
    }
}

/* The bin of a 16-bit histogram where the m-th smallest key falls; *before counts the keys
 * in lower bins. */
static uint32_t bin_of_rank(const int64_t *hist, int64_t m, int64_t *before)
{
    uint32_t b = 0;
    while (*before + hist[b] < m)
        *before += hist[b++];
    return b;
}

/* Move the first m (1 <= m <= n) entries of the canonical order to e[0..m), in index order:
 * find the m-th smallest key K (two 16-bit histograms), then keep every key below K and the
 * first (lowest-index) entries equal to K. */
static int select_first(struct entry *e, int64_t n, int64_t m)
{
    int64_t *hist = malloc(sizeof *hist * 65536);
    if (!hist)
        return -1;
    memset(hist, 0, sizeof *hist * 65536);
    for (int64_t j = 0; j < n; j++)
        hist[e[j].key >> 16]++;
    int64_t below = 0;
    uint32_t hi = bin_of_rank(hist, m, &below);
    memset(hist, 0, sizeof *hist * 65536);
    for (int64_t j = 0; j < n; j++)
        if (e[j].key >> 16 == hi)
            hist[e[j].key & 0xffffu]++;
    uint32_t threshold = hi << 16 | bin_of_rank(hist, m, &below);
    free(hist);
    int64_t ties = m - below, out = 0;
    for (int64_t j = 0; j < n; j++)
        if (e[j].key < threshold || (e[j].key == threshold && ties-- > 0))
            e[out++] = e[j];
    return 0;
}

/* How many tokens of the canonical order a check can read: n_max (the whole top-k set when
 * top-p is on, for its total). */
static int64_t prefix_needed(int64_t set_size, float p)
{
    return (p < 1.0f && !(p > 0.0f) && set_size > 0) ? 1 : set_size;
}

/* order[0..m) and weight[0..m): the first m of the n valid tokens e[0..n) in canonical order
 * (e is reordered). */
static int order_prefix(struct oracle_row *o, const float *x, struct entry *e, int64_t n,
                        int64_t m)
{
    struct entry *tmp = malloc(sizeof *tmp * (size_t)(m ? m : 1));
    if (!tmp || (m < n && m > 0 && select_first(e, n, m))) {
        free(tmp);
        return -1;
    }
    sort_entries(e, m, tmp);
    free(tmp);
    int infs = m > 0 && isinf(x[e[0].i]);
    for (int64_t j = 0; j < m; j++) {
        float v = x[e[j].i];
        o->order[j] = e[j].i;
        if (infs)
            o->weight[j] = isinf(v) ? 1.0L : 0.0L;
        else if (j > 0 && v == x[e[j - 1].i]) /* a tie: the same mass, without expl */
            o->weight[j] = o->weight[j - 1];
        else
            o->weight[j] = expl((long double)v - (long double)x[e[0].i]);
    }
    return 0;
}

/* min-p's band of candidate counts (docs/SEMANTICS.md, "min-p"): c[0] tokens have a ratio to
 * the row's largest weight surely at or above min_p, c[1] possibly (min_p BAND-relative, plus
 * 2^-38 for the fixed point's floor); min_p >= 1 counts as 1, and off (<= 0 or NaN) keeps all.
 * The weights are those of order_prefix: expl from the largest value, 1 or 0 in a +inf row. */
static void minp_counts(const float *x, const struct entry *e, int64_t n, float min_p,
                        int64_t c[2])
{
    c[0] = c[1] = n;
    if (!(min_p > 0.0f) || n == 0)
        return;
    float max = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        max = x[e[j].i] > max ? x[e[j].i] : max;
    const long double mp = min_p < 1.0f ? (long double)min_p : 1.0L, slack = ldexpl(1.0L, -38);
    const long double hi = fminl(mp * (1 + BAND) + slack, 1.0L), lo = mp * (1 - BAND) - slack;
    c[0] = c[1] = 0;
    for (int64_t j = 0; j < n; j++) {
        const float v = x[e[j].i];
        const long double r = isinf(max) ? (v == max ? 1.0L : 0.0L)
                                         : expl((long double)v - (long double)max);
        c[0] += r >= hi;
        c[1] += r >= lo;
    }
}

/* The band [*n_min, *n_max] of kept-prefix lengths top-p accepts over the first s tokens. */
static void topp_band(const struct oracle_row *o, int64_t s, float p, int64_t *n_min,
                      int64_t *n_max)
{
    if (!(p < 1.0f) || s == 0) {
        *n_min = *n_max = s;
        return;
    }
    if (!(p > 0.0f)) {
        *n_min = *n_max = 1;
        return;
    }
    long double total = 0, before = 0;
    for (int64_t j = 0; j < s; j++)
        total += o->weight[j];
    *n_min = -1;
    *n_max = 0;
    for (int64_t n = 1; n <= s; n++) {
        long double m_prev = before / total, m_n = (before + o->weight[n - 1]) / total;
        if (m_prev < (long double)p + BAND && m_n >= (long double)p - BAND) {
            if (*n_min < 0)
                *n_min = n;
            *n_max = n;
        }
        before += o->weight[n - 1];
    }
    if (*n_min < 0) /* cannot happen: M(s) = 1 >= p */
        *n_min = *n_max = s;
}

int oracle_row_init(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p)
{
    return oracle_row_init_minp(o, x, vocab, k, p, 0.0f);
}

int oracle_row_init_minp(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p,
                         float min_p)
{
    memset(o, 0, sizeof *o);
    o->vocab = vocab;
    /* the valid tokens (finite and +inf), gathered once: their count sizes the top-k set */
    struct entry *e = malloc(sizeof *e * (size_t)(vocab ? vocab : 1));
    if (!e)
        return -1;
    for (int64_t i = 0; i < vocab; i++)
        if (!isnan(x[i]) && !(isinf(x[i]) && x[i] < 0))
            e[o->valid++] = (struct entry){ canonical_key(x[i]), (int32_t)i };
    /* min-p first, then top-k (the two commute: both keep a canonical prefix), then top-p */
    int64_t c[2];
    minp_counts(x, e, o->valid, min_p, c);
    const int64_t kk = (k > 0 && k < vocab) ? k : o->valid;
    const int64_t s_lo = kk < c[0] ? kk : c[0];
    o->set_size = kk < c[1] ? kk : c[1];
    int64_t s = o->set_size, m = prefix_needed(s, p);
    o->order = malloc(sizeof *o->order * (size_t)(m ? m : 1));
    o->weight = malloc(sizeof *o->weight * (size_t)(m ? m : 1));
    int rc = !o->order || !o->weight ? -1 : order_prefix(o, x, e, o->valid, m);
    free(e);
    if (rc) {
        oracle_row_free(o);
        return -1;
    }
    int64_t lo_min, lo_max;
    topp_band(o, s_lo, p, &lo_min, &lo_max);
    topp_band(o, s, p, &o->n_min, &o->n_max);
    if (lo_min < o->n_min) /* a larger candidate set needs at least as long a prefix */
        o->n_min = lo_min;
    return 0;
}

void oracle_row_free(struct oracle_row *o)
{
    free(o->order);
    free(o->weight);
    o->order = NULL;
    o->weight = NULL;
}

int oracle_check_kept(const struct oracle_row *o, const uint8_t *kept, char *why, size_t n)
{
    int64_t count = 0;
    for (int64_t i = 0; i < o->vocab; i++)
        count += kept[i] != 0;
    if (count < o->n_min || count > o->n_max) {
        snprintf(why, n, "kept %lld tokens, the oracle accepts %lld..%lld", (long long)count,
                 (long long)o->n_min, (long long)o->n_max);
        return 0;
    }
    for (int64_t j = 0; j < count; j++)
        if (!kept[o->order[j]]) {
            snprintf(why, n, "token %d (canonical position %lld) should be kept", o->order[j],
                     (long long)j);
            return 0;
        }
    return 1;
}

int oracle_check_draw(const struct oracle_row *o, int64_t token, char *why, size_t n)
{
    if (o->valid == 0) {
        if (token == -1)
            return 1;
        snprintf(why, n, "row has no valid token but the draw is %lld", (long long)token);
        return 0;
    }
    for (int64_t j = 0; j < o->n_max; j++)
        if (o->order[j] == token)
            return 1;
    snprintf(why, n, "draw %lld is outside the kept set (first %lld canonical tokens)",
             (long long)token, (long long)o->n_max);
    return 0;
}

int oracle_check_row(const struct oracle_row *o, const uint8_t *kept, const int64_t *draws,
                     int32_t n, char *why, size_t len)
{
    if (kept && !oracle_check_kept(o, kept, why, len))
        return 0;
    for (int32_t d = 0; draws && d < n; d++)
        if (!oracle_check_draw(o, draws[d], why, len))
            return 0;
    return 1;
}

void oracle_distribution(const struct oracle_row *o, int64_t n, long double *out)
{
    long double total = 0;
    for (int64_t j = 0; j < n; j++)
        total += o->weight[j];
    for (int64_t j = 0; j < n; j++)
        out[j] = o->weight[j] / total;
}

double oracle_tv_bound(int64_t n, int64_t draws)
{
    return 3.0 * sqrt((double)n / (2.0 * M_PI * (double)draws));
}

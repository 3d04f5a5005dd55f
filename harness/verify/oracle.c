/* oracle.c — see oracle.h. Deliberately simple and slow. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

#define BAND 1e-6L

struct pair {
    float v;
    int32_t i;
};

static int by_value_then_index(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->v > y->v)
        return -1;
    if (x->v < y->v)
        return 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int oracle_row_init(struct oracle_row *o, const float *x, int64_t vocab, int32_t k, float p)
{
    memset(o, 0, sizeof *o);
    o->vocab = vocab;
    struct pair *pairs = malloc(sizeof *pairs * (size_t)(vocab ? vocab : 1));
    o->order = malloc(sizeof *o->order * (size_t)(vocab ? vocab : 1));
    o->weight = malloc(sizeof *o->weight * (size_t)(vocab ? vocab : 1));
    if (!pairs || !o->order || !o->weight) {
        free(pairs);
        oracle_row_free(o);
        return -1;
    }
    for (int64_t i = 0; i < vocab; i++)
        if (!isnan(x[i]) && !(isinf(x[i]) && x[i] < 0))
            pairs[o->valid++] = (struct pair){ x[i], (int32_t)i };
    qsort(pairs, (size_t)o->valid, sizeof *pairs, by_value_then_index);

    int64_t infs = 0;
    for (int64_t j = 0; j < o->valid; j++)
        infs += isinf(pairs[j].v);
    for (int64_t j = 0; j < o->valid; j++) {
        o->order[j] = pairs[j].i;
        if (infs)
            o->weight[j] = isinf(pairs[j].v) ? 1.0L : 0.0L;
        else
            o->weight[j] = expl((long double)pairs[j].v - (long double)pairs[0].v);
    }
    free(pairs);

    o->set_size = (k > 0 && k < vocab && k < o->valid) ? k : o->valid;
    int64_t s = o->set_size;
    if (!(p < 1.0f) || s == 0) {
        o->n_min = o->n_max = s;
    } else if (!(p > 0.0f)) {
        o->n_min = o->n_max = 1;
    } else {
        long double total = 0, before = 0;
        for (int64_t j = 0; j < s; j++)
            total += o->weight[j];
        o->n_min = -1;
        o->n_max = 0;
        for (int64_t n = 1; n <= s; n++) {
            long double m_prev = before / total, m_n = (before + o->weight[n - 1]) / total;
            if (m_prev < (long double)p + BAND && m_n >= (long double)p - BAND) {
                if (o->n_min < 0)
                    o->n_min = n;
                o->n_max = n;
            }
            before += o->weight[n - 1];
        }
        if (o->n_min < 0) /* cannot happen: M(s) = 1 >= p */
            o->n_min = o->n_max = s;
    }
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

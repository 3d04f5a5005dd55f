/* qrita_passes.c — the CPU passes of Qrita, each the loop a GPU program makes over a row or over
 * its outlier buffer (see qrita.h). */
#include <math.h>
#include <string.h>

#include "qrita.h"

/* Fold the lanes pairwise, halving the stride, as a block reduction does. */
static double fold_lanes(double *lane)
{
    for (int half = QRITA_STAT_LANES / 2; half > 0; half /= 2)
        for (int j = 0; j < half; j++)
            lane[j] += lane[j + half];
    return lane[0];
}

struct qrita_sample qrita_sample_stats(const float *x, int64_t n)
{
    struct qrita_sample s = { 0, 0.0, 0.0 };
    double lane[QRITA_STAT_LANES] = { 0 };
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            lane[i % QRITA_STAT_LANES] += (double)x[i];
            s.count++;
        }
    if (s.count == 0)
        return s;
    s.mean = fold_lanes(lane) / (double)s.count;
    memset(lane, 0, sizeof lane);
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            double d = (double)x[i] - s.mean;
            lane[i % QRITA_STAT_LANES] += d * d;
        }
    s.std = sqrt(fold_lanes(lane) / (double)s.count);
    return s;
}

struct qrita_scan qrita_scan_gather(const float *x, int64_t vocab, uint32_t above,
                                    uint32_t *buffer, int64_t capacity)
{
    struct qrita_scan s = { -INFINITY, UINT32_MAX, 0, 0, 0 };
    for (int64_t i = 0; i < vocab; i++) {
        uint32_t key = tkp_order_key(x[i]);
        if (key == 0)
            continue;
        s.valid++;
        if (key < s.min_key)
            s.min_key = key;
        if (key > s.max_key)
            s.max_key = key;
        if (key > above) {
            if (s.gathered < capacity)
                buffer[s.gathered] = key;
            s.gathered++;
        }
    }
    if (s.valid)
        s.max = tkp_key_value(s.max_key);
    return s;
}

void qrita_row_mass(const float *x, int64_t vocab, float max, uint32_t above, uint64_t *total,
                    uint64_t *above_mass, uint64_t *hist)
{
    *total = *above_mass = 0;
    memset(hist, 0, TKP_MASS_BINS * sizeof *hist);
    for (int64_t i = 0; i < vocab; i++) {
        uint64_t w = tkp_weight(x[i], max);
        *total += w;
        uint32_t key = tkp_order_key(x[i]);
        if (key > above)
            *above_mass += w;
        if (key) {
            int bin = tkp_mass_bin(x[i], max);
            if (bin < TKP_MASS_BINS)
                hist[bin] += w;
        }
    }
}

static uint32_t pool_key(const struct qrita_pool *pool, int64_t i)
{
    return pool->keys ? pool->keys[i] : tkp_order_key(pool->row[i]);
}

void qrita_evaluate(const struct qrita_pool *pool, const uint32_t *pivot, int count,
                    struct qrita_measure measure, struct qrita_boundary set,
                    struct qrita_pivot_stat *out)
{
    for (int j = 0; j < count; j++) {
        out[j].count = out[j].copies = 0;
        out[j].mass = out[j].copy_weight = 0;
        out[j].min_key = UINT32_MAX;
    }
    for (int64_t i = 0; i < pool->size; i++) {
        uint32_t key = pool_key(pool, i);
        if (key <= pivot[0])
            continue;
        uint64_t w = qrita_measure_of(measure, key);
        for (int j = 0; j < count && key > pivot[j]; j++) {
            struct qrita_pivot_stat *st = &out[j];
            st->count++;
            st->mass += w;
            if (key < st->min_key) {
                st->min_key = key;
                st->copies = 1;
            } else if (key == st->min_key) {
                st->copies++;
            }
        }
    }
    for (int j = 0; j < count; j++) {
        if (out[j].count)
            out[j].copy_weight = qrita_measure_of(measure, out[j].min_key);
        qrita_restrict(&out[j], set);
    }
}

struct qrita_boundary qrita_pivot_search(struct qrita_searcher *s, const struct qrita_pool *pool,
                                         const struct qrita_query *q)
{
    /* Untested candidates [lo, hi]; every kept token has a key above `floor`. The largest key
     * itself is never a candidate: nothing lies above it. */
    uint32_t lo = q->lo, hi = q->hi - 1, floor = q->lo;
    for (int iteration = 0; iteration < s->max_iter && lo <= hi; iteration++) {
        uint32_t pivot[3];
        struct qrita_pivot_stat st[3];
        int count = qrita_place_pivots(lo, hi, s->pivots, pivot);
        qrita_evaluate(pool, pivot, count, q->measure, q->set, st);
        s->iterations++;
        for (int j = 0; j < count; j++) {
            enum qrita_verdict v = qrita_classify(&st[j], q->target, q->set_size);
            if (v == QRITA_PIVOT_ACCEPT) {
                struct qrita_boundary b = { st[j].min_key, QRITA_KEEP_ALL };
                if (s->dedup)
                    b.keep = qrita_copies_kept(&st[j], q->target);
                return b;
            }
            if (v == QRITA_PIVOT_LOW) {
                floor = pivot[j];
                lo = pivot[j] + 1;
            } else {
                hi = pivot[j] - 1;
                break;
            }
        }
    }
    struct qrita_boundary unresolved = { floor, 0 };
    return unresolved;
}

struct qrita_boundary qrita_sorted_boundary(const uint32_t *sorted, int64_t n, int dedup,
                                            const struct qrita_query *q)
{
    int64_t size = n < q->set_size ? n : q->set_size, kept = 0;
    uint64_t before = 0;
    while (kept < size && (kept == 0 || before < q->target))
        before += qrita_measure_of(q->measure, sorted[kept++]);
    struct qrita_boundary b = { sorted[kept - 1], QRITA_KEEP_ALL };
    if (dedup)
        for (b.keep = 0; b.keep < kept && sorted[kept - 1 - b.keep] == b.key; b.keep++)
            ;
    return b;
}

int64_t qrita_sort_pool(const struct qrita_pool *pool, uint32_t lo, uint32_t *out, uint32_t *tmp)
{
    int64_t n = 0;
    for (int64_t i = 0; i < pool->size; i++) {
        uint32_t key = pool_key(pool, i);
        if (key && key > lo)
            out[n++] = key;
    }
    uint32_t *src = out, *dst = tmp;
    for (int shift = 0; shift < 32; shift += 8) { /* four stable passes: src ends as out */
        int64_t start[257] = { 0 };
        for (int64_t i = 0; i < n; i++)
            start[256 - ((src[i] >> shift) & 0xFFu)]++;
        for (int d = 1; d <= 256; d++)
            start[d] += start[d - 1];
        for (int64_t i = 0; i < n; i++)
            dst[start[255 - ((src[i] >> shift) & 0xFFu)]++] = src[i];
        uint32_t *swap = src;
        src = dst;
        dst = swap;
    }
    return n;
}

void qrita_mask(const float *x, int64_t vocab, struct qrita_boundary b, uint8_t *kept)
{
    int64_t copies = 0;
    for (int64_t i = 0; i < vocab; i++) {
        uint32_t key = tkp_order_key(x[i]);
        kept[i] = key > b.key || (key == b.key && copies++ < b.keep);
    }
}

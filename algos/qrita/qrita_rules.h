/* qrita_rules.h — the decisions of Qrita that every backend takes identically, written once as
 * host-and-device code (TKP_HD) so that the CUDA kernels reproduce the CPU reference bit for bit:
 * the sigma-truncation threshold, where the pivots of one search iteration lie, how the
 * statistics of a pivot classify it, and how many copies of the boundary value are kept.
 *
 * Everything works on order keys (tkp_order_key: a monotone map of the floats onto uint32), so
 * "x > t" is an integer comparison and a search over keys resolves any two distinct floats.
 *
 * One rule serves top-k and top-p. Give each token a measure: 1 for top-k, its fixed-point
 * weight for top-p. Over a set taken in canonical order, with M(j) the measure of its first j
 * tokens, token j is kept iff j == 0 or M(j) < target (target = k for top-k, tkp_topp_target
 * for top-p). M never decreases, so the kept tokens are a prefix of the canonical order, and that
 * prefix is "every key above the boundary key plus its first `keep` copies in index order". */
#ifndef QRITA_RULES_H
#define QRITA_RULES_H

#include <math.h>
#include <stdint.h>

#include "../common/hd.h"
#include "../common/mass_floor.h"
#include "../common/prob.h"
#include "qrita_tables.h"

/* A kept set: every token whose key is > key, plus the first `keep` tokens (in index order)
 * whose key equals it. */
struct qrita_boundary {
    uint32_t key;
    int64_t keep;
};

#define QRITA_KEEP_ALL INT64_MAX

/* Every valid token (valid keys are > 0, invalid ones are 0). */
TKP_HD struct qrita_boundary qrita_all_valid(void)
{
    struct qrita_boundary b = { 0, 0 };
    return b;
}

/* The measure of a token: 1 (top-k) or its fixed-point weight in a row of largest value max. */
struct qrita_measure {
    int unit;
    float max;
};

TKP_HD uint64_t qrita_measure_of(struct qrita_measure m, uint32_t key)
{
    return m.unit ? 1u : tkp_weight(tkp_key_value(key), m.max);
}

/* What one pass learns about a pivot key tau, over the tokens of the current set. */
struct qrita_pivot_stat {
    int64_t count;        /* tokens with key > tau */
    uint64_t mass;        /* their measure */
    uint32_t min_key;     /* the smallest such key (UINT32_MAX when count == 0) */
    int64_t copies;       /* tokens with key == min_key */
    uint64_t copy_weight; /* the measure of one of them (equal keys, equal measure) */
};

/* The set of the top-p stage is the top-k set: only its first `set.keep` copies of set.key
 * belong to it, so a pivot below set.key sees the extra copies removed. */
TKP_HD void qrita_restrict(struct qrita_pivot_stat *st, struct qrita_boundary set)
{
    if (st->count == 0 || st->min_key != set.key || st->copies <= set.keep)
        return;
    int64_t extra = st->copies - set.keep;
    st->count -= extra;
    st->mass -= (uint64_t)extra * st->copy_weight;
    st->copies = set.keep;
}

enum qrita_verdict {
    QRITA_PIVOT_LOW,    /* the boundary key is above min_key: raise the pivot */
    QRITA_PIVOT_ACCEPT, /* the boundary key is min_key: the last kept token is one of its copies */
    QRITA_PIVOT_HIGH,   /* the boundary key is <= tau: lower the pivot */
};

/* The tokens above tau are the first `count` of the set in canonical order, and the copies of
 * min_key are the last `copies` of them. The boundary lies among those copies iff the first copy
 * is kept and either the token after them is not kept or there is no token after them. For
 * top-k this is the paper's test N >= k and N - N_dup < k. */
TKP_HD enum qrita_verdict qrita_classify(const struct qrita_pivot_stat *st, uint64_t target,
                                         int64_t set_size)
{
    int64_t before = st->count - st->copies;
    uint64_t mass_before = st->mass - (uint64_t)st->copies * st->copy_weight;
    if (before > 0 && mass_before >= target)
        return QRITA_PIVOT_LOW;
    if (st->count < set_size && (st->count == 0 || st->mass < target))
        return QRITA_PIVOT_HIGH;
    return QRITA_PIVOT_ACCEPT;
}

/* For an accepted pivot: how many copies of min_key the rule keeps (copy i is kept iff it is the
 * set's first token or the measure before it is < target). Top-k: k - (count - copies). */
TKP_HD int64_t qrita_copies_kept(const struct qrita_pivot_stat *st, uint64_t target)
{
    uint64_t mass_before = st->mass - (uint64_t)st->copies * st->copy_weight;
    if (mass_before >= target) /* accepted only when the copies open the set */
        return 1;
    if (st->copy_weight == 0)
        return st->copies;
    uint64_t fit = (target - mass_before - 1) / st->copy_weight + 1;
    return fit < (uint64_t)st->copies ? (int64_t)fit : st->copies;
}

/* The pivots of one iteration in the untested candidate keys [lo, hi] (lo <= hi): `count`
 * pivots (3 quaternary, 2 ternary, 1 binary) cut them into count + 1 untested gaps whose sizes
 * differ by at most one, i.e. at 1/4, 1/2, 3/4 of the range; when no more than `count`
 * candidates are left, each is a pivot. Ascending; returns how many. */
TKP_HD int qrita_place_pivots(uint32_t lo, uint32_t hi, int count, uint32_t *pivot)
{
    uint64_t width = (uint64_t)hi - lo + 1;
    if (width <= (uint64_t)count) {
        for (uint64_t n = 0; n < width; n++)
            pivot[n] = lo + (uint32_t)n;
        return (int)width;
    }
    for (int n = 1; n <= count; n++)
        pivot[n - 1] = lo + (uint32_t)(n - 1) +
                       (uint32_t)((uint64_t)n * (width - (uint64_t)count) / (uint64_t)(count + 1));
    return count;
}

/* Candidate pivot keys in the widest search: from just below -FLT_MAX to just below +inf. */
#define QRITA_MAX_CANDIDATES ((uint64_t)0xFF000001u)

/* Iterations that resolve any search with `count` pivots per iteration: with at most
 * (count + 1)^i - 1 candidates a search ends within i iterations (16 quaternary, 21 ternary,
 * 32 binary). */
TKP_HD int qrita_iterations_needed(int count)
{
    int iterations = 0;
    for (uint64_t reach = 1; reach - 1 < QRITA_MAX_CANDIDATES; iterations++)
        reach *= (uint64_t)(count + 1);
    return iterations;
}

/* min-p with top-k on (README.md, "min-p"): the truncation of such a row runs on its own k, the
 * search on k' = tkp_minp_fold(k, n) <= k. A row whose k reaches its valid count truncates as
 * top-p alone while k' may still cut it: it takes no hit and searches its whole row from its
 * smallest key, whatever k' is (late: min-p on and top-k on). */
TKP_HD int qrita_minp_whole_row(int late, int32_t k, int64_t valid)
{
    return late && (int64_t)k >= valid;
}

/* ---- sigma-truncation ----
 * Logits are modelled as N(mu, s^2) from a sample; tokens above t = mu + delta * s are gathered.
 * Top-k: delta_k = Phi^-1(1 - k/V): a fraction k/V of the row lies above it.
 * Top-p: the softmax mass above mu + delta * s is E[e^z; z > t] / E[e^z]; tilting a Gaussian by
 *   e^z shifts its mean by s^2, so that mass is 1 - Phi(delta - s), and the inverse cumulative
 *   softmax is delta_p = s - Phi^-1(p) (s in logit units, as after temperature).
 * Both read `quantile` (qrita_tables.h) at the upper edge of the fraction's bin of width 1/200,
 * which rounds toward more outliers; the last bin gives -inf (no truncation). The margin then
 * lowers delta by margin * |delta|. */
TKP_HD double qrita_delta_topk(int32_t k, int64_t vocab, const double *quantile)
{
    int64_t bin = 200 * (int64_t)k / vocab;
    return bin >= QRITA_QUANTILE_BINS - 1 ? -INFINITY : -quantile[bin];
}

TKP_HD double qrita_delta_topp(float p, double std, const double *quantile)
{
    int bin = p > 0.0f ? (int)floor(200.0 * (double)p) : 0;
    return bin >= QRITA_QUANTILE_BINS - 1 ? -INFINITY : std - quantile[bin];
}

/* The gather threshold as a key: key(x) > it iff x > mu + (delta - margin |delta|) * std. */
TKP_HD uint32_t qrita_threshold_key(double mean, double std, double delta, double margin)
{
    double t = mean + (delta - margin * fabs(delta)) * std;
    float below = (float)t;
    if ((double)below > t)
        below = nextafterf(below, -INFINITY);
    return tkp_order_key(below);
}

#endif

/* rejection.c — CPU reference of FlashInfer-style dual-pivot rejection sampling.
 *
 * Samples top-k, top-p and top-k-then-top-p without sorting: each round draws a candidate
 * by inverse CDF over the current candidate set, then one pass counts the tokens (and their
 * fixed-point mass) canonically before the candidate and before a second pivot halfway to
 * the known-kept bound; the candidate is accepted when it passes the kept-set test,
 * otherwise the candidate set shrinks. The code is written as the sequential form of what
 * one CTA per row does on the GPU (the same passes, the same integer decisions, the same
 * Philox counters), so the CUDA kernel (rejection_gpu.cu, whose row in
 * algos/common/tkp_gpu_impl.c is the module's GPU implementation) reproduces every draw bit for
 * bit; the rules both share are in rejection_rules.h. This file holds the module's table and
 * its CPU implementation.
 * The algorithm, the Philox counter layout, the termination and exactness arguments, the GPU
 * design: README.md here. */
#include <float.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cpu_row.h"
#include "../common/mass_floor.h"
#include "../common/philox.h"
#include "../common/prob.h"
#include "../tkp.h"
#include "rejection_impl.h"
#include "rejection_rules.h"

struct rej_state {
    struct tkp_problem pb;
    struct rej_opts opts;
    struct tkp_stats stats; /* of the last run */
};

/* One row prepared for all its draws. `key` and `w` live in the workspace (the GPU
 * recomputes them from the logits in each pass). */
struct rej_row {
    int64_t vocab;
    const uint32_t *key; /* order key per token, 0 when invalid */
    const uint64_t *w;   /* fixed-point weight per token, 0 when invalid */
    int64_t k_limit;     /* a token is in the top-k set iff fewer than this come before it */
    uint64_t target;     /* top-p: keep a token iff the mass before it is below this */
    uint64_t top;        /* a pivot with nothing before it: (row max, index 0) */
    uint64_t start;      /* the first candidate set, B(start) */
    uint64_t start_mass; /* its fixed-point mass */
};

/* Count and fixed-point mass of the valid tokens canonically before a pivot. */
static const char *const rej_thread_choices[] = { "auto", "1024", "512", "256", NULL };

int rej_threads_chosen(const struct rej_opts *o)
{
    return o->threads > 0 ? atoi(rej_thread_choices[o->threads]) : 0;
}

int rej_auto_threads(const struct tkp_problem *pb, int64_t sms)
{
    const int topp_alone_row = (pb->ops & TKP_TOPP) != 0; /* crowded rounds: 1024 wins */
    if (topp_alone_row || pb->batch <= sms)
        return 1024;
    return pb->batch >= 4 * sms && pb->set_max <= 256 ? 256 : 512;
}

int rej_list_cap(const struct tkp_problem *pb, int threads, int step, int gather)
{
    return threads >= 512 && pb->k_max > 256 && pb->vocab > step ? 16 * threads : gather;
}

static const struct tkp_option rej_options[] = {
    { "max_rounds", "rejection rounds per draw; the last one samples the exact kept set",
      TKP_OPT_INT, offsetof(struct rej_opts, max_rounds), 32, 1, 4096, NULL },
    { "cluster", "GPU only (the CPU ignores it): CTAs per row, or auto (the dispatch table of "
      "the device, else the cost model); a size the device cannot run takes the cost model",
      TKP_OPT_ENUM_QUIET, offsetof(struct rej_opts, cluster), 0, 0, 0, tkp_cluster_choices },
    { "threads", "GPU only: threads a CTA, one CTA a row (a number takes cluster 1; with a "
      "larger cluster it is an error): 1024, 512, 256, or auto (rej_auto_threads: 1024 while "
      "a row has top-p alone or B <= #SMs, 256 from 4 x #SMs rows with k <= 256, else 512; "
      "README \"GPU\")",
      TKP_OPT_ENUM_QUIET, offsetof(struct rej_opts, threads), 0, 0, 0, rej_thread_choices },
    { NULL },
};

static int rej_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    const struct rej_opts *o = opts;
    if ((int64_t)pb->draws * o->max_rounds > ((int64_t)1 << 32)) {
        *why = "rejection: draws * max_rounds exceeds the 2^32 Philox counters of a row";
        return 0;
    }
    return 1;
}

static size_t rej_workspace(int64_t vocab)
{
    return (size_t)vocab * (sizeof(uint64_t) + sizeof(uint32_t));
}

static int rej_init(void *state, const struct tkp_problem *pb, const void *opts,
                    size_t *workspace_bytes, struct tkp_error *err)
{
    (void)err;
    struct rej_state *s = state;
    s->pb = *pb;
    s->opts = *(const struct rej_opts *)opts;
    *workspace_bytes = tkp_cpu_row_scratch_bytes(pb) + rej_workspace(pb->vocab);
    return TKP_OK;
}

/* One pass: the tallies of the tokens before pivots a and b. */
static void rej_tally2(const struct rej_row *row, uint64_t a, uint64_t b, struct rej_tally *ta,
                       struct rej_tally *tb)
{
    *ta = *tb = (struct rej_tally){ 0, 0 };
    for (int64_t i = 0; i < row->vocab; i++) {
        uint64_t pos = rej_pos(row->key[i], i);
        if (pos < a) {
            ta->count++;
            ta->mass += row->w[i];
        }
        if (pos < b) {
            tb->count++;
            tb->mass += row->w[i];
        }
    }
}

static struct rej_tally rej_tally1(const struct rej_row *row, uint64_t pivot)
{
    struct rej_tally t, same;
    rej_tally2(row, pivot, pivot, &t, &same);
    return t;
}

/* Would a token at a pivot with this tally be kept? (rejection_rules.h) */
static int rej_kept_row(const struct rej_row *row, struct rej_tally t)
{
    return rej_kept(t.count, t.mass, row->k_limit, row->target);
}

/* Inverse CDF over the candidate set B(lo) of exact mass `mass` > 0, in index order: the
 * first token whose inclusive prefix exceeds floor(u * mass / 2^64). */
static int64_t rej_pick(const struct rej_row *row, uint64_t lo, uint64_t mass, uint64_t u)
{
    uint64_t target = tkp_scale_u64(u, mass), prefix = 0;
    int64_t i = 0;
    for (; i < row->vocab - 1; i++) {
        if (rej_pos(row->key[i], i) < lo)
            prefix += row->w[i];
        if (prefix > target)
            break;
    }
    return i; /* the prefix reaches `mass` > target at the last candidate at the latest */
}

/* The kept set inside B(lo) as a pivot, by bisection between the kept bound `hi` and `lo`:
 * the returned pivot P has exactly the kept tokens before it. */
static uint64_t rej_kept_bound(const struct rej_row *row, uint64_t hi, uint64_t lo,
                               double *steps)
{
    while (lo - hi > 1) {
        uint64_t mid = hi + (lo - hi) / 2;
        if (rej_kept_row(row, rej_tally1(row, mid)))
            hi = mid;
        else
            lo = mid;
        *steps += 1;
    }
    return hi + 1;
}

/* One draw: a rejection chain of at most `max_rounds` rounds. Round r of draw d uses Philox
 * counter d * max_rounds + r. The last round samples the exact kept set instead. */
static int64_t rej_draw(struct rej_state *s, const struct rej_row *row, const struct tkp_io *io,
                        int64_t r, int32_t d)
{
    const int rounds = s->opts.max_rounds;
    uint64_t hi = row->top, lo = row->start, mass = row->start_mass;
    for (int round = 0;; round++) {
        uint32_t counter = (uint32_t)d * (uint32_t)rounds + (uint32_t)round;
        const struct tkp_row_key key = tkp_io_row_key(io, r);
        uint64_t u = tkp_philox_u64(key.seed, key.row, key.offset, counter);
        s->stats.total[REJ_STAT_ROUNDS] += 1;
        if (round == rounds - 1) {
            lo = rej_kept_bound(row, hi, lo, &s->stats.total[REJ_STAT_ITERATIONS]);
            s->stats.total[REJ_STAT_FALLBACKS]++;
            return rej_pick(row, lo, rej_tally1(row, lo).mass, u);
        }
        int64_t c = rej_pick(row, lo, mass, u);
        uint64_t pc = rej_pos(row->key[c], c), p1 = rej_second_pivot(hi, pc);
        struct rej_tally tc, t1;
        rej_tally2(row, pc, p1, &tc, &t1);
        if (rej_round_verdict(tc, t1, pc, p1, row->k_limit, row->target, &lo, &hi, &mass))
            return c;
    }
}

/* The k-th largest order key (1 <= k <= number of valid keys), by radix select: one
 * histogram pass per digit. *above = how many keys are larger, *ties = how many equal it. */
static uint32_t rej_kth_key(const uint32_t *key, int64_t vocab, int64_t k, int64_t *above,
                            int64_t *ties)
{
    uint32_t prefix = 0, mask = 0;
    const uint32_t digit_mask = (1u << REJ_DIGIT_BITS) - 1;
    int64_t rank = k, hist[1 << REJ_DIGIT_BITS];
    uint32_t digit = 0;
    for (int pass = 1; pass <= REJ_DIGIT_PASSES; pass++) {
        int shift = 32 - pass * REJ_DIGIT_BITS;
        memset(hist, 0, sizeof hist);
        for (int64_t i = 0; i < vocab; i++)
            if ((key[i] & mask) == prefix)
                hist[(key[i] >> shift) & digit_mask]++;
        for (digit = digit_mask; hist[digit] < rank; digit--)
            rank -= hist[digit];
        prefix |= digit << shift;
        mask |= digit_mask << shift;
    }
    *above = k - rank;
    *ties = hist[digit];
    return prefix;
}

/* Top-p alone: the first candidate set is the row's tokens of mass bin <= b, the first bin
 * whose running mass reaches the target (common/mass_floor.h): they hold the kept set, and on
 * peaked rows they are a handful, so the GPU keeps them in shared memory (README, "First
 * candidate set of top-p alone"). Unchanged when the bins do not reach the target. */
static void rej_start_at_mass_floor(const uint64_t *hist, struct tkp_row_info info,
                                    struct rej_row *row)
{
    const int b = tkp_mass_floor_bin(hist, row->target);
    if (b >= TKP_MASS_BINS)
        return;
    /* the bisection over every valid key (the GPU's range too: the same steps) */
    const uint32_t floor_key =
        tkp_mass_floor_key(b, info.max, tkp_order_key(-FLT_MAX), tkp_order_key(info.max));
    uint64_t mass = 0;
    for (int j = 0; j <= b; j++)
        mass += hist[j];
    row->start = rej_pos(floor_key, 0xFFFFFFFFu);
    row->start_mass = mass;
}

/* Weights, keys, the top-k limit, the top-p target and the first candidate set of a row
 * with at least one valid token. With top-k (k < #valid), radix select finds the k-th key, one
 * pass sums the mass above it, and the first candidate set is every token with a key at least
 * the k-th one; with top-p as well, the mass of the top-k set S gives the target (the k - above
 * tied tokens S takes each weigh the same). Top-p alone starts at the mass floor. */
static void rej_prepare(struct rej_state *s, const float *x, int32_t k, float p,
                        struct tkp_row_info info, uint32_t *key, uint64_t *w, struct rej_row *row)
{
    const int64_t vocab = s->pb.vocab;
    /* top-p alone also bins the weights by distance from max in the same pass (the GPU's pass 2) */
    const int from_floor = rej_from_mass_floor(p, rej_k_limit(k, vocab, info.valid));
    uint64_t total = 0, hist[TKP_MASS_BINS] = { 0 };
    for (int64_t i = 0; i < vocab; i++) {
        key[i] = tkp_order_key(x[i]);
        w[i] = tkp_weight(x[i], info.max);
        total += w[i];
        const int bin = from_floor ? tkp_mass_bin(x[i], info.max) : TKP_MASS_BINS;
        if (bin < TKP_MASS_BINS)
            hist[bin] += w[i];
    }
    row->vocab = vocab;
    row->key = key;
    row->w = w;
    row->k_limit = rej_k_limit(k, vocab, info.valid);
    row->top = rej_pos(tkp_order_key(info.max), 0);
    row->start = REJ_END;
    row->start_mass = total;
    uint64_t set_mass = total;
    if (rej_starts_at_kth(row->k_limit, info.valid)) {
        int64_t above, ties;
        uint32_t kth = rej_kth_key(key, vocab, row->k_limit, &above, &ties);
        uint64_t mass_above = 0, kth_weight = tkp_weight(tkp_key_value(kth), info.max);
        for (int64_t i = 0; i < vocab; i++)
            if (key[i] > kth)
                mass_above += w[i];
        set_mass = mass_above + (uint64_t)(row->k_limit - above) * kth_weight;
        row->start = rej_pos(kth, 0xFFFFFFFFu);
        row->start_mass = mass_above + (uint64_t)ties * kth_weight;
        s->stats.total[REJ_STAT_ITERATIONS] += REJ_DIGIT_PASSES;
    }
    row->target = tkp_topp_target(p, set_mass);
    if (from_floor)
        rej_start_at_mass_floor(hist, info, row);
}

static int rej_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                   struct tkp_error *err)
{
    (void)stream;
    (void)err;
    struct rej_state *s = state;
    memset(&s->stats, 0, sizeof s->stats);
    const int64_t vocab = s->pb.vocab;
    const int32_t draws = s->pb.draws;
    float *row = workspace; /* a 16-bit row's upcast (cpu_row.h) */
    uint64_t *w = (uint64_t *)((char *)workspace + tkp_cpu_row_scratch_bytes(&s->pb));
    uint32_t *key = (uint32_t *)(w + vocab);
    for (int64_t r = 0; io->samples && r < s->pb.batch; r++) {
        const float *x = tkp_cpu_row_f32(&s->pb, io->logits, r, row);
        int64_t *out = io->samples + r * draws;
        struct tkp_row_info info = tkp_row_scan(x, vocab);
        s->stats.rows++;
        if (info.valid == 0) {
            for (int32_t d = 0; d < draws; d++)
                out[d] = -1;
            continue;
        }
        struct rej_row row;
        const int32_t k = tkp_minp_fold_k(x, vocab, info.max, io->k[r], io->min_p, r);
        rej_prepare(s, x, k, io->p[r], info, key, w, &row);
        for (int32_t d = 0; d < draws; d++)
            out[d] = rej_draw(s, &row, io, r, d);
    }
    return TKP_OK;
}

/* The sums over the rows of the last run. */
static void rej_stats(const void *state, struct tkp_stats *out)
{
    *out = ((const struct rej_state *)state)->stats;
    out->reported = REJ_REPORTED;
}

static const struct tkp_impl rej_cpu = {
    .state_size = sizeof(struct rej_state),
    .init = rej_init,
    .run = rej_run,
    .stats = rej_stats,
    .dtypes = TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16), /* cpu_row.h: tkp_cpu_row_f32 */
};

static const struct tkp_stat rej_statistics[] = { REJ_STATS(TKP_STAT_ROW) { NULL } };

const struct tkp_algo tkp_algo_rejection = {
    .abi = TKP_ABI,
    .name = "rejection",
    .summary = "FlashInfer-style dual-pivot rejection sampling (sorting-free)",
    .ops = TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP | TKP_MINP,
    .outputs = TKP_OUT_SAMPLE,
    .flags = TKP_EXACT | TKP_DETERMINISTIC,
    .options = rej_options,
    .opts_size = sizeof(struct rej_opts),
    .supports = rej_supports,
    .cpu = &rej_cpu,
    .gpu = TKP_GPU_IMPL(tkp_rejection_gpu),
    .statistics = rej_statistics,
};

/* cpu_row.c — see cpu_row.h. */
#include <math.h>

#include "cpu_row.h"
#include "half.h"
#include "philox.h"
#include "prob.h"

size_t tkp_cpu_row_scratch_bytes(const struct tkp_problem *pb)
{
    if (pb->dtype == TKP_F32)
        return 0;
    return ((size_t)pb->vocab * sizeof(float) + 15u) & ~(size_t)15u;
}

const float *tkp_cpu_row_f32(const struct tkp_problem *pb, const void *logits, int64_t r,
                             float *scratch)
{
    const size_t at = (size_t)r * (size_t)pb->stride;
    if (pb->dtype == TKP_F32)
        return (const float *)logits + at;
    const uint16_t *h = (const uint16_t *)logits + at;
    if (pb->dtype == TKP_BF16)
        for (int64_t i = 0; i < pb->vocab; i++)
            scratch[i] = tkp_bf16_to_f32(h[i]);
    else
        for (int64_t i = 0; i < pb->vocab; i++)
            scratch[i] = tkp_f16_to_f32(h[i]);
    return scratch;
}

struct tkp_row_info tkp_row_scan(const float *x, int64_t vocab)
{
    struct tkp_row_info info = { -INFINITY, 0 };
    for (int64_t i = 0; i < vocab; i++) {
        if (!tkp_is_valid(x[i]))
            continue;
        info.valid++;
        if (x[i] > info.max)
            info.max = x[i];
    }
    return info;
}

int64_t tkp_topp_count(const float *x, const int32_t *order, int64_t n, float max, float p)
{
    if (n == 0)
        return 0;
    uint64_t total = 0;
    for (int64_t j = 0; j < n; j++)
        total += tkp_weight(x[order[j]], max);
    uint64_t target = tkp_topp_target(p, total), before = 0;
    int64_t kept = 0;
    while (kept < n && (kept == 0 || before < target))
        before += tkp_weight(x[order[kept++]], max);
    return kept;
}

int32_t tkp_minp_fold_k(const float *x, int64_t vocab, float max, int32_t k,
                        const float *min_p, int64_t r)
{
    if (!min_p || !tkp_minp_on(min_p[r]))
        return k;
    const uint64_t threshold = tkp_minp_threshold(min_p[r]);
    int64_t n = 0;
    for (int64_t i = 0; i < vocab; i++)
        n += tkp_is_valid(x[i]) && tkp_weight(x[i], max) >= threshold;
    return tkp_minp_fold(k, n, vocab);
}

struct tkp_row_key tkp_io_row_key(const struct tkp_io *io, int64_t r)
{
    return tkp_row_key(io->row_seed, io->row_offset, io->seed, io->offset, r);
}

void tkp_sample_kept(const float *x, const uint8_t *kept, int64_t vocab, float max,
                     struct tkp_row_key key, int32_t draws, uint64_t *cum, int64_t *out)
{
    uint64_t total = 0;
    for (int64_t i = 0; i < vocab; i++) {
        if (kept[i])
            total += tkp_weight(x[i], max);
        cum[i] = total; /* inclusive prefix of the kept mass, in index order */
    }
    for (int32_t d = 0; d < draws; d++) {
        if (total == 0) {
            out[d] = -1;
            continue;
        }
        out[d] = tkp_first_above(cum, vocab,
                                 tkp_draw_target(key.seed, key.row, key.offset, (uint32_t)d, total));
    }
}

/* Bottom-up merge sort, descending by value; stable, so ties keep their incoming order. */
void tkp_sort_canonical(const float *x, int32_t *idx, int64_t n, int32_t *tmp)
{
    int32_t *src = idx, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = x[src[b]] > x[src[a]] ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        int32_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != idx)
        for (int64_t i = 0; i < n; i++)
            idx[i] = src[i];
}

int64_t tkp_canonical_order(const float *x, int64_t vocab, int32_t *order, int32_t *tmp)
{
    int64_t valid = 0;
    for (int64_t i = 0; i < vocab; i++)
        if (tkp_is_valid(x[i]))
            order[valid++] = (int32_t)i;
    tkp_sort_canonical(x, order, valid, tmp);
    return valid;
}

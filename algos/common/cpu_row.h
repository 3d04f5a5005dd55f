/* cpu_row.h — small per-row routines shared by the CPU implementations of the modules:
 * a row of any logits type as float32, the row's largest valid value, the top-p prefix of a canonically ordered set, and
 * inverse-CDF sampling from a kept mask. The GPU kernels compute the same quantities with
 * the same arithmetic from prob.h and philox.h. */
#ifndef TKP_CPU_ROW_H
#define TKP_CPU_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "../tkp.h"
#include "philox.h"

/* Bytes of row scratch a CPU implementation puts at the start of its workspace for problem
 * pb: 0 for float32 rows, `vocab` floats for 16-bit rows (rounded up to 16 bytes, so that
 * whatever the workspace holds after it stays aligned). */
size_t tkp_cpu_row_scratch_bytes(const struct tkp_problem *pb);

/* Row r of `logits` (of pb->dtype, rows pb->stride elements apart) as float32: the row itself
 * for float32, else the exact upcast (half.h) of its 16-bit values written into `scratch`
 * (vocab floats: tkp_cpu_row_scratch_bytes). A module computes on the result exactly as on a
 * float32 row, so its output is that of the upcast (docs/SEMANTICS.md, "16-bit logits"). */
const float *tkp_cpu_row_f32(const struct tkp_problem *pb, const void *logits, int64_t r,
                             float *scratch);

struct tkp_row_info {
    float max;     /* largest valid value; -INFINITY when the row has none */
    int64_t valid; /* number of valid tokens */
};

struct tkp_row_info tkp_row_scan(const float *x, int64_t vocab);

/* `order` lists n tokens in canonical order (the top-k set, or every valid token). Returns
 * how many of them the top-p rule keeps (at least one when n > 0). */
int64_t tkp_topp_count(const float *x, const int32_t *order, int64_t n, float max, float p);

/* Row r's top-k with its min-p folded in (docs/SEMANTICS.md, "min-p"): min-p keeps the
 * tokens whose fixed weight reaches tkp_minp_threshold, a prefix of the canonical order, and it
 * commutes with top-k, so the two keep the first min(k, n) tokens, n the count of that prefix.
 * Returns k itself when min-p is off on the row (min_p NULL or <= 0) or keeps every token
 * top-k keeps; else n (>= 1 on a row with a valid token). `max`: the row's largest valid
 * value. */
int32_t tkp_minp_fold_k(const float *x, int64_t vocab, float max, int32_t k,
                        const float *min_p, int64_t r);

/* Draw `draws` tokens from the kept tokens of a row with probability proportional to their
 * weight: the fixed-point masses of the kept tokens, in index order, are laid end to end and
 * each draw picks the token whose interval holds floor(u * total), u from Philox. A row with
 * nothing kept gets -1. `cum` is scratch of `vocab` entries. */
void tkp_sample_kept(const float *x, const uint8_t *kept, int64_t vocab, float max,
                     struct tkp_row_key key, int32_t draws, uint64_t *cum, int64_t *out);

/* The Philox key of row r of a run (tkp_row_key over the io's arrays). */
struct tkp_row_key tkp_io_row_key(const struct tkp_io *io, int64_t r);

/* Stable sort of n token indices by value, descending; `tmp` holds n entries. Given indices
 * in ascending order this yields the canonical order. */
void tkp_sort_canonical(const float *x, int32_t *idx, int64_t n, int32_t *tmp);

/* The valid tokens of a row in canonical order; returns their count. */
int64_t tkp_canonical_order(const float *x, int64_t vocab, int32_t *order, int32_t *tmp);

#endif

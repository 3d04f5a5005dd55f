/* gpu_minp.cuh — what the GPU modules share to fold min-p into top-k inside their own kernels
 * (docs/SEMANTICS.md, "min-p"): each counts the passing tokens over a part of the row it
 * already holds and settles the fold with tkp_minp_fold_part (prob.h); on a row the part does
 * not settle it counts over the whole row with tkp_minp_row_share, in whatever block shape it
 * has. TKP_MINP_FORCE_COUNT sends every min-p row down that count (the GPU tests run both ways).
 * (A separate fold before the modules' kernels, two more reads of every row, is what this
 * replaced: 1.4-2.2x at B = 1-1024 on an H100, docs/PEERS.md, "Per-row seeds and min-p".) */
#ifndef TKP_GPU_MINP_CUH
#define TKP_GPU_MINP_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "../tkp.h"
#include "gpu_logits.cuh"
#include "prob.h"

namespace {

/* Does element v of a row whose largest valid value is m count for min-p's threshold t? */
__device__ __forceinline__ unsigned long long tkp_minp_counts(float v, float m, uint64_t t)
{
    return tkp_is_valid(v) && tkp_weight(v, m) >= t;
}

/* This thread's share (elements tid, tid + nth, ...) of the count of row x's tokens reaching
 * threshold t against the row's largest value m, one element a load. */
template <class E>
__device__ unsigned long long tkp_minp_share_of(const void *x, int64_t vocab, float m, uint64_t t,
                                                uint32_t tid, uint32_t nth)
{
    unsigned long long n = 0;
    for (int64_t i = tid; i < vocab; i += nth)
        n += tkp_minp_counts(tkp_load1<E>(x, i), m, t);
    return n;
}

/* tkp_minp_share_of on row r of logits of `dtype`: the count over the whole row that a module
 * folding min-p from part of its row (tkp_minp_fold_part, prob.h) falls back on, in whatever
 * block shape it has (the caller sums the threads' shares). It runs on the rare rows the fold
 * from part of the row cannot settle, and on every min-p row under TKP_MINP_FORCE_COUNT. */
__device__ __forceinline__ unsigned long long tkp_minp_row_share(enum tkp_dtype dtype,
                                                                 const void *logits,
                                                                 int64_t stride, int64_t r,
                                                                 int64_t vocab, float m,
                                                                 uint64_t t, uint32_t tid,
                                                                 uint32_t nth)
{
    if (dtype == TKP_BF16)
        return tkp_minp_share_of<TkpBF16>(tkp_row_ptr<TkpBF16>(logits, stride, r), vocab, m, t,
                                          tid, nth);
    if (dtype == TKP_F16)
        return tkp_minp_share_of<TkpF16>(tkp_row_ptr<TkpF16>(logits, stride, r), vocab, m, t,
                                         tid, nth);
    return tkp_minp_share_of<TkpF32>(tkp_row_ptr<TkpF32>(logits, stride, r), vocab, m, t, tid,
                                     nth);
}

/* TKP_MINP_FORCE_COUNT=1 in the environment: every module that folds min-p from part of its
 * row (tkp_minp_fold_part, prob.h) takes its fallback, the count over the whole row, on every
 * min-p row, so that the GPU tests reach that path on every case (read once a process). */
inline bool tkp_minp_force_count()
{
    static const int forced = [] {
        const char *v = getenv("TKP_MINP_FORCE_COUNT");
        return v && *v && *v != '0' ? 1 : 0;
    }();
    return forced != 0;
}

} // namespace

#endif

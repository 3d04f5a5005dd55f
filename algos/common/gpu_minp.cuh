/* gpu_minp.cuh — min-p on the GPU, folded into top-k as on the CPU (docs/SEMANTICS.md,
 * "min-p"): before a module's kernels run, tkp_gpu_minp_k writes each row's k with its min-p
 * folded in (tkp_minp_fold, prob.h) into the workspace, and the module's kernels read that
 * array in place of struct tkp_io.k. One block per row: a pass for the row's largest valid
 * value (as an order key), a pass counting the valid tokens whose fixed weight reaches
 * tkp_minp_threshold(min_p[r]) — the count over every token of the row, exactly
 * tkp_minp_fold_k's (cpu_row.c): the weight is not monotone in the value to the last unit of
 * its rounding, so no prefix of the sorted row stands in for it — then thread 0 folds. A row
 * whose min_p is off copies its k. min_p is read from device memory by the kernel, so a CUDA
 * graph captured once replays with whatever it holds; the kernel is launched only when
 * struct tkp_io.min_p is non-NULL, so a run without min-p costs nothing more. */
#ifndef TKP_GPU_MINP_CUH
#define TKP_GPU_MINP_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "../tkp.h"
#include "cuda_util.h"
#include "gpu_block.cuh"
#include "gpu_logits.cuh"
#include "prob.h"

namespace {

constexpr int kTkpMinpThreads = 512;
constexpr int kTkpMinpWarps = kTkpMinpThreads / 32;

/* f(v) for each value v of the row x (vocab elements) this thread reads: four-element vector
 * loads where the row starts a vector (tkp_vec4_ok), the elements past the last whole vector
 * and an unaligned row one by one. */
template <class E, class F>
__device__ __forceinline__ void tkp_minp_each(const void *x, int64_t vocab, F &&f)
{
    int64_t i = threadIdx.x;
    if (tkp_vec4_ok<E>(x, 0)) {
        const int64_t whole = vocab & ~(int64_t)3;
        for (int64_t j = 4 * (int64_t)threadIdx.x; j < whole; j += 4 * kTkpMinpThreads) {
            const float4 v = tkp_load4<E>(x, j);
            f(v.x), f(v.y), f(v.z), f(v.w);
        }
        i = whole + threadIdx.x;
    }
    for (; i < vocab; i += kTkpMinpThreads)
        f(tkp_load1<E>(x, i));
}

/* Row blockIdx.x: k_out[r] = tkp_minp_fold(k[r], n, vocab), n as above. */
template <class E>
__global__ void __launch_bounds__(kTkpMinpThreads)
    tkp_minp_fold_kernel(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                         const int32_t *__restrict__ k, const float *__restrict__ min_p,
                         int32_t *__restrict__ k_out)
{
    __shared__ unsigned long long scratch[2][kTkpMinpWarps];
    const int64_t r = blockIdx.x;
    const float mp = min_p[r];
    if (!tkp_minp_on(mp)) { /* the same in every thread: no barrier is skipped by some only */
        if (threadIdx.x == 0)
            k_out[r] = k[r];
        return;
    }
    const void *x = tkp_row_ptr<E>(logits, stride, r);
    unsigned long long unused = 0, kmax = 0;
    tkp_minp_each<E>(x, vocab, [&](float v) {
        const unsigned long long key = tkp_order_key(v);
        kmax = key > kmax ? key : kmax;
    });
    tkp_block_sum_max<kTkpMinpWarps>(unused, kmax, scratch);
    /* kmax == 0: no valid token, so no count pass and n = 0 (tkp_minp_fold keeps k) */
    const float m = tkp_key_value((uint32_t)kmax);
    const uint64_t t = tkp_minp_threshold(mp);
    unsigned long long n[1] = { 0 };
    if (kmax != 0)
        tkp_minp_each<E>(x, vocab,
                         [&](float v) { n[0] += tkp_is_valid(v) && tkp_weight(v, m) >= t; });
    tkp_block_sums<kTkpMinpWarps>(n, scratch);
    if (threadIdx.x == 0)
        k_out[r] = tkp_minp_fold(k[r], (int64_t)n[0], vocab);
}

/* Workspace bytes for the folded k of pb's rows (a multiple of 256, so that what a module
 * carves after it stays aligned). */
inline size_t tkp_gpu_minp_bytes(const struct tkp_problem *pb)
{
    return ((size_t)(pb->batch > 0 ? pb->batch : 1) * sizeof(int32_t) + 255u) & ~(size_t)255u;
}

/* The k array a module's kernels read for this run, in *k: io->k when io->min_p is NULL, else
 * k_ws (tkp_gpu_minp_bytes of workspace), which the fold kernel, enqueued on `stream`, fills.
 * TKP_EDEVICE when the launch fails, TKP_EINVAL for a pb->dtype outside the enum. */
inline int tkp_gpu_minp_k(const struct tkp_problem *pb, const struct tkp_io *io, int32_t *k_ws,
                          cudaStream_t stream, const int32_t **k, struct tkp_error *err)
{
    *k = io->k;
    if (!io->min_p || pb->batch <= 0)
        return TKP_OK;
    const bool typed = tkp_with_dtype(pb->dtype, [&](auto e) {
        tkp_minp_fold_kernel<decltype(e)><<<(unsigned)pb->batch, kTkpMinpThreads, 0, stream>>>(
            io->logits, pb->stride, pb->vocab, io->k, io->min_p, k_ws);
    });
    if (!typed) {
        tkp_error_set(err, "min-p (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
    TKP_LAUNCH_CHECK(err);
    *k = k_ws;
    return TKP_OK;
}

} // namespace

#endif

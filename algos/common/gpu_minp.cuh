/* gpu_minp.cuh — min-p on the GPU, folded into top-k as on the CPU (docs/SEMANTICS.md,
 * "min-p"): before a module's kernels run, the fold writes each row's k with its min-p folded
 * in (tkp_minp_fold, prob.h) into the workspace, and the module's kernels read that array in
 * place of struct tkp_io.k. Two passes over each row: its largest valid value (as an order
 * key), then the count of its valid tokens whose fixed weight reaches
 * tkp_minp_threshold(min_p[r]) — the count over every token of the row, exactly
 * tkp_minp_fold_k's (cpu_row.c): the weight is not monotone in the value to the last unit of
 * its rounding, so no prefix of the sorted row stands in for it. A row whose min_p is off
 * copies its k.
 *
 * Two shapes of the same passes, the same result (integers: a maximum and a count, whatever
 * the order): with many rows, one block a row (tkp_minp_fold_kernel); with few, each row split
 * into chunks so that the GPU fills (tkp_minp_splits): a zeroing, a kernel per pass whose blocks
 * meet through atomics on the row's maximum and count, and a last one that folds. min_p is read
 * from device memory by the kernels, so a CUDA graph captured once replays with whatever it
 * holds; the fold runs only when struct tkp_io.min_p is non-NULL, so a run without min-p costs
 * nothing more. */
#ifndef TKP_GPU_MINP_CUH
#define TKP_GPU_MINP_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "../tkp.h"
#include "cuda_util.h"
#include "gpu_block.cuh"
#include "gpu_logits.cuh"
#include "prob.h"

namespace {

constexpr int kTkpMinpThreads = 512;
constexpr int kTkpMinpWarps = kTkpMinpThreads / 32;

/* The fewest elements a block of the split fold reads of its row, and the blocks that fill
 * the GPU (two per SM of an H100 or H200's 132; more rows than that take the one-block-a-row
 * shape). */
constexpr int64_t kTkpMinpMinChunk = 4096;
constexpr int64_t kTkpMinpFill = 264;

/* f(v) for each value v of elements [begin, end) of the row x that this thread reads:
 * four-element vector loads where element `begin` starts a vector (tkp_vec4_ok), the elements
 * past the last whole vector and an unaligned row one by one. */
template <class E, class F>
__device__ __forceinline__ void tkp_minp_each(const void *x, int64_t begin, int64_t end, F &&f)
{
    if (begin >= end) /* an empty chunk (none with today's sizes: see tkp_minp_splits) */
        return;
    int64_t i = begin + threadIdx.x;
    if (tkp_vec4_ok<E>(x, begin)) {
        const int64_t whole = begin + ((end - begin) & ~(int64_t)3);
        for (int64_t j = begin + 4 * (int64_t)threadIdx.x; j < whole; j += 4 * kTkpMinpThreads) {
            const float4 v = tkp_load4<E>(x, j);
            f(v.x), f(v.y), f(v.z), f(v.w);
        }
        i = whole + threadIdx.x;
    }
    for (; i < end; i += kTkpMinpThreads)
        f(tkp_load1<E>(x, i));
}

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

/* The block's largest order key over elements [begin, end) of row x (0: none valid), in every
 * thread; both shapes' pass 1. */
template <class E>
__device__ __forceinline__ unsigned long long tkp_minp_block_max(
    const void *x, int64_t begin, int64_t end, unsigned long long (*scratch)[kTkpMinpWarps])
{
    unsigned long long unused = 0, kmax = 0;
    tkp_minp_each<E>(x, begin, end, [&](float v) {
        const unsigned long long key = tkp_order_key(v);
        kmax = key > kmax ? key : kmax;
    });
    tkp_block_sum_max<kTkpMinpWarps>(unused, kmax, scratch);
    return kmax;
}

/* The block's count of elements of [begin, end) reaching threshold t against the row's
 * largest value m (tkp_minp_counts); both shapes' pass 2. */
template <class E>
__device__ __forceinline__ unsigned long long tkp_minp_block_count(
    const void *x, int64_t begin, int64_t end, float m, uint64_t t,
    unsigned long long (*scratch)[kTkpMinpWarps])
{
    unsigned long long n[1] = { 0 };
    tkp_minp_each<E>(x, begin, end, [&](float v) { n[0] += tkp_minp_counts(v, m, t); });
    tkp_block_sums<kTkpMinpWarps>(n, scratch);
    return n[0];
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
    const unsigned long long kmax = tkp_minp_block_max<E>(x, 0, vocab, scratch);
    /* kmax == 0 (the same in every thread): no valid token, so no count pass and n = 0
     * (tkp_minp_fold keeps k) */
    const unsigned long long n =
        kmax == 0 ? 0
                  : tkp_minp_block_count<E>(x, 0, vocab, tkp_key_value((uint32_t)kmax),
                                            tkp_minp_threshold(mp), scratch);
    if (threadIdx.x == 0)
        k_out[r] = tkp_minp_fold(k[r], (int64_t)n, vocab);
}

/* The split fold's state of a row: its largest valid order key and its count, each met by
 * every block of the row through an atomic (zeroed before the first pass). */
struct TkpMinpRow {
    unsigned int kmax;
    unsigned int count;
};

/* Pass 1 of the split fold: block (c, r) folds the largest order key of chunk c (`chunk`
 * elements, a multiple of 4, so that each chunk starts a vector where its row does) of row r
 * into rows[r].kmax. */
template <class E>
__global__ void __launch_bounds__(kTkpMinpThreads)
    tkp_minp_max_kernel(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                        int64_t chunk, const float *__restrict__ min_p,
                        TkpMinpRow *__restrict__ rows)
{
    __shared__ unsigned long long scratch[2][kTkpMinpWarps];
    const int64_t r = blockIdx.y, begin = (int64_t)blockIdx.x * chunk;
    if (!tkp_minp_on(min_p[r]))
        return;
    const int64_t end = begin + chunk < vocab ? begin + chunk : vocab;
    const unsigned long long kmax =
        tkp_minp_block_max<E>(tkp_row_ptr<E>(logits, stride, r), begin, end, scratch);
    if (threadIdx.x == 0 && kmax != 0)
        atomicMax(&rows[r].kmax, (unsigned int)kmax);
}

/* Pass 2: block (c, r) adds chunk c's count of tokens reaching the threshold (against the
 * row's largest value, pass 1's) to rows[r].count. */
template <class E>
__global__ void __launch_bounds__(kTkpMinpThreads)
    tkp_minp_count_kernel(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                          int64_t chunk, const float *__restrict__ min_p,
                          TkpMinpRow *__restrict__ rows)
{
    __shared__ unsigned long long scratch[2][kTkpMinpWarps];
    const int64_t r = blockIdx.y, begin = (int64_t)blockIdx.x * chunk;
    const unsigned int kmax = rows[r].kmax;
    if (!tkp_minp_on(min_p[r]) || kmax == 0) /* no valid token: n = 0 */
        return;
    const int64_t end = begin + chunk < vocab ? begin + chunk : vocab;
    const unsigned long long n =
        tkp_minp_block_count<E>(tkp_row_ptr<E>(logits, stride, r), begin, end,
                                tkp_key_value(kmax), tkp_minp_threshold(min_p[r]), scratch);
    if (threadIdx.x == 0 && n != 0)
        atomicAdd(&rows[r].count, (unsigned int)n);
}

/* Last: each row's k with its count folded in (or its k, min-p off). */
__global__ void tkp_minp_finish_kernel(int64_t batch, int64_t vocab, const int32_t *__restrict__ k,
                                       const float *__restrict__ min_p,
                                       const TkpMinpRow *__restrict__ rows,
                                       int32_t *__restrict__ k_out)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r < batch)
        k_out[r] = tkp_minp_on(min_p[r]) ? tkp_minp_fold(k[r], (int64_t)rows[r].count, vocab) : k[r];
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

/* Chunks a row is split into: enough blocks to fill the GPU, none under kTkpMinpMinChunk
 * elements; 1 (the one-block-a-row shape) when the rows alone fill it. */
inline int64_t tkp_minp_splits(int64_t batch, int64_t vocab)
{
    const int64_t want = (kTkpMinpFill + batch - 1) / batch;
    const int64_t most = (vocab + kTkpMinpMinChunk - 1) / kTkpMinpMinChunk;
    return want < most ? want : most;
}

/* Bytes of the folded k array, rounded so that the TkpMinpRow array after it is aligned. */
inline size_t tkp_minp_k_bytes(int64_t batch)
{
    return ((size_t)(batch > 0 ? batch : 1) * sizeof(int32_t) + 7u) & ~(size_t)7u;
}

/* Workspace bytes for the folded k of pb's rows and the split fold's TkpMinpRow a row (a
 * multiple of 256, so that what a module carves after it stays aligned). */
inline size_t tkp_gpu_minp_bytes(const struct tkp_problem *pb)
{
    const size_t rows = (size_t)(pb->batch > 0 ? pb->batch : 1);
    return (tkp_minp_k_bytes(pb->batch) + rows * sizeof(TkpMinpRow) + 255u) & ~(size_t)255u;
}

/* The split fold's launches on `stream` (its TkpMinpRow array after the k_out array): each
 * row read in `splits` chunks of a multiple of 4 elements. */
template <class E>
inline cudaError_t tkp_minp_split_launch(const struct tkp_problem *pb, const struct tkp_io *io,
                                         int32_t *k_ws, int64_t splits, cudaStream_t stream)
{
    TkpMinpRow *rows = (TkpMinpRow *)((char *)k_ws + tkp_minp_k_bytes(pb->batch));
    const cudaError_t zeroed =
        cudaMemsetAsync(rows, 0, sizeof(TkpMinpRow) * (size_t)pb->batch, stream);
    if (zeroed != cudaSuccess)
        return zeroed;
    const int64_t chunk = tkp_slice_of(pb->vocab, (int)splits, 4);
    const dim3 grid((unsigned)splits, (unsigned)pb->batch);
    tkp_minp_max_kernel<E><<<grid, kTkpMinpThreads, 0, stream>>>(io->logits, pb->stride,
                                                                  pb->vocab, chunk, io->min_p, rows);
    tkp_minp_count_kernel<E><<<grid, kTkpMinpThreads, 0, stream>>>(
        io->logits, pb->stride, pb->vocab, chunk, io->min_p, rows);
    tkp_minp_finish_kernel<<<(unsigned)((pb->batch + 255) / 256), 256, 0, stream>>>(
        pb->batch, pb->vocab, io->k, io->min_p, rows, k_ws);
    return cudaSuccess;
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
    const int64_t splits = tkp_minp_splits(pb->batch, pb->vocab);
    cudaError_t zeroed = cudaSuccess;
    const bool typed = tkp_with_dtype(pb->dtype, [&](auto e) {
        if (splits > 1)
            zeroed = tkp_minp_split_launch<decltype(e)>(pb, io, k_ws, splits, stream);
        else
            tkp_minp_fold_kernel<decltype(e)><<<(unsigned)pb->batch, kTkpMinpThreads, 0, stream>>>(
                io->logits, pb->stride, pb->vocab, io->k, io->min_p, k_ws);
    });
    if (!typed) {
        tkp_error_set(err, "min-p (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
    TKP_CUDA_TRY(zeroed, err);
    TKP_LAUNCH_CHECK(err);
    *k = k_ws;
    return TKP_OK;
}

} // namespace

#endif

/* rtopk_gpu.cu — the CUDA backend of rtopk: the passes and decisions of rtopk.c, one
 * thread-block cluster of `group` CTAs per row.
 *
 * Each CTA of a row's cluster owns `chunk` consecutive tokens (chunk a multiple of 4, the
 * last CTA's share shorter, possibly empty) and, when `cached`, copies them into dynamic
 * shared memory during the first pass, so that the search iterations and the selection
 * read shared memory instead of HBM. Every pass ends with a block reduction (CUB) and an
 * exchange of the CTAs' partial results through distributed shared memory: each CTA writes
 * its partial into its own slot, cluster.sync(), then every thread combines the G slots in
 * rank order. All CTAs therefore hold identical totals and take identical decisions.
 *
 * 1. scan: valid count, max and #(x == max), min and #(x == min).
 * 2. search (rtopk_search of rtopk.c): mid = 0.5*lo + 0.5*hi (two IEEE roundings, no FMA,
 *    no flush to zero; +inf enters as 2^127), stop when mid == lo or mid == hi (t = lo),
 *    at the early stop (t = mid), or when #(x >= mid) == n (t = mid). Each counting pass
 *    counts #(x >= mid) and #(x == mid) together (packed into one 64-bit sum), so that the
 *    class sizes at the final threshold are known without another pass (except after an
 *    early stop, where t = the uncounted midpoint gets one extra counting pass, not counted
 *    as an iteration, as on the CPU).
 * 3. select: passes A (x > t), B (x == t), C (valid x < t), each in index order until n are
 *    kept, are equivalent to quotas qA = min(n, |A|), qB = min(n - qA, |B|), qC = the rest.
 *    At most one class is taken partially; when none is, every mask byte is decided by its
 *    own token (one elementwise pass). Otherwise the partial class is ranked in index order:
 *    each CTA counts its chunk's members (exchanged: the CTA's starting rank = the sum over
 *    lower ranks), then a block-wide exclusive scan per tile carries the rank across tiles.
 * Counts are integers and min/max are exact, so any reduction order gives the same result:
 * the mask is bit-identical to the CPU's for every launch shape.
 *
 * The kernel is templated on the logits' element type E (algos/common/gpu_logits.cuh): a
 * 16-bit row is read in four-element uint2 vectors (8 bytes; float4 for float32) and
 * converted exactly in registers, and the cache holds the converted floats (the same
 * 4 bytes per token and layout as for float32), so the later passes are the same code and a
 * 16-bit row gives the mask of its float32 upcast (docs/SEMANTICS.md, "16-bit logits").
 *
 * This file holds the kernel and the launcher; the device code is in the layers that
 * rtopk_gpu_types.cuh lists (README.md, "GPU source layout"). */
#include <cooperative_groups.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "rtopk_gpu.h"
#include "rtopk_impl.h"
#include "rtopk_gpu_row.cuh"
#include "rtopk_gpu_types.cuh"

namespace {

/* One cluster per row of `logits` (element type E, rows `stride` elements apart). */
template <class E, bool CACHED>
__global__ void __launch_bounds__(RT_THREADS, RT_BLOCKS_PER_SM)
    rtopk_kernel(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                 const int32_t *__restrict__ kk, uint8_t *__restrict__ kept, int chunk,
                 int max_iter, int32_t *__restrict__ iters)
{
    extern __shared__ float4 cache[];
    __shared__ RtShared sh;
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned G = cluster.num_blocks();
    const unsigned rank = cluster.block_rank();
    const int tid = threadIdx.x;
    const int64_t row = blockIdx.x / G;
    const int64_t c0 = (int64_t)rank * chunk;
    RtChunk<E, CACHED> ch;
    ch.len = c0 < vocab ? (int)(vocab - c0 < chunk ? vocab - c0 : chunk) : 0;
    ch.groups = (ch.len + 3) >> 2;
    ch.x = static_cast<const typename E::storage *>(tkp_row_ptr<E>(logits, stride, row)) +
           (c0 < vocab ? c0 : 0);
    ch.xvec = tkp_vec4_ok<E>(ch.x, 0);
    ch.kr = kept + row * vocab + (c0 < vocab ? c0 : 0);
    ch.kvec = ((uintptr_t)ch.kr & 3) == 0;
    ch.cache = cache;
    RtCluster xc{ cluster, sh, G, rank, 0 };

    const Stat st = rt_scan(ch, xc); /* 1. */
    /* counts fit an int: vocab <= 2^23 */
    const int valid = st.valid;
    const int32_t k = kk[row];
    const int n = tkp_topk_on(k, vocab) && k < valid ? (int)k : valid;
    const RtThreshold th = rt_search(ch, xc, st, n, max_iter); /* 2. */
    const RtQuota q = rt_quotas(n, valid, th);                  /* 3. */
    if (q.part == CLS_NONE)
        rt_write_whole_classes(ch, th.t, q);
    else
        rt_write_ranked(ch, xc, th.t, q);
    if (rank == 0 && tid == 0)
        iters[row] = th.its;
    cluster.sync(); /* no CTA leaves while another may still read its slots */
}

/* Every instantiation of rtopk_kernel has this type (the logits are untyped). */
typedef void (*RtKernel)(const void *, int64_t, int64_t, const int32_t *, uint8_t *, int, int,
                         int32_t *);

/* The kernel for the problem's element type, with or without the cache: the one place that
 * dispatches on pb->dtype; NULL for a type outside the enum. */
RtKernel rt_kernel(enum tkp_dtype dtype, bool cached)
{
    RtKernel k = nullptr;
    tkp_with_dtype(dtype, [&](auto e) {
        using E = decltype(e);
        k = cached ? rtopk_kernel<E, true> : rtopk_kernel<E, false>;
    });
    return k;
}

/* The error for an element type outside the enum (the harness refuses one before init). */
int rt_bad_dtype(const struct tkp_problem *pb, struct tkp_error *err)
{
    tkp_error_set(err, "rtopk: logits element type %d is not one of f32, bf16, f16",
                  (int)pb->dtype);
    return TKP_EINVAL;
}

/* How many clusters of this shape fit on the device at once (0: the launch would fail). */
int rt_clusters(RtKernel kernel, const struct rtopk_gpu_plan *plan)
{
    return tkp_active_clusters(kernel, plan->group, RT_THREADS, plan->smem);
}

int64_t rt_chunk(int64_t vocab, int group)
{
    int64_t c = (vocab + group - 1) / group;
    return (c + 3) & ~(int64_t)3;
}

} // namespace

extern "C" int rtopk_gpu_plan(const struct tkp_problem *pb, const void *opts, void *plan_out,
                              size_t *workspace_bytes, struct tkp_error *err)
{
    struct rtopk_gpu_plan *plan = (struct rtopk_gpu_plan *)plan_out;
    plan->pb = *pb;
    plan->max_iter = ((const struct rtopk_opts *)opts)->max_iter;
    int dev = 0, sms = 0, optin = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
                 err);
    const RtKernel cached_kernel = rt_kernel(pb->dtype, true);
    const RtKernel stream_kernel = rt_kernel(pb->dtype, false);
    if (!cached_kernel || !stream_kernel)
        return rt_bad_dtype(pb, err);
    cudaFuncAttributes fa;
    TKP_CUDA_TRY(cudaFuncGetAttributes(&fa, cached_kernel), err);
    const int64_t cap = (int64_t)optin - (int64_t)fa.sharedSizeBytes; /* dynamic smem limit */
    TKP_CUDA_TRY(cudaFuncSetAttribute(cached_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cap),
                 err);

    /* The fewest CTAs whose chunks fit comfortably in shared memory ... */
    int group = 1, cached = 1;
    while (group < RT_MAX_GROUP && rt_chunk(pb->vocab, group) * 4 > RT_PREF_CHUNK_BYTES)
        group *= 2;
    if (rt_chunk(pb->vocab, group) * 4 > cap)
        cached = 0; /* a row longer than the cluster's shared memory: stream every pass */
    /* ... and more of them while the batch leaves SMs idle. */
    while (group < RT_MAX_GROUP && pb->batch * group < sms &&
           rt_chunk(pb->vocab, group * 2) >= RT_MIN_SPLIT)
        group *= 2;
    plan->group = group;
    plan->chunk = (int)rt_chunk(pb->vocab, group);
    plan->cached = cached;
    /* the cache holds converted floats, 4 bytes per token whatever the element type */
    plan->smem = cached ? (size_t)plan->chunk * sizeof(float) : 0;
    if (plan->cached && rt_clusters(cached_kernel, plan) == 0) {
        plan->cached = 0; /* cannot co-schedule the cluster with that much shared memory */
        plan->smem = 0;
    }
    if (!plan->cached && rt_clusters(stream_kernel, plan) == 0) {
        tkp_error_set(err, "rtopk: no cluster of %d CTAs of %d threads fits on this device",
                      plan->group, RT_THREADS);
        return TKP_EDEVICE;
    }
    *workspace_bytes = sizeof(int32_t) * (size_t)(pb->batch > 0 ? pb->batch : 1);
    return TKP_OK;
}

extern "C" int rtopk_gpu_run(const void *plan_in, const struct tkp_io *io, void *workspace,
                             void *stream, struct tkp_error *err)
{
    const struct rtopk_gpu_plan *plan = (const struct rtopk_gpu_plan *)plan_in;
    const struct tkp_problem *pb = &plan->pb;
    if (pb->batch == 0 || !io->kept)
        return TKP_OK;
    int32_t *iters = (int32_t *)workspace;
    cudaStream_t st = (cudaStream_t)stream;
    const RtKernel kernel = rt_kernel(pb->dtype, plan->cached != 0);
    if (!kernel)
        return rt_bad_dtype(pb, err);
    const dim3 grid((unsigned)(pb->batch * plan->group));
    TKP_CUDA_TRY(tkp_launch_cluster(kernel, plan->group, grid, dim3(RT_THREADS), plan->smem, st,
                                    io->logits, (int64_t)pb->stride, (int64_t)pb->vocab, io->k,
                                    io->kept, plan->chunk, plan->max_iter, iters),
                 err);
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

/* rtopk_gpu.h: the iteration counters of the last run, downloaded on its stream and summed. */
extern "C" int rtopk_gpu_stats(const void *plan_in, const void *workspace, void *stream,
                               struct tkp_stats *out)
{
    const int64_t batch = ((const struct rtopk_gpu_plan *)plan_in)->pb.batch;
    memset(out, 0, sizeof *out);
    int32_t *h = (int32_t *)malloc(sizeof(int32_t) * (size_t)(batch > 0 ? batch : 1));
    if (!h)
        return TKP_ENOMEM;
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemcpyAsync(h, workspace, sizeof(int32_t) * (size_t)batch,
                                    cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        free(h);
        return TKP_EDEVICE;
    }
    double sum = 0;
    for (int64_t r = 0; r < batch; r++)
        sum += h[r];
    free(h);
    out->total[RTOPK_STAT_ITERATIONS] = sum;
    out->reported = TKP_STAT_BIT(RTOPK_STAT_ITERATIONS);
    return TKP_OK;
}

/* rejection_gpu.cu — CUDA implementation of the dual-pivot rejection sampler.
 *
 * The CPU reference (rejection.c) is the sequential form of this kernel: the same passes, the
 * same integer decisions (rejection_rules.h) and the same Philox counters, so every draw is
 * the CPU's bit for bit. All masses and counts are exact integers, so block and cluster
 * reductions and scans give the CPU's numbers whatever the order of addition. Two variants run
 * the same code (prepare_row, draw_one) through the policy Row<E, THREADS, CLUSTER, BIG>,
 * which says where the tokens come from and how the per-pass integers are reduced:
 *  - one CTA per row (CLUSTER = false; large batches): grid (batch, groups); every pass
 *    streams the row from global memory (16-byte vector loads when the row starts one: a
 *    float4 of four values, or a uint4 of eight 16-bit ones, else a uint2 of four 16-bit ones
 *    when it starts at 8 bytes) and recomputes order keys and fixed-point weights from the
 *    logits;
 *  - a thread-block cluster of C = 2 .. 16 CTAs per row (CLUSTER = true; small batches):
 *    grid (batch * C, groups); CTA `rank` copies its contiguous slice of the row into shared
 *    memory once, every pass runs on that copy, and the pass's integers (counts, masses,
 *    histograms, gathered tokens) are combined over the cluster through distributed shared
 *    memory. The inverse-CDF pick takes the slices' masses in rank order (= index order) to
 *    find the one CTA whose slice holds the crossing token, which scans its slice. When the
 *    first candidate set fits in shared memory, every CTA holds it and the CTAs of the
 *    cluster run different draws with no cluster barrier.
 * CTA (row r, group g) runs draws g, g + groups, ... (small first set in a cluster: draws
 * g * C + rank, step groups * C). README.md ("GPU") has the launch shapes and the
 * determinism argument.
 *
 * min-p is folded into each row's k by the kernels themselves (prepare_row: from the tokens
 * gathered at the k-th key's bucket, or a count over the row; README.md, "min-p on the GPU"),
 * so a run is one launch with or without it; min_p is read from device memory there.
 *
 * Every kernel is templated on the logits' element type E (algos/common/gpu_logits.cuh): a
 * 16-bit value converts to float32 exactly as it is loaded, so the draws on a bf16 or fp16 row
 * are those on its float32 upcast bit for bit (docs/SEMANTICS.md, "16-bit logits");
 * kernels_for is the one place that picks the instantiation of a problem's dtype.
 *
 * This file holds the two __global__ kernels and the launcher (rejection_gpu.h); the device
 * code is in layers, each header including the ones below it (README.md, "GPU source layout"):
 * rejection_gpu_types.cuh (constants, Params, Shared, ClusterShared), rejection_gpu_row.cuh
 * (the Row policy), rejection_gpu_passes.cuh (tallies, selects, the small-set paths),
 * rejection_gpu_prepare.cuh (prepare_row), rejection_gpu_draw.cuh (draw_one, sample_row);
 * the block and warp primitives are algos/common/gpu_block.cuh and gpu_warp.cuh. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_minp.cuh"
#include "rejection_gpu.h"
#include "rejection_impl.h"
#include "rejection_gpu_draw.cuh"
#include "rejection_gpu_row.cuh"
#include "rejection_gpu_types.cuh"

namespace cg = cooperative_groups;

namespace {

using namespace rej_gpu;

/* One CTA per row: row blockIdx.x, draws blockIdx.y, blockIdx.y + groups, ... BIG: launched
 * with pass 1's big list in dynamic shared memory (prm.list_cap > kGather), else without. */
template <class E, int THREADS, bool BIG>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS) /* 64 registers at 512 and 256 */
    rejection_kernel(const Params prm)
{
    __shared__ Shared<THREADS> sh;
    const int r = blockIdx.x;
    const void *__restrict__ x = tkp_row_ptr<E>(prm.io.logits, prm.stride, r);
    Row<E, THREADS, false, BIG> row{ sh,      nullptr, x, nullptr, nullptr, prm.vocab, 0,
                                     prm.vocab, tkp_vec4_ok<E>(x, 0), false, 0u, 1u, 0 };
    if (threadIdx.x == 0) /* read after prepare_row's first barrier */
        sh.list_cap = prm.list_cap;
    sample_row(row, prm, r, (int)blockIdx.y);
}

/* A cluster of C CTAs per row: row blockIdx.x / C, rank blockIdx.x % C, draws as above. CTA
 * `rank` holds elements [rank * slice, rank * slice + slice) of the row (fewer at the end). */
template <class E>
__global__ void __launch_bounds__(kClusterThreads, 1) rejection_cluster_kernel(const Params prm)
{
    extern __shared__ __align__(16) unsigned char smem[];
    ClusterSmem &cs = *reinterpret_cast<ClusterSmem *>(smem);
    float *xs = reinterpret_cast<float *>(smem + kClusterFixed);
    uint32_t *wc = reinterpret_cast<uint32_t *>(xs + prm.slice);
    cg::cluster_group cl = cg::this_cluster();
    const unsigned size = cl.num_blocks(), rank = cl.block_rank();
    const int r = (int)(blockIdx.x / size);
    const void *__restrict__ x = tkp_row_ptr<E>(prm.io.logits, prm.stride, r);
    const int64_t b64 = (int64_t)rank * prm.slice;
    const int begin = b64 < prm.vocab ? (int)b64 : prm.vocab;
    const int n = prm.vocab - begin < prm.slice ? prm.vocab - begin : prm.slice;
    Row<E, kClusterThreads, true> row{ cs.sh, &cs.cx, x, xs, wc, prm.vocab, begin, n,
                                       tkp_vec4_ok<E>(x, 0), false, rank, size, 0 };
    if (threadIdx.x == 0) /* read after prepare_row's first barrier */
        cs.sh.list_cap = kGather;
    row.load_slice();
    sample_row(row, prm, r, (int)blockIdx.y);
    cl.sync(); /* no CTA leaves while another may still read its shared memory */
}

/* The kernels of one element type (every instantiation has the signature of Kernel). */
typedef void (*Kernel)(const Params);
struct Kernels {
    Kernel row256, row512, row1024, row512_big, row1024_big, cluster;
    /* The one-CTA-a-row kernel of `threads` (256, 512 or 1024), with pass 1's big list (512
     * and 1024 only: rej_list_cap) or without. */
    Kernel row(int threads, bool big) const
    {
        if (threads == 256) /* never with the big list (rej_list_cap): no such kernel */
            return big ? nullptr : row256;
        return threads == 512 ? (big ? row512_big : row512) : (big ? row1024_big : row1024);
    }
};

/* The kernels reading logits of `dtype`; all null for a value outside the enum. */
Kernels kernels_for(enum tkp_dtype dtype)
{
    Kernels k = { nullptr, nullptr, nullptr, nullptr, nullptr, nullptr };
    tkp_with_dtype(dtype, [&](auto e) {
        using E = decltype(e);
        k = { rejection_kernel<E, 256, false>,  rejection_kernel<E, 512, false>,
              rejection_kernel<E, 1024, false>, rejection_kernel<E, 512, true>,
              rejection_kernel<E, 1024, true>,  rejection_cluster_kernel<E> };
    });
    return k;
}

int device_sms()
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        sms <= 0) {
        cudaGetLastError();
        sms = 132;
    }
    return sms;
}

/* Tokens per CTA when a row of `vocab` is split over `c` CTAs (a multiple of 4, so every
 * slice of a row that starts a vector starts one). */
int64_t slice_of(int64_t vocab, int c) { return tkp_slice_of(vocab, c, 4); }

/* How many clusters of c CTAs of `kernel` with this slice can run at once (0: none, or no
 * clusters). */
int active_clusters(Kernel kernel, int c, int64_t slice)
{
    return tkp_active_clusters(kernel, c, kClusterThreads, cluster_smem_bytes((int)slice));
}

/* The cluster size for a problem: the smallest C in 2, 4, 8, 16 whose slices fit in shared
 * memory and hold at least kMinSlice tokens, that runs the whole batch in one wave, and, for
 * C >= 4, whose batch takes at most half the SMs; 1 (one CTA per row) otherwise. Measured on
 * the H200 (README "Cluster variant"): every cluster barrier and exchange costs more with more
 * CTAs, so the smallest cluster whose slice fits wins (B = 1, V = 128256: 8 CTAs 26.8 us, 16
 * CTAs 32.4); clusters of 4 or more CTAs filling the device lose to smaller ones or to one CTA
 * per row (B = 16, V = 128256: 8 CTAs 51.4 us, one CTA 43.9). forced (the cluster option, else
 * TKP_REJ_CLUSTER; 0 when neither) takes that size at any vocabulary whose slice fits and the
 * device holds, else the cost model. *active gets the number of co-resident clusters of that
 * size. */
int choose_cluster(const struct tkp_problem *pb, int forced, int *active)
{
    *active = 0;
    int dev = 0, major = 0;
    if (pb->batch <= 0 || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        major < 9) {
        (void)cudaGetLastError();
        return 1;
    }
    const Kernel kernel = kernels_for(pb->dtype).cluster;
    if (forced == 1 || !kernel)
        return 1;
    /* The largest slice's shared memory once for all plans (the attribute is per kernel; the
     * slice is float32 in shared memory whatever the dtype). */
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)cluster_smem_bytes(kSliceCap)) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
        cudaSuccess)
        (void)cudaGetLastError(); /* then 16 reports no capacity and is never chosen */
    const int sms = device_sms();
    for (int c = 2; c <= kMaxCluster; c <<= 1) {
        const int64_t slice = slice_of(pb->vocab, c);
        if (slice > kSliceCap || (forced && forced != c))
            continue;
        if (!forced && (pb->vocab < (int64_t)c * kMinSlice ||
                        !tkp_cluster_leaves_half(c, pb->batch, sms)))
            continue;
        const int n = active_clusters(kernel, c, slice);
        if (n >= 1 && (forced || n >= pb->batch)) {
            *active = n;
            return c;
        }
    }
    return forced ? choose_cluster(pb, 0, active) : 1;
}

/* TKP_REJ_BIG_LIST: 0 keeps the gathered tokens' arrays (the ablation), 1 or unset lets
 * pass 1 list into dynamic shared memory; -1 for any other value (rej_gpu_plan's error). */
int big_list_setting(const char **text)
{
    long on = 1;
    return tkp_env_long("TKP_REJ_BIG_LIST", 0, 1, &on, text) < 0 ? -1 : (int)on;
}

/* One CTA a row: pass 1's list (rej_list_cap), the big one in dynamic shared memory where
 * the kernel may have it and big_list_setting allows it. */
void plan_list(const struct tkp_problem *pb, struct rej_gpu_plan *plan)
{
    const char *text;
    plan->list_cap = rej_list_cap(pb, plan->threads, kFirstChunk, kGather);
    if (big_list_setting(&text) == 0)
        plan->list_cap = kGather;
    plan->smem = plan->list_cap > kGather ? 2 * sizeof(uint32_t) * (size_t)plan->list_cap : 0;
    const Kernel kernel = kernels_for(pb->dtype).row(plan->threads, true);
    if (plan->smem && (!kernel || cudaFuncSetAttribute(kernel,
                                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      (int)plan->smem) != cudaSuccess)) {
        (void)cudaGetLastError();
        plan->list_cap = kGather;
        plan->smem = 0;
    }
}

/* The workspace's statistics slots, rounded up to 256 bytes: all of it (min-p is folded into
 * k inside the kernels, prepare_row: no array of folded k). */
size_t rej_stats_bytes(const struct rej_gpu_plan *plan)
{
    const size_t bytes = sizeof(u64) * kStatWords * (size_t)(plan->slots > 0 ? plan->slots : 1);
    return (bytes + 255u) & ~(size_t)255u;
}

} // namespace

extern "C" void rej_gpu_plan_for(const struct tkp_problem *pb, int forced_cluster,
                                 int forced_threads, struct rej_gpu_plan *plan)
{
    const int64_t sms = device_sms();
    int active = 0;
    plan->list_cap = kGather;
    plan->cluster = choose_cluster(pb, forced_cluster, &active);
    int64_t groups;
    if (plan->cluster > 1) {
        /* Small batches: a cluster per row (and per group of draws, while clusters fit). */
        plan->threads = kClusterThreads;
        plan->slice = (int)slice_of(pb->vocab, plan->cluster);
        plan->smem = cluster_smem_bytes(plan->slice);
        groups = active / (pb->batch > 0 ? pb->batch : 1);
    } else {
        /* One CTA a row, of the threads rej_auto_threads chooses (README "GPU", "Launch
         * shape"), and several CTAs a row when B < SMs and there are draws enough. */
        plan->threads = forced_threads ? forced_threads : rej_auto_threads(pb, sms);
        plan->slice = 0;
        plan_list(pb, plan);
        groups = pb->batch > 0 ? (sms + pb->batch - 1) / pb->batch : 1;
    }
    if (groups > pb->draws)
        groups = pb->draws;
    if (groups < 1)
        groups = 1;
    if (groups > 65535)
        groups = 65535;
    plan->groups = (int)groups;
    plan->slots = pb->batch * groups * plan->cluster;
    plan->workspace = rej_stats_bytes(plan);
}

/* rejection_gpu.h: the plan of one problem with options of struct rej_opts. */
extern "C" int rej_gpu_plan(const struct tkp_problem *pb, const void *opts, void *plan_out,
                            size_t *workspace_bytes, struct tkp_error *err)
{
    struct rej_gpu_plan *plan = (struct rej_gpu_plan *)plan_out;
    const struct rej_opts *o = (const struct rej_opts *)opts;
    int forced = 0; /* the cluster option, else TKP_REJ_CLUSTER (tests and experiments) */
    const int rc = tkp_forced_cluster(o->cluster, "TKP_REJ_CLUSTER", &forced, err);
    if (rc != TKP_OK)
        return rc;
    long threads = rej_threads_chosen(o); /* the threads option, else TKP_REJ_THREADS */
    const char *v;
    if (!threads && (tkp_env_long("TKP_REJ_THREADS", 256, 1024, &threads, &v) < 0 ||
                     (threads && threads != 256 && threads != 512 && threads != 1024))) {
        tkp_error_set(err, "rejection (gpu): TKP_REJ_THREADS=%s: the CTAs have 256, 512 or "
                           "1024 threads", v);
        return TKP_EINVAL;
    }
    if (big_list_setting(&v) < 0) {
        tkp_error_set(err, "rejection (gpu): TKP_REJ_BIG_LIST=%s: 0 (no big list) or 1", v);
        return TKP_EINVAL;
    }
    if (threads && forced > 1) { /* the shape of one CTA a row is no cluster's */
        tkp_error_set(err, "rejection (gpu): threads=%ld is the shape of one CTA a row; with "
                           "cluster=%d (given, or the dispatch table's) set cluster=1",
                      threads, forced);
        return TKP_EINVAL;
    }
    rej_gpu_plan_for(pb, threads ? 1 : forced, (int)threads, plan);
    plan->pb = *pb;
    plan->max_rounds = ((const struct rej_opts *)opts)->max_rounds;
    *workspace_bytes = plan->workspace;
    return TKP_OK;
}

/* rejection_gpu.h: one run, enqueued on `stream`. */
extern "C" int rej_gpu_run(const void *plan_in, const struct tkp_io *io, void *workspace,
                           void *stream, struct tkp_error *err)
{
    const struct rej_gpu_plan *plan = (const struct rej_gpu_plan *)plan_in;
    const struct tkp_problem *pb = &plan->pb;
    if (!io->samples || pb->batch <= 0)
        return TKP_OK;
    const Kernels kernels = kernels_for(pb->dtype);
    if (!kernels.cluster) {
        tkp_error_set(err, "rejection (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
    Params prm;
    prm.io = *io;
    prm.stats = (u64 *)workspace;
    prm.minp_force_count = tkp_minp_force_count(); /* min-p: the kernels fold it into k */
    prm.stride = pb->stride;
    prm.vocab = (int)pb->vocab;
    prm.draws = pb->draws;
    prm.max_rounds = plan->max_rounds;
    prm.groups = plan->groups;
    prm.slice = plan->slice;
    prm.list_cap = plan->list_cap;
    cudaStream_t s = (cudaStream_t)stream;
    if (plan->cluster > 1) {
        TKP_CUDA_TRY(tkp_launch_cluster(kernels.cluster, plan->cluster,
                                        dim3((unsigned)(pb->batch * plan->cluster),
                                             (unsigned)plan->groups),
                                        dim3(kClusterThreads), plan->smem, s, prm),
                     err);
    } else {
        const dim3 grid((unsigned)pb->batch, (unsigned)plan->groups);
        kernels.row(plan->threads, plan->list_cap > kGather)<<<grid, plan->threads, plan->smem,
                                                              s>>>(prm);
    }
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

/* rejection_gpu.h: the statistics of the last run. Every CTA rewrites its slot in each run, so
 * CUDA-graph replays need no reset. */
extern "C" int rej_gpu_stats(const void *plan_in, const void *workspace, void *stream,
                             struct tkp_stats *out)
{
    const struct rej_gpu_plan *plan = (const struct rej_gpu_plan *)plan_in;
    const size_t words = (size_t)plan->slots * kStatWords;
    u64 *host = (u64 *)malloc(sizeof(u64) * (words ? words : 1));
    if (!host)
        return TKP_ENOMEM;
    if (cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess ||
        cudaMemcpy(host, workspace, sizeof(u64) * words, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        free(host);
        return TKP_EDEVICE;
    }
    double rounds = 0, iterations = 0;
    int64_t fallbacks = 0;
    for (int64_t i = 0; i < plan->slots; i++) {
        rounds += (double)host[i * kStatWords];
        fallbacks += (int64_t)host[i * kStatWords + 1];
        iterations += (double)host[i * kStatWords + 2];
    }
    out->total[REJ_STAT_ROUNDS] = rounds;
    out->total[REJ_STAT_FALLBACKS] = (double)fallbacks;
    out->total[REJ_STAT_ITERATIONS] = iterations;
    out->reported = REJ_REPORTED;
    free(host);
    return TKP_OK;
}

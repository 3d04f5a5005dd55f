/* cake_gpu.cu — cake on sm_90a: one thread-block cluster (1, 2, 4, 8 or 16 CTAs of 512 threads)
 * per row, the 11/11/10-bit radix select of cake.c with the per-CTA histograms reduced through
 * distributed shared memory, the exact top-k slab gathered into rank 0's shared memory, then
 * (fused, in rank 0) the sort, top-p on exact uint64 prefix sums, the kept mask and the
 * inverse-CDF draws. Every decision is the CPU's (same counts, same arithmetic from prob.h /
 * philox.h), so slab, kept set and samples match cake.c bit for bit.
 *
 * Per CTA (slice [lo, hi) of the row, contiguous, in rank order):
 *  0. zero the CTA's slice of the kept mask, a step's share at a time inside pass 1 (the stores
 *     overlap the loads; rank 0 writes the ones after the last cluster barrier, so the
 *     barriers order the two);
 *  1. sample: the first step of pass 1 (already in registers) histograms the top digit of its
 *     first max(4096, 64 k_eff) values (at most the whole step); the bucket holding the
 *     k_eff-th largest sampled key is a lower bound T of the row's pivot bucket P (the k-th
 *     largest of a subset never exceeds the k-th largest of the row, k <= k_eff);
 *  2. pass 1 over the whole slice (the next step's loads in flight while one is processed),
 *     compared as floats against the value of T's smallest key (no order key, no shared
 *     memory for the ~99 % of keys below it): the count of invalid keys, and every key whose
 *     top digit is >= T counted in the top-digit histogram and appended to a shared-memory
 *     candidate list (capacity CK_CAP, one atomic per warp); after 1, 2, 4, 8, ... steps T is
 *     raised to the bucket of the k_eff-th largest key read so far (same argument);
 *  3. cluster barrier; every CTA sums the buckets >= its own T (exact from P up, since T <= P)
 *     and bucket 0 over the cluster, and walks them: k, P, and G = #keys with top digit >= P;
 *  4a. G <= CK_GATHER (the usual case): every CTA sends its keys with top digit >= P to rank 0,
 *     which sorts the G composites; the slab is the first k (the top k of the row);
 *  4b. otherwise passes 2 and 3 of cake.c on the candidate list (or, where it overflowed, on
 *     the slice streamed again), and the keys above the pivot plus this CTA's share of the
 *     pivot ties (the ties of lower ranks come first: index order) go to rank 0;
 *  5. rank 0: sort, min-p (the row's k with min-p folded in, from the sorted slab's weights:
 *     cake_gpu_finish.cuh, ck_minp_cut), top-p, kept mask, draws; or (topp_launch=chained)
 *     rank 0 leaves the gathered entries in the workspace and cake_topp_kernel, chained by
 *     programmatic dependent launch, does step 5 with the same code.
 * This file holds the kernels and the launcher; the device code is in the layers that
 * cake_gpu_types.cuh lists (README.md, "GPU source layout").
 *
 * cake_kernel is templated on the logits' element type E (algos/common/gpu_logits.cuh): bf16
 * and fp16 rows are read directly (16-byte vectors of eight) and converted exactly in
 * registers, so slab, kept set and samples are those of the float32 upcast bit for bit
 * (docs/SEMANTICS.md, "16-bit logits"); ck_kernel_for is the one place that picks the
 * instantiation. cake_topp_kernel reads only the gathered keys (and a min-p row that its slab
 * does not settle, with a runtime switch on the type) and is not templated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_minp.cuh"
#include "cake_gpu.h"
#include "cake_impl.h"
#include "cake_gpu_finish.cuh"
#include "cake_gpu_gather.cuh"
#include "cake_gpu_pass1.cuh"
#include "cake_gpu_types.cuh"

/* ---- the kernel ---- */

template <class E> __global__ void __launch_bounds__(CK_THREADS, 1) cake_kernel(const ck_args a)
{
    tkp_allow_dependents(); /* cake_topp_kernel (chained) may launch; it waits for this one */
    extern __shared__ __align__(16) unsigned char ck_raw[];
    ck_smem *sm = reinterpret_cast<ck_smem *>(ck_raw);
    cg::cluster_group cluster = cg::this_cluster();
    const uint32_t C = cluster.num_blocks(), rank = cluster.block_rank();
    const int64_t r = (int64_t)(blockIdx.x / C);
    const uint32_t V = (uint32_t)a.vocab;
    const uint32_t lo = min(V, rank * a.slice), hi = min(V, lo + a.slice);
    const void *__restrict__ row = tkp_row_ptr<E>(a.io.logits, a.stride, r);
    const int32_t kin = a.io.k[r];
    uint32_t keff = tkp_topk_on(kin, a.vocab) ? (uint32_t)kin : V;
    if (keff > CK_SLAB) /* refused by supports(); clamped so that nothing overflows */
        keff = CK_SLAB;
    ck_init_smem(sm);
    if (rank == 0 && threadIdx.x == 0) /* step 5's inputs, landing while pass 1 streams */
        ck_row_in_fetch(a, r, kin, &sm->in);

    /* 1-2. pass 1 (its first step gives the sampled bound T, tightened as it goes): the
     * top-digit histogram of the slice, exact on the buckets >= T (the only ones the bucket
     * walk can stop in: every CTA's T is at most the row's pivot bucket, so the cluster sums
     * are exact from the pivot bucket up) and on bucket 0 (the invalid keys), and every key
     * whose top digit is >= T in the candidate list; the slice's kept mask zeroed on the way. */
    const uint32_t low_digit =
        ck_pass1<E>(row, lo, hi, keff, sm->hist[0], sm,
                    a.io.kept ? a.io.kept + r * (int64_t)V : nullptr);

    /* 3. The first digit on the cluster-wide counts: k, P and G, the same in every CTA. */
    const ck_first f = ck_first_digit(cluster, sm, low_digit, C, V, keff);
    /* T <= P always holds (see the sample); the test only guards the candidate list. */
    const bool use_cand = sm->cand_n <= CK_CAP && low_digit <= f.pivot;

    if (f.k > 0 && f.gathered <= CK_GATHER) {
        ck_push_top_digit<E>(sm, use_cand, row, lo, hi, f.pivot); /* 4a */
    } else if (f.k > 0) { /* 4b */
        const ck_pivot pv =
            ck_select_digits<E>(cluster, sm, use_cand, row, lo, hi, f.k, C, rank);
        ck_collect<E>(sm, use_cand, row, lo, hi, pv);
    }
    if (f.k > 0) /* this CTA's entries into rank 0's slab array */
        ck_send_to_rank0(cluster, sm);
    /* Rank 0's slab is complete, every kept-mask zero is written, and no CTA reads another's
     * shared memory after this point (so the others may exit); rank 0's copies of its row's
     * inputs have landed (the barrier shows them to every thread). */
    if (rank == 0 && threadIdx.x == 0)
        tkp_copy_async_wait_all();
    cluster.sync();
    if (rank != 0)
        return;
    ck_finish_rank0(a, r, sm, f.k); /* 5. */
}

/* The chained launch (option topp_launch=chained): after cake_kernel, one CTA of CK_THREADS
 * per row does rank 0's step 5 (sort, top-p, mask, draws) on the m gathered entries that rank
 * 0 left in the workspace. Measured slower than the fused launch at every k (README "GPU"). */
__global__ void __launch_bounds__(CK_THREADS, 1) cake_topp_kernel(const ck_args a)
{
    __shared__ u64 slab[CK_GATHER], incl[CK_GATHER], wsum[CK_WARPS];
    __shared__ uint32_t cnt;
    const int64_t r = blockIdx.x;
    const uint32_t t = threadIdx.x;
    tkp_wait_prerequisite();
    const uint2 mn = a.ws_count[r];
    if (mn.y == 0) {
        ck_no_draws<CK_THREADS>(a, r);
        return;
    }
    if (t == 0)
        cnt = 0;
    const uint32_t size = ck_sort_size(mn.x);
    const u64 *src = a.ws_slab + r * CK_GATHER;
    for (uint32_t i = t; i < max(size, 128u); i += CK_THREADS)
        slab[i] = i < mn.x ? src[i] : 0; /* 0: below every composite */
    ck_sort_desc(slab, size);
    const ck_row_in in = ck_row_in_load(a, r);
    ck_finish<CK_THREADS>(a, r, in, slab, mn.y, incl, wsum, &cnt);
}

/* ---- host side ---- */

/* cake_kernel for logits of `dtype` (every instantiation has this signature); null for a
 * value outside the enum. */
typedef void (*ck_kernel_t)(const ck_args);
static ck_kernel_t ck_kernel_for(enum tkp_dtype dtype)
{
    ck_kernel_t k = nullptr;
    tkp_with_dtype(dtype, [&](auto e) { k = cake_kernel<decltype(e)>; });
    return k;
}

static size_t ck_smem_bytes(void) { return sizeof(ck_smem); }

/* Tokens per CTA when a row of `vocab` is split over c CTAs (a multiple of 16). */
static int64_t ck_slice_of(int64_t vocab, int c) { return tkp_slice_of(vocab, c, 16); }

static int ck_cluster_index(int c)
{
    return c == 1 ? 0 : c == 2 ? 1 : c == 4 ? 2 : c == 8 ? 3 : 4;
}

/* Measured capacity: co-resident clusters of each size of `kernel` on this device
 * (plan->max_clusters), after raising its shared-memory limit; an error when none fits. */
static int ck_measure_clusters(ck_kernel_t kernel, struct cake_gpu_plan *plan,
                               struct tkp_error *err)
{
    plan->smem_bytes = ck_smem_bytes();
    TKP_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)plan->smem_bytes),
                 err);
    /* Clusters of 16 CTAs are non-portable (H100 / H200 allow them); without the attribute
     * the capacity query below reports 0 for 16 and the plan never picks it. */
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
        cudaSuccess)
        (void)cudaGetLastError();
    for (int c = 1; c <= CK_MAXC; c <<= 1) {
        int n = tkp_active_clusters(kernel, c, CK_THREADS, plan->smem_bytes);
        if (c == 1 && n < 1) { /* no cluster query: count plain co-resident CTAs */
            int per_sm = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, CK_THREADS,
                                                              plan->smem_bytes) == cudaSuccess)
                n = per_sm * plan->sm_count;
            else
                (void)cudaGetLastError();
        }
        plan->max_clusters[ck_cluster_index(c)] = n;
    }
    if (plan->max_clusters[0] < 1) {
        tkp_error_set(err, "cake: the kernel (%zu bytes of shared memory per CTA) cannot run "
                           "on this device", plan->smem_bytes);
        return TKP_EUNSUPPORTED;
    }
    return TKP_OK;
}

/* Cost model (measured on the H200, README "Cluster choice"). A size c is allowed when the
 * whole batch runs in one wave of c-CTA clusters, every CTA gets at least CK_MIN_SLICE tokens,
 * and, for c >= 4, the batch takes at most half the SMs (bigger clusters filling the device
 * lost to smaller ones at every measured shape). Among the allowed sizes (1 always is): the
 * smallest whose slice fits one step of pass 1 (CK_STEP tokens, read once into registers: more
 * CTAs only add cluster barriers and DSMEM sums), else the largest (the slice streams; more
 * CTAs share the row). */
static int ck_choose_cluster(const struct cake_gpu_plan *plan, int64_t batch, int64_t vocab)
{
    int allowed[5] = { 1, 0, 0, 0, 0 };
    for (int c = 2; c <= CK_MAXC; c <<= 1)
        allowed[ck_cluster_index(c)] =
            plan->max_clusters[ck_cluster_index(c)] >= batch &&
            vocab >= (int64_t)c * (c > 8 ? CK_MIN_SLICE16 : CK_MIN_SLICE) &&
            tkp_cluster_leaves_half(c, batch, plan->sm_count);
    for (int c = 1; c <= CK_MAXC; c <<= 1)
        if (allowed[ck_cluster_index(c)] && ck_slice_of(vocab, c) <= CK_STEP)
            return c;
    for (int c = CK_MAXC; c >= 1; c >>= 1)
        if (allowed[ck_cluster_index(c)])
            return c;
    return 1;
}

/* cake_gpu.h: the plan of one problem with options of struct cake_opts. */
extern "C" int cake_gpu_plan(const struct tkp_problem *pb, const void *opts, void *plan_out,
                             size_t *workspace_bytes, struct tkp_error *err)
{
    struct cake_gpu_plan *plan = (struct cake_gpu_plan *)plan_out;
    memset(plan, 0, sizeof *plan);
    plan->pb = *pb;
    const int64_t batch = pb->batch, vocab = pb->vocab;
    const int topp_launch = opts ? ((const struct cake_opts *)opts)->topp_launch : 0;
    const ck_kernel_t kernel = ck_kernel_for(pb->dtype);
    if (!kernel) {
        tkp_error_set(err, "cake (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
    int dev = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&plan->sm_count, cudaDevAttrMultiProcessorCount, dev),
                 err);
    int major = 0;
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), err);
    if (major < 9) {
        tkp_error_set(err, "cake: the GPU version needs thread-block clusters (sm_90 or newer)");
        return TKP_EUNSUPPORTED;
    }
    int rc = ck_measure_clusters(kernel, plan, err);
    if (rc != TKP_OK)
        return rc;
    plan->cluster = ck_choose_cluster(plan, batch, vocab);
    /* The option cluster=1|2|4|8|16, else TKP_CAKE_CLUSTER (experiments, tests), forces a size
     * when the device holds at least one such cluster; another env value is refused. */
    int forced = 0;
    rc = tkp_forced_cluster(opts ? ((const struct cake_opts *)opts)->cluster : 0,
                            "TKP_CAKE_CLUSTER", &forced, err);
    if (rc != TKP_OK)
        return rc;
    if (forced && plan->max_clusters[ck_cluster_index(forced)] >= 1)
        plan->cluster = forced;
    plan->slice = (uint32_t)ck_slice_of(vocab, plan->cluster);
    /* Top-p launch: fused unless asked (measured on the H200 at k = 50, 256 and 1000: the
     * chained launch is slower everywhere; README "GPU") */
    plan->chained = topp_launch == CAKE_TOPP_CHAINED;
    /* the chained launch's slab and counts (min-p needs none: step 5 folds it in) */
    plan->workspace_bytes =
        plan->chained ? (size_t)batch * (CK_GATHER * sizeof(u64) + sizeof(uint2)) : 0;
    *workspace_bytes = plan->workspace_bytes;
    if (plan->chained) {
        /* the sort's shared memory is static; this only checks that the kernel loads */
        cudaFuncAttributes fa;
        TKP_CUDA_TRY(cudaFuncGetAttributes(&fa, cake_topp_kernel), err);
    }
    return TKP_OK;
}

/* cake_gpu.h: one run, enqueued on `stream`. */
extern "C" int cake_gpu_run(const void *plan_in, const struct tkp_io *io, void *workspace,
                            void *stream, struct tkp_error *err)
{
    const struct cake_gpu_plan *plan = (const struct cake_gpu_plan *)plan_in;
    const int64_t batch = plan->pb.batch;
    if (batch == 0)
        return TKP_OK;
    ck_args a;
    const ck_kernel_t kernel = ck_kernel_for(plan->pb.dtype);
    if (!kernel) {
        tkp_error_set(err, "cake (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)plan->pb.dtype);
        return TKP_EINVAL;
    }
    a.io = *io;
    a.vocab = plan->pb.vocab;
    a.stride = plan->pb.stride;
    a.draws = io->samples ? plan->pb.draws : 0;
    a.slice = plan->slice;
    a.mode = (plan->chained ? CK_CHAINED : 0u) | (tkp_minp_force_count() ? CK_MINP_FORCE : 0u) |
             (uint32_t)plan->pb.dtype << CK_DTYPE_SHIFT;
    a.ws_slab = plan->chained ? (u64 *)workspace : nullptr;
    a.ws_count = plan->chained
                     ? (uint2 *)((char *)workspace + (size_t)batch * CK_GATHER * sizeof(u64))
                     : nullptr;

    TKP_CUDA_TRY(tkp_launch_cluster(kernel, (int)plan->cluster,
                                    dim3((unsigned)(batch * plan->cluster)), dim3(CK_THREADS),
                                    plan->smem_bytes, (cudaStream_t)stream, a),
                 err);
    TKP_LAUNCH_CHECK(err);
    if (plan->chained)
        TKP_CUDA_TRY(tkp_launch_dependent(cake_topp_kernel, dim3((unsigned)batch),
                                          dim3(CK_THREADS), 0, (cudaStream_t)stream, a),
                     err);
    return TKP_OK;
}

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
 * This file holds the launcher; the kernels are in cake_gpu_kernels.cuh (one copy a variant:
 * README.md, "Two CTAs a SM") and the device code in the layers that cake_gpu_types.cuh lists
 * (README.md, "GPU source layout").
 *
 * cake_kernel is templated on the logits' element type E (algos/common/gpu_logits.cuh): bf16
 * and fp16 rows are read directly (16-byte vectors of eight) and converted exactly in
 * registers, so slab, kept set and samples are those of the float32 upcast bit for bit
 * (docs/SEMANTICS.md, "16-bit logits"); kernel_for (cake_gpu_kernels.cuh) is the one place
 * that picks the instantiation. cake_topp_kernel reads only the gathered keys (and a min-p row that its slab
 * does not settle, with a runtime switch on the type) and is not templated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cuda_util.h"
#include "cake_gpu.h"
#include "cake_impl.h"
#define CK_NS ck512 /* the default variant's kernels (cake_gpu_kernels.cuh) */
#include "cake_gpu_kernels.cuh"

/* ---- host side ---- */

/* The other variant's kernels, compiled in cake_gpu_256.cu. */
namespace ck256 {
ck_kernel_t kernel_for(enum tkp_dtype dtype);
size_t smem_bytes(void);
}

/* A variant: its threads per CTA, its cake_kernel of a type and its shared memory per CTA. */
struct ck_variant {
    int threads;
    ck_kernel_t (*kernel_for)(enum tkp_dtype);
    size_t (*smem_bytes)(void);
};
static const struct ck_variant ck_variants[] = {
    { CK_THREADS, ck512::kernel_for, ck512::smem_bytes },
    { 256, ck256::kernel_for, ck256::smem_bytes },
};

/* The variant of `threads` per CTA; null for another number. */
static const struct ck_variant *ck_variant_of(int threads)
{
    for (size_t i = 0; i < sizeof ck_variants / sizeof ck_variants[0]; i++)
        if (ck_variants[i].threads == threads)
            return &ck_variants[i];
    return nullptr;
}

/* The largest top-k set the 256-thread variant is taken for under threads=auto: measured
 * faster up to k = 256, 1.35-1.58x slower at k = 512 and more at 1000, as its 4096-entry
 * candidate list's overflow path (the slice read again) predicts (README "Two CTAs a SM"). */
#define CK256_SET_MAX 256

/* Threads per CTA: the option threads=512|256 when given, else TKP_CAKE_THREADS (the tests of a
 * variant on every cell), else auto: 256 once the batch has more rows than the device has SMs
 * and every row's set is at most CK256_SET_MAX (two CTAs a SM, a row each: measured on the
 * H100, README "Two CTAs a SM"), else 512. */
static int ck_threads_of(const struct cake_opts *opts, const struct tkp_problem *pb,
                         int sm_count, struct tkp_error *err)
{
    const int chosen = cake_threads_chosen(opts);
    if (chosen > 0)
        return chosen;
    long t = pb->batch > sm_count && pb->set_max <= CK256_SET_MAX ? 256 : CK_THREADS;
    const char *v;
    if (tkp_env_long("TKP_CAKE_THREADS", 1, 1024, &t, &v) < 0 || !ck_variant_of((int)t)) {
        tkp_error_set(err, "cake (gpu): TKP_CAKE_THREADS=%s: the variants have 512 or 256 "
                           "threads per CTA", v);
        return -1;
    }
    return (int)t;
}

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
    plan->smem_bytes = ck_variant_of(plan->threads)->smem_bytes();
    TKP_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)plan->smem_bytes),
                 err);
    /* Clusters of 16 CTAs are non-portable (H100 / H200 allow them); without the attribute
     * the capacity query below reports 0 for 16 and the plan never picks it. */
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
        cudaSuccess)
        (void)cudaGetLastError();
    for (int c = 1; c <= CK_MAXC; c <<= 1) {
        int n = tkp_active_clusters(kernel, c, plan->threads, plan->smem_bytes);
        if (c == 1 && n < 1) { /* no cluster query: count plain co-resident CTAs */
            int per_sm = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, plan->threads,
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
        if (allowed[ck_cluster_index(c)] &&
            ck_slice_of(vocab, c) <= (int64_t)CK_STEP_OF(plan->threads))
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
    int dev = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&plan->sm_count, cudaDevAttrMultiProcessorCount, dev),
                 err);
    plan->threads = ck_threads_of((const struct cake_opts *)opts, pb, plan->sm_count, err);
    if (plan->threads < 0)
        return TKP_EINVAL;
    const ck_kernel_t kernel = ck_variant_of(plan->threads)->kernel_for(pb->dtype);
    if (!kernel) {
        tkp_error_set(err, "cake (gpu): logits element type %d is not f32, bf16 or f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
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
        TKP_CUDA_TRY(cudaFuncGetAttributes(&fa, ck512::cake_topp_kernel), err);
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
    const ck_kernel_t kernel = ck_variant_of(plan->threads)->kernel_for(plan->pb.dtype);
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
                                    dim3((unsigned)(batch * plan->cluster)),
                                    dim3((unsigned)plan->threads),
                                    plan->smem_bytes, (cudaStream_t)stream, a),
                 err);
    TKP_LAUNCH_CHECK(err);
    if (plan->chained)
        TKP_CUDA_TRY(tkp_launch_dependent(ck512::cake_topp_kernel, dim3((unsigned)batch),
                                          dim3(CK_THREADS), 0, (cudaStream_t)stream, a),
                     err);
    return TKP_OK;
}

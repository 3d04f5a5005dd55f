/* cake_gpu_kernels.cuh — cake's two kernels (cake_kernel, cake_topp_kernel) and the host's
 * handle on them, in namespace CK_NS for CTAs of CK_THREADS threads: cake_gpu.cu includes it
 * for the default variant (ck512: 512 threads, one CTA a SM) and cake_gpu_256.cu for ck256 (256
 * threads and a quarter of the candidate list, two CTAs a SM: README.md, "Two CTAs a SM"). The
 * device code is in the layers cake_gpu_types.cuh lists; the launcher in cake_gpu.cu. */
#ifndef TKP_CAKE_GPU_KERNELS_CUH
#define TKP_CAKE_GPU_KERNELS_CUH

#include "../common/gpu_async.cuh"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_minp.cuh"
#include "cake_gpu_finish.cuh"
#include "cake_gpu_gather.cuh"
#include "cake_gpu_pass1.cuh"
#include "cake_gpu_types.cuh"

/* cake_kernel of one element type (every instantiation has this signature). */
typedef void (*ck_kernel_t)(const ck_args);

namespace CK_NS {

template <class E>
__global__ void __launch_bounds__(CK_THREADS, CK_MIN_BLOCKS) cake_kernel(const ck_args a)
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

/* cake_kernel for logits of `dtype`; null for a value outside the enum. */
ck_kernel_t kernel_for(enum tkp_dtype dtype)
{
    ck_kernel_t k = nullptr;
    tkp_with_dtype(dtype, [&](auto e) { k = cake_kernel<decltype(e)>; });
    return k;
}

/* The dynamic shared memory of a CTA. */
size_t smem_bytes(void) { return sizeof(ck_smem); }

} // namespace CK_NS

#endif

/* cake_gpu_bucket.cuh — cake's cluster-wide decisions on a histogram: the sum of the CTAs'
 * histograms through distributed shared memory (ck_reduce), the bucket walk of the radix select
 * (ck_find_bucket). The block-wide exclusive scan is algos/common/gpu_block.cuh's. */
#ifndef TKP_CAKE_GPU_BUCKET_CUH
#define TKP_CAKE_GPU_BUCKET_CUH

#include "../common/gpu_warp.cuh"
#include "cake_gpu_types.cuh"


/* sm->tot[b] = the cluster's sum of h[b] for b = 0 and every b in [from, nb); 0 for the other
 * b. For each bucket all C remote loads are in flight together. */
__device__ __forceinline__ void ck_reduce(cg::cluster_group &cluster, uint32_t *h, uint32_t from,
                                          uint32_t nb, uint32_t C, ck_smem *sm)
{
    for (uint32_t b = threadIdx.x; b < nb; b += CK_THREADS) {
        uint32_t s = 0;
        if (b == 0 || b >= from) {
#pragma unroll
            for (uint32_t q = 0; q < CK_MAXC; q++)
                if (q < C)
                    s += cluster.map_shared_rank(h, q)[b];
        }
        sm->tot[b] = s;
    }
}

/* Inclusive suffix sum of v over the lanes (lane l gets the sum over lanes l..31), by
 * shuffles down. Kept here: gpu_warp.cuh scans in lane order only (tkp_warp_incl_scan), and a
 * suffix built from it (tkp_warp_sum(v) - tkp_warp_incl_scan(v) + v) is the same integers
 * for 5 more shuffles on every bucket walk. */
__device__ __forceinline__ uint32_t ck_warp_incl_suffix(uint32_t v)
{
    const uint32_t lane = tkp_lane();
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_down_sync(kTkpFullWarp, v, d);
        if (lane + d < 32)
            v += y;
    }
    return v;
}

/* The bucket walk of cake_radix_select over h[0, nb): the bucket b with
 * above(b) < take <= above(b) + h[b], above(b) = sum of h over the buckets above b. Writes
 * sm->bucket (0xFFFFFFFF when the histogram holds fewer than `take` keys) and sm->above.
 * Called by every thread of the CTA; the result is visible to all on return. */
static __device__ void ck_find_bucket(const uint32_t *h, uint32_t nb, uint32_t take, ck_smem *sm)
{
    const uint32_t t = threadIdx.x, lane = tkp_lane(), warp = t >> 5;
    const uint32_t bpt = nb / CK_THREADS; /* consecutive buckets per thread (512: 4 or 2) */
    if (t == 0)
        sm->bucket = 0xFFFFFFFFu;
    uint32_t s = 0;
    for (uint32_t j = 0; j < bpt; j++)
        s += h[t * bpt + j];
    const uint32_t x = ck_warp_incl_suffix(s);
    if (lane == 0)
        sm->wsum[warp] = x;
    __syncthreads();
    uint32_t above = x - s;
    for (uint32_t w = warp + 1; w < CK_WARPS; w++)
        above += (uint32_t)sm->wsum[w];
    for (int j = (int)bpt - 1; j >= 0; j--) {
        const uint32_t b = t * bpt + (uint32_t)j, hb = h[b];
        if (above < take && take <= above + hb) {
            sm->bucket = b;
            sm->above = above;
        }
        above += hb;
    }
    __syncthreads();
}

#endif

/* cake_gpu_types.cuh — what every layer of cake's CUDA code shares: the launch constants, the
 * CTA's shared memory (ck_smem) and the kernel arguments (ck_args). The layers, each a header
 * that compiles alone: cake_gpu_bucket.cuh (cluster histogram sums, the bucket walk, the block
 * scan), cake_gpu_pass1.cuh (the streaming first pass and its histogram), cake_gpu_gather.cuh
 * (the radix passes on the candidates and the gathering into rank 0), cake_gpu_sort.cuh (the
 * bitonic sort), cake_gpu_finish.cuh (top-p, the mass tail, the kept mask and the draws);
 * cake_gpu_kernels.cuh holds the kernels (per variant), cake_gpu.cu the launcher. The warp
 * primitives come from algos/common/gpu_warp.cuh, except the warp sums and maxima of 32-bit
 * values, which stay on the hardware __reduce_add_sync / __reduce_max_sync (one instruction;
 * tkp_warp_sum and tkp_warp_max are 5-round shuffle butterflies giving the same integers), and
 * the two scans whose comments say why (ck_warp_incl_suffix, ck_finish_warp's). */
#ifndef TKP_CAKE_GPU_TYPES_CUH
#define TKP_CAKE_GPU_TYPES_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../tkp.h"

namespace cg = cooperative_groups;

#ifndef CK_THREADS /* cake_gpu_256.cu's variant sets these three (README "Two CTAs a SM") */
#define CK_THREADS 512
#define CK_CAP 16384      /* candidate list entries per CTA */
#define CK_MIN_BLOCKS 1   /* CTAs a SM that __launch_bounds__ asks registers for */
#endif
#define CK_WARPS (CK_THREADS / 32)
#define CK_BUCKETS 2048
#define CK_SLAB 1024
#define CK_GATHER 2048    /* entries rank 0 gathers and sorts (ck_sort_desc) */
#define CK_SAMPLE_PER_K 64 /* sampled keys per CTA: 4N * clamp(ceil(64 k / 4N), 2, 4), N threads */
#define CK_SAMPLE_MAX 4    /* (8192 keys at most: measured a little faster than 16384) */
#define CK_MIN_SLICE 2048 /* a cluster is not split finer than this many tokens per CTA */
#define CK_MIN_SLICE16 4096 /* ... and a 16-CTA (non-portable) cluster not finer than this */
#define CK_MAXC 16        /* largest cluster (16 needs the non-portable cluster size) */
#define CK_UNROLL 8       /* 16-byte loads in flight per thread in ck_stream and pass 1 */
/* float32 tokens of a step of pass 1 for CTAs of `threads` (512: 16384) */
#define CK_STEP_OF(threads) (CK_UNROLL * 4 * (threads))
#define CK_STEP CK_STEP_OF(CK_THREADS)

/* What the code that spreads entries and buckets over the threads assumes of a variant. */
static_assert(CK_THREADS % 32 == 0 && 4 * CK_THREADS >= 128, "whole warps, a warp's sort chunk");
static_assert(CK_BUCKETS % CK_THREADS == 0 && 1024 % CK_THREADS == 0, "buckets a thread");
static_assert(CK_SLAB % CK_THREADS == 0, "slab entries a thread (ck_finish)");
                    /* (a 16-bit step is twice that: 16-byte vectors of 8 values) */

typedef unsigned long long u64;

/* The row's inputs that step 5 reads (its k, p, min_p and draw key): cake_kernel copies them
 * into shared memory at its start, so that the tail reads no global memory on its critical
 * path (ck_row_in_fetch); cake_topp_kernel loads them itself. */
struct ck_row_in {
    u64 seed, offset; /* chosen: the row's own (per-row keying) or the batch's */
    float p, min_p;   /* min_p 0 when off */
    int32_t k;
    int32_t per_row;  /* per-row keying (either key array given) */
};

struct ck_smem {
    uint32_t hist[2][CK_BUCKETS]; /* per-pass local histograms, read by the other CTAs */
    uint32_t tot[CK_BUCKETS];     /* the cluster-wide histogram of the current pass */
    u64 mine[CK_GATHER];          /* this CTA's entries for rank 0; rank 0 reuses it for incl */
    u64 slab[CK_GATHER];          /* rank 0: the gathered entries (the slab after the sort) */
    uint32_t cand_key[CK_CAP], cand_idx[CK_CAP];
    u64 wsum[CK_WARPS];
    ck_row_in in;
    uint32_t cand_n, mine_n, slab_n, slab_off, cnt;
    uint32_t bucket, above, tie_before, tie_mine;
    uint32_t heavy_n, heavy_low; /* rank 0's mass tail: its candidates, their lowest bucket + 1 */
};

/* ck_args.mode: one word (two more fields in ck_args cost the 16-bit kernels a spill) */
#define CK_CHAINED 1u     /* cake_topp_kernel does step 5 from ws_slab / ws_count */
#define CK_MINP_FORCE 2u  /* TKP_MINP_FORCE_COUNT: min-p's count over the row on every min-p row */
#define CK_DTYPE_SHIFT 8  /* the logits' enum tkp_dtype (min-p's count over a row reads them) */

struct ck_args {
    struct tkp_io io; /* the run's (algos/tkp.h): logits of cake_kernel's element type E
                       * (algos/common/gpu_logits.cuh); kept and samples may be NULL */
    int64_t vocab, stride;
    int32_t draws;
    uint32_t slice;
    uint32_t mode;   /* CK_CHAINED | CK_MINP_FORCE | the logits' tkp_dtype << CK_DTYPE_SHIFT */
    u64 *ws_slab;    /* chained: CK_GATHER gathered entries per row (unsorted) */
    uint2 *ws_count; /* chained: (m gathered, n slab entries) per row */
};

#endif

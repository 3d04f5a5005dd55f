/* rejection_gpu_types.cuh — what every layer of the CUDA rejection sampler (rejection_gpu.cu)
 * shares: the sizes of its shared-memory structures, the kernel parameters (Params), a CTA's
 * shared memory (Shared<THREADS>) and what a CTA of a cluster publishes to the others
 * (ClusterShared). README.md ("GPU source layout") lists the layers. */
#ifndef REJECTION_GPU_TYPES_CUH
#define REJECTION_GPU_TYPES_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/mass_floor.h"
#include "../tkp.h"
#include "rejection_rules.h"

namespace rej_gpu {

constexpr int kReduceUnroll = 4; /* tiles in flight per thread in the counting passes */
/* Pass 1's first chunk, whose k-th key bounds the list (pass1_scan): a whole number of steps
 * of every kernel (kReduceUnroll tiles of 4 x threads tokens). */
constexpr int kFirstChunk = kReduceUnroll * 4 * 1024;
constexpr int kStatWords = 3;    /* per CTA: rounds, fallbacks, iterations */
/* Top-k-then-top-p: the first pass histograms the top kBucketBits bits of the order keys; the
 * second gathers every token of the bucket holding the k-th key and above (at most kGather)
 * into shared memory; when the first candidate set (keys >= the k-th) has at most kSmall
 * tokens, it is kept there in index order and every round runs on it. */
constexpr int kBucketBits = 11;
constexpr int kBuckets = 1 << kBucketBits;
constexpr int kBucketShift = 32 - kBucketBits;
constexpr int kGather = 2048;
constexpr int kSmall = 1024;
/* At most this many gathered tokens: the k-th key and the first set's index order by counting
 * (each token against the others, one pass), more: by the radix select and a sort, whose
 * digit passes and stages cost a barrier or several each (README.md, "Counting below 256
 * gathered tokens": ~50-100 gathered tokens at k = 50, 375-3000 from k = 300 on peers_s1). */
constexpr int kCountedGather = 256;
/* Pass 1's big list (one CTA per row, a row whose k may crowd its bucket: rej_list_cap in
 * rejection.c): the tokens at or above pass 1's bound, list_cap of them, keys then indices, in
 * the dynamic shared memory of the one-CTA kernels; the k-th key is then selected from it
 * (README.md, "The k-th key from pass 1's list"). Declared once; every extern shared array
 * starts at the dynamic shared memory's base. */
extern __shared__ __align__(16) uint32_t rej_big_list[];
/* The cluster variant: 1024 threads per CTA, at most 16 CTAs (16 is non-portable), a slice of
 * at most kSliceCap tokens per CTA (8 bytes each in shared memory: the logit and its cached
 * weight), at least kMinSlice tokens per CTA unless forced (TKP_REJ_CLUSTER). */
constexpr int kClusterThreads = 1024;
constexpr int kMaxCluster = 16;
constexpr int kSliceCap = 18432;
constexpr int kMinSlice = 2048;

typedef unsigned long long u64;

/* Count and fixed-point mass of the valid tokens before a pivot (rej_tally2). */
typedef struct rej_tally Tally;

struct Params {
    struct tkp_io io; /* the run's (algos/tkp.h): logits of the kernel's type E (gpu_logits.cuh),
                       * k, p, min_p (NULL: off; folded into k by the kernel, prepare_row),
                       * samples, seed, offset, row_seed, row_offset (kept unused) */
    u64 *stats; /* [batch * groups * cluster * kStatWords] */
    int64_t stride;
    int vocab, draws, max_rounds, groups;
    int slice; /* cluster variant: tokens per CTA (a multiple of 4) */
    int list_cap; /* pass 1's list: rej_big_list's room (> kGather), else kGather (sh.g_key) */
    bool minp_force_count; /* every min-p row counts over the whole row (tkp_minp_force_count) */
};

template <int THREADS> struct Shared {
    /* 256 at least: fold_buckets_to_first_digit and the radix histogram's clear give one of
     * 256 entries to each of the first 256 threads; the per-thread loops divide evenly */
    static_assert(THREADS >= 256 && kSmall % THREADS == 0 && kGather % THREADS == 0 &&
                      kBuckets % THREADS == 0,
                  "rejection's CTAs have 256, 512 or 1024 threads");
    static constexpr int kWarps = THREADS / 32;
    u64 red[3][kWarps];  /* block reductions */
    u64 scan[2][kWarps]; /* warp totals of the inverse-CDF scan, double-buffered per tile */
    unsigned hist[kBuckets]; /* bucket histogram (pass 1); radix-select histogram (first 256) */
    uint32_t g_key[kGather]; /* gathered tokens of the k-th key's bucket and above */
    uint32_t g_idx[kGather];
    u64 mass_hist[TKP_MASS_BINS]; /* top-p alone: this CTA's mass per bin of the mass floor */
    uint64_t mass_all[TKP_MASS_BINS]; /* ... and the row's */
    u64 s_pos[kSmall];       /* the first candidate set in index order: positions */
    u64 s_w[kSmall];         /* and fixed-point weights */
    int nsmall;              /* its size when kept in shared memory, else 0 */
    int list_cap; /* pass 1's list: rej_big_list's room (> kGather), else kGather (g_key) */
    unsigned gcount, gabove, kth;
    u64 cand_pos;        /* the inverse-CDF pass: position and index of the candidate */
    int cand;
    unsigned digit, rank, ties; /* radix select: the chosen digit, the rank left in it */
    u64 level_mass;             /* radix select: mass of the last digit's bins above it */
    /* The row, once prepared (kept in shared memory to spare registers in the passes). */
    int64_t k_limit;
    uint64_t target, top, start, start_mass;
    uint64_t key_seed, key_offset; /* the row's draw key, copied while it is prepared */
    u64 stat[kStatWords]; /* this CTA's rounds, fallbacks, iterations (thread 0 counts) */
};

/* What a CTA of a cluster publishes to the others (read through distributed shared memory). */
struct ClusterShared {
    unsigned hist_part[kBuckets]; /* this CTA's share of the cluster-wide histogram */
    unsigned hist_all[kBuckets];  /* the cluster-wide histogram */
    uint32_t st_key[kGather];     /* the tokens this CTA gathered */
    uint32_t st_idx[kGather];
    unsigned st_count;
    u64 xchg[2][3]; /* block sums, double-buffered: a buffer is rewritten two exchanges later,
                     * after a cluster barrier every reader passes only once done reading it */
};

/* The cluster variant's dynamic shared memory: Shared, ClusterShared, then the slice's logits
 * and cached weights (slice floats each). The logits are kept as float32 whatever the input
 * type (converted exactly as the slice is loaded), so every pass over the slice is the same
 * code and the size does not depend on the dtype. */
struct ClusterSmem {
    Shared<kClusterThreads> sh;
    ClusterShared cx;
};
constexpr size_t kClusterFixed = (sizeof(ClusterSmem) + 15) & ~(size_t)15;

inline size_t cluster_smem_bytes(int slice) { return kClusterFixed + 8 * (size_t)slice; }

} // namespace rej_gpu

#endif

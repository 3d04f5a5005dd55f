/* qrita_gpu_types.cuh — what every layer of qrita's CUDA code shares (README.md, "GPU source
 * layout"): the launch constants, the per-row record the kernels hand each other (qr_row), one
 * CTA's partial of a top-p-alone row (qr_part), the kernels' argument block (qr_args) and the
 * accessors of a row's candidate buffers, and the reads of a logits row of element type E.
 * Host-only constants stay in qrita_gpu.cu. */
#ifndef QRITA_GPU_TYPES_CUH
#define QRITA_GPU_TYPES_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "../common/gpu_logits.cuh"
#include "qrita_gpu.h"

typedef unsigned long long u64;

/* Element i of a logits row x of element type E as a float (exact: docs/SEMANTICS.md, "16-bit
 * logits"), by a plain load: for float32 the load the kernels made before they took 16-bit
 * rows (tkp_load1's __ldg makes qr_scan<true>, at its 40-register bound, spill). */
template <class E> __device__ __forceinline__ float qr_elem(const void *x, int64_t i)
{
    return E::to_f32(static_cast<const typename E::storage *>(x)[i]);
}

/* The four-element vector of E (gpu_logits.cuh: a float4, or a uint2 of four 16-bit values). */
template <class E> struct qr_vec4 {
    typedef uint2 type;
};
template <> struct qr_vec4<TkpF32> {
    typedef float4 type;
};

/* Vector j of a vector-aligned run of the row (`body`), indexed in vectors as the float32 code
 * was (the same address arithmetic), converted by tkp_load4. */
template <class E> __device__ __forceinline__ float4 qr_load_vec(const void *body, int64_t j)
{
    return tkp_load4<E>(reinterpret_cast<const typename qr_vec4<E>::type *>(body) + j, 0);
}

#define NT 256 /* threads of the streaming kernels */
#define FULL 0xffffffffu
#define CAP_WARP 1024   /* shared-memory candidates per half, warp-per-row search */
#define CAP_BLOCK 16384 /* shared-memory candidates per half, block-per-row search */
#define BLOCK_G 512     /* threads of the block-per-row search */
#define HEAVY_N 4096    /* warp-per-row search: rows with more candidates go to a block
                         * (qr_args.heavy_n: this, or less: option heavy_n) */
#define WARM_N 8        /* keys of the warm-up row of the block-per-row search */
#define WIN_BINS 16 /* the window of a top-p-alone row: its keys of mass bin < WIN_BINS */
#define WIN_CTA 64  /* ... at most this many per CTA of qr_mass (more: the window overflows) */
#define WIN_ROW 256 /* ... and per row */

struct qr_row {
    unsigned max_key, inv_min, valid, gathered; /* qr_scan; qr_mass for a top-p-alone row */
    u64 total, above;                           /* qr_mass (all zeroed by qr_prep) */
    unsigned trunc_key, flags;                  /* qr_prep: flags 1 = threshold, 2 = truncate */
    unsigned bkey, pool_ok;                     /* qr_search: pool_ok 1 = buffer, 2 = window */
    int cut, pool_win;                          /* pool_win: the window holds the candidates */
    unsigned lo2, gathered2;                    /* qr_gather2 or the fused search (top-p alone,
                                                 * truncation=auto) */
    unsigned pool_n, win_n;                     /* qr_search: entries of the buffer in use;
                                                 * qr_mass: entries of the window */
    unsigned ticket, met;                       /* fused search: CTAs of the row done gathering;
                                                 * qr_mass (a.scan_in_mass): CTAs done scanning */
    unsigned gather_key, pooled;                /* qr_prep: the key above which qr_scan buffers
                                                 * (trunc_key unless a.tight); qr_scan: how many
                                                 * keys are above it (the buffer's write counter;
                                                 * `gathered` counts those above trunc_key) */
    int k_trunc;                                /* qr_prep: the k the truncation ran on (the
                                                 * row's, or with min-p folded in where top-k is
                                                 * off: qrita_gpu_minp.cuh) */
};

/* One CTA's max key, ~(min key) and valid count of a top-p-alone row (qr_scan -> qr_mass). */
struct qr_part {
    unsigned max_key, inv_min, valid, above; /* above: keys above the CPU's threshold */
};

struct qr_args {
    struct tkp_io io; /* the run's (algos/tkp.h): logits of the run's element type, read
                       * through gpu_logits.cuh; k, p, kept (samples unused) */
    qr_row *rows;
    qrita_gpu_rstat *rstat;
    uint32_t *keys, *idx;
    uint32_t *wkeys, *widx; /* WIN_ROW per row: the window of qr_mass */
    u64 *hist; /* TKP_MASS_BINS per row */
    qr_part *part; /* cta_per_row per row */
    uint32_t *heavy; /* [0] how many rows the warp-per-row search left, [1..] which */
    uint32_t *sort_in, *sort_out; /* search=sort: vocab entries per row (qrita_gpu_sort.cuh) */
    int *sort_begin, *sort_end;   /* ... each row's segment of them (absolute offsets) */
    int gather2; /* top-p-alone rows take the second-level truncation: they skip the buffer
                  * writes of qr_scan, qr_mass keeps their window, qr_gather2 runs */
    int fuse;    /* qr_gather2's and qr_mask's work is done by qr_search<., ., true>, a grid of
                  * (cpr, B) blocks, whose block 0 first warms up on row `batch` (rows, rstat,
                  * keys, idx hold batch + 1 rows) */
    int mass;         /* some row may be searched as top-p alone: hist, wkeys and widx exist */
    int tight;        /* top-k rows gather above gather_key, not the CPU's threshold (README,
                       * "Workspace") */
    int scan_in_mass; /* a fused batch whose qr_mass grid is resident at once: qr_mass does
                       * qr_scan's work, then the CTAs of a row meet (no qr_scan launch) */
    int minp_force;   /* TKP_MINP_FORCE_COUNT (gpu_minp.cuh): the search folds min-p from a
                       * count over the row, never from the buffer */
    int heavy_n;      /* a warp-per-row search leaves a row with more candidates than this to
                       * qr_search_heavy (option heavy_n, qrita_gpu.cu qr_heavy_n_of) */
    int64_t batch, vocab, stride, cap_gpu, cap_cpu, pitch, vpc, cpr;
    int trunc, search, dedup, sample_block, max_iter, pivots;
    double margin;
};

/* The candidates of a row searched on a buffer: the window of qr_mass, or the buffer. */
__device__ __forceinline__ const uint32_t *pool_keys(const qr_args &a, int64_t r, bool win)
{
    return win ? a.wkeys + r * WIN_ROW : a.keys + r * a.pitch;
}

__device__ __forceinline__ const uint32_t *pool_idx(const qr_args &a, int64_t r, bool win)
{
    return win ? a.widx + r * WIN_ROW : a.idx + r * a.pitch;
}

/* A word of a buffer; `fresh`: other CTAs of this kernel appended to it (the fused search's
 * gather), so it is read past L1, which may hold lines this SM read before they were written. */
__device__ __forceinline__ uint32_t pool_word(const uint32_t *p, bool fresh)
{
    return fresh ? __ldcg(p) : *p;
}

#endif

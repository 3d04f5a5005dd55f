/* naive_sort_gpu.cu — the CUDA backend of naive_sort: CUB segmented radix sort of the order
 * keys, then one block per row for the top-k/top-p cut, the kept mask and the samples.
 *
 * Per chunk of rows (all rows at once unless the batch is huge):
 * 1. naive_keys: order keys tkp_order_key(x) of every token (invalid tokens: key 0), and
 *    the segment offsets.
 * 2. cub::DeviceSegmentedRadixSort::SortKeysDescending on the keys (DoubleBuffer, so CUB's
 *    own temporary storage is small; for 16-bit logits only the key bits above those that
 *    are the same in every key of a sign, naive_sort_low_bit). Only keys are sorted: the kept set is "every token
 *    whose key is above the boundary key Kb, plus the first `ties` tokens (in index order)
 *    whose key equals Kb", which the index-order pass of step 3 decides by itself, so no
 *    index permutation is needed (and the sort's stability does not matter).
 * 3. naive_finish, one 512-thread block per row, on the sorted keys of the row:
 *    valid = number of non-zero keys (a block-parallel partition search), m = the value of
 *    the first key, k with min-p folded in (fin_minp_k: the passing tokens counted from the
 *    top of the sorted keys until the count settles it), n = min(k, valid); top-p over the
 *    first n sorted keys with exactly the CPU rule (fixed-point weights tkp_weight, target tkp_topp_target, keep j iff j == 0 or the
 *    exclusive prefix < target) -> nk kept and their total weight; Kb = sorted[nk-1] and the
 *    number of ties at Kb to keep; then one pass over the row in index order writes every
 *    mask byte exactly once and, for sampling, scans the kept weights in index order and
 *    resolves each draw (target = tkp_scale_u64(philox, total), first token whose inclusive
 *    prefix exceeds it), exactly tkp_sample_kept's rule.
 * Every quantity is an integer or a value computed with the shared host-device functions,
 * so the output is bit-identical to the CPU's and independent of the launch shape.
 *
 * The two kernels that read logits (naive_keys, naive_finish) are templated on the element
 * type E (algos/common/gpu_logits.cuh): a 16-bit value is converted to float32 exactly in
 * registers, so its order key, weight and every decision are those of the float32 upcast
 * (docs/SEMANTICS.md, "16-bit logits"); the sort and the key-only steps are shared.
 *
 * This file holds the kernels, the sort and the launcher; the device code of step 3 is in
 * naive_sort_gpu_finish.cuh, the shared constants in naive_sort_gpu_types.cuh (README.md, "GPU
 * source layout"). */
#include <cub/cub.cuh>
#include <stdint.h>

#include "../common/cuda_util.h"
#include "../common/gpu_logits.cuh"
#include "../common/prob.h"
#include "naive_sort_gpu.h"
#include "naive_sort_gpu_finish.cuh"
#include "naive_sort_gpu_types.cuh"

namespace {

/* Step 1 for the rows row0 .. row0 + rows - 1 of `logits` (element type E, rows `stride`
 * elements apart). */
template <class E>
__global__ void __launch_bounds__(KEY_THREADS)
    naive_keys(const void *__restrict__ logits, int64_t stride, int64_t vocab, int64_t row0,
               int rows, uint32_t *__restrict__ keys, int *__restrict__ offsets)
{
    const int lr = blockIdx.y;
    const void *x = tkp_row_ptr<E>(logits, stride, row0 + lr);
    uint32_t *out = keys + (int64_t)lr * vocab;
    const int64_t base = (int64_t)blockIdx.x * (KEY_THREADS * KEY_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < KEY_ITEMS; j++) {
        int64_t i = base + (int64_t)j * KEY_THREADS;
        if (i < vocab)
            out[i] = tkp_order_key(tkp_load1<E>(x, i));
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        offsets[lr] = (int)((int64_t)lr * vocab);
        if (lr == rows - 1)
            offsets[rows] = (int)((int64_t)rows * vocab);
    }
}

/* Step 3, one block per row of the chunk starting at row0 (logits of element type E). Two
 * blocks per SM, as before per-row keys: without the bound ptxas took 88 registers (one block
 * per SM); with it 64 and no spills (docs/gpu-layer-sass.md, "Per-row keys and min-p"). */
template <class E>
__global__ void __launch_bounds__(FIN_THREADS, 2)
    naive_finish(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                 const int32_t *__restrict__ kk, const float *__restrict__ pp,
                 const float *__restrict__ min_p, int64_t row0,
                 const uint32_t *__restrict__ sorted_keys, uint8_t *__restrict__ kept,
                 int64_t *__restrict__ samples, int draws, const FinKeys keys)
{
    __shared__ FinShared sh;
    const int tid = threadIdx.x;
    const int64_t row = row0 + blockIdx.x;
    const uint32_t *srt = sorted_keys + (int64_t)blockIdx.x * vocab;
    const void *x = tkp_row_ptr<E>(logits, stride, row);
    const float p = pp[row];
    const bool sampling = samples != nullptr && draws > 0;

    /* valid tokens = non-zero keys, which the descending sort put first */
    const int64_t valid = block_partition_point(0, vocab, [&](int64_t j) { return srt[j] != 0u; });
    const float m = valid ? tkp_key_value(srt[0]) : 0.0f;
    const uint64_t thr = min_p ? tkp_minp_threshold(min_p[row]) : 0; /* 0: min-p off */
    const int32_t k = thr ? fin_minp_k(sh, srt, valid, vocab, m, kk[row], thr) : kk[row];
    int64_t n = valid;
    if (tkp_topk_on(k, vocab) && (int64_t)k < n)
        n = k;

    /* Total weight of the first n sorted tokens (top-p, or the sampling total). */
    uint64_t total = 0;
    const bool topp = tkp_topp_on(p);
    if (n > 0 && (topp || sampling))
        total = fin_sorted_total(sh, srt, n, m);
    int64_t nk = n;
    uint64_t kept_total = total;
    if (n > 0 && topp)
        fin_topp_prefix(sh, srt, n, m, p, total, nk, kept_total);
    const FinBoundary bd = fin_boundary(srt, nk, vocab);

    int64_t *out = sampling ? samples + row * draws : nullptr;
    if (sampling && kept_total == 0)
        for (int d = tid; d < draws; d += FIN_THREADS)
            out[d] = -1;
    const bool draw_here = sampling && kept_total > 0;
    uint8_t *krow = kept ? kept + row * vocab : nullptr;
    if (!krow && !draw_here)
        return;

    uint64_t my_target = 0;
    if (draw_here && draws <= FIN_THREADS && tid < draws)
        my_target = draw_target(keys, row, tid, kept_total);

    /* One pass over the row in index order: every mask byte once, the draws tile by tile. */
    const bool x_vec = tkp_vec4_ok<E>(x, 0);
    int64_t tie_carry = 0;
    uint64_t wcarry = 0;
    for (int64_t base = 0; base < vocab; base += FIN_TILE) {
        const int64_t i0 = base + (int64_t)tid * FIN_ITEMS;
        float v[FIN_ITEMS];
        fin_load_items<E>(x, x_vec, i0, vocab, v);
        bool keep[FIN_ITEMS];
        fin_keep_items(sh, v, nk, bd, tie_carry, keep);
        if (krow)
            fin_write_mask(krow + i0, i0, vocab, keep);
        if (draw_here) {
            wcarry += fin_draw_tile(sh, v, keep, m, base, wcarry, out, draws, my_target, keys,
                                    row, kept_total);
            if (!krow && wcarry >= kept_total) /* every draw is resolved */
                break;
        }
    }
}

/* The lowest key bit the sort has to order. The order key of a 16-bit value's float32 upcast
 * (tkp_order_key: the bits with the sign bit flipped for a value >= 0, every bit flipped
 * for a negative one) ends in as many bits as the float32 mantissa has beyond the 16-bit one
 * (bf16 7 of 23: 16 bits; fp16 10 of 23, its subnormals included: 13 bits), all 0 for a value
 * >= 0 and all 1 for a negative one; an invalid token's key is 0. Two such keys equal above
 * that bit are therefore equal (a key 0 and a negative value's key equal above it would make
 * that value a NaN pattern), so sorting only the bits above gives the same sorted keys in
 * fewer radix passes. Float32: every bit. */
int naive_sort_low_bit(enum tkp_dtype dtype)
{
    return dtype == TKP_BF16 ? 16 : dtype == TKP_F16 ? 13 : 0;
}

/* The kernels that read logits, instantiated for one element type (every instantiation of
 * a kernel has the same type: the logits are untyped). */
struct NaiveKernels {
    void (*keys)(const void *, int64_t, int64_t, int64_t, int, uint32_t *, int *);
    void (*finish)(const void *, int64_t, int64_t, const int32_t *, const float *, const float *,
                   int64_t, const uint32_t *, uint8_t *, int64_t *, int, const FinKeys);
};

/* The kernels for the problem's element type: the one place that dispatches on pb->dtype;
 * false for a type outside the enum. */
bool naive_kernels(enum tkp_dtype dtype, NaiveKernels &kn)
{
    return tkp_with_dtype(dtype, [&](auto e) {
        using E = decltype(e);
        kn.keys = naive_keys<E>;
        kn.finish = naive_finish<E>;
    });
}

} // namespace

extern "C" int naive_gpu_plan(const struct tkp_problem *pb, const void *opts, void *plan_out,
                              size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    struct naive_gpu_plan *plan = (struct naive_gpu_plan *)plan_out;
    plan->pb = *pb;
    const int64_t vocab = pb->vocab;
    int64_t rows = MAX_CHUNK_KEYS / vocab;
    if (rows < 1)
        rows = 1;
    if (rows > MAX_CHUNK_ROWS)
        rows = MAX_CHUNK_ROWS;
    if (rows > pb->batch)
        rows = pb->batch;
    if (rows < 1)
        rows = 1;
    plan->chunk_rows = rows;
    const int64_t items = rows * vocab;
    cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
    const int *no_offsets = nullptr; /* a size query reads no offsets */
    size_t temp = 0;
    TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                     nullptr, temp, keys, (int)items, (int)rows, no_offsets, no_offsets,
                     naive_sort_low_bit(pb->dtype), 32, (cudaStream_t)0),
                 err);
    plan->temp_bytes = temp;
    char *cur = nullptr;
    tkp_carve(&cur, sizeof(int) * (size_t)(rows + 1));
    tkp_carve(&cur, sizeof(uint32_t) * (size_t)items);
    tkp_carve(&cur, sizeof(uint32_t) * (size_t)items);
    tkp_carve(&cur, temp);
    plan->workspace = (size_t)(uintptr_t)cur;
    *workspace_bytes = plan->workspace;
    return TKP_OK;
}

extern "C" int naive_gpu_run(const void *plan_in, const struct tkp_io *io, void *workspace,
                             void *stream, struct tkp_error *err)
{
    const struct naive_gpu_plan *plan = (const struct naive_gpu_plan *)plan_in;
    const struct tkp_problem *pb = &plan->pb;
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t vocab = pb->vocab, batch = pb->batch;
    if (batch == 0 || (!io->kept && !io->samples))
        return TKP_OK;
    char *cur = (char *)workspace;
    int *offsets = (int *)tkp_carve(&cur, sizeof(int) * (size_t)(plan->chunk_rows + 1));
    uint32_t *buf0 = (uint32_t *)tkp_carve(&cur, sizeof(uint32_t) * (size_t)(plan->chunk_rows * vocab));
    uint32_t *buf1 = (uint32_t *)tkp_carve(&cur, sizeof(uint32_t) * (size_t)(plan->chunk_rows * vocab));
    void *temp = tkp_carve(&cur, plan->temp_bytes);
    const int draws = io->samples ? pb->draws : 0;
    NaiveKernels kn;
    if (!naive_kernels(pb->dtype, kn)) {
        tkp_error_set(err, "naive_sort: logits element type %d is not one of f32, bf16, f16",
                      (int)pb->dtype);
        return TKP_EINVAL;
    }
    const FinKeys fkeys = { io->row_seed, io->row_offset, io->seed, io->offset };

    for (int64_t row0 = 0; row0 < batch; row0 += plan->chunk_rows) {
        const int64_t rows = batch - row0 < plan->chunk_rows ? batch - row0 : plan->chunk_rows;
        const int64_t items = rows * vocab;
        dim3 kgrid((unsigned)((vocab + KEY_THREADS * KEY_ITEMS - 1) / (KEY_THREADS * KEY_ITEMS)),
                   (unsigned)rows);
        kn.keys<<<kgrid, KEY_THREADS, 0, st>>>(io->logits, pb->stride, vocab, row0, (int)rows,
                                               buf0, offsets);
        TKP_LAUNCH_CHECK(err);
        cub::DoubleBuffer<uint32_t> keys(buf0, buf1);
        size_t temp_bytes = plan->temp_bytes;
        TKP_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
                         temp, temp_bytes, keys, (int)items, (int)rows, offsets, offsets + 1,
                         naive_sort_low_bit(pb->dtype), 32, st),
                     err);
        kn.finish<<<(unsigned)rows, FIN_THREADS, 0, st>>>(
            io->logits, pb->stride, vocab, io->k, io->p, io->min_p, row0, keys.Current(), io->kept,
            io->samples, draws, fkeys);
        TKP_LAUNCH_CHECK(err);
    }
    return TKP_OK;
}

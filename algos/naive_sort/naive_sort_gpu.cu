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
 *    valid = number of non-zero keys (a block-parallel partition search), n = min(k, valid),
 *    m = the value of the first key; top-p over the first n sorted keys with exactly the CPU
 *    rule (fixed-point weights tkp_weight, target tkp_topp_target, keep j iff j == 0 or the
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
 * (docs/SEMANTICS.md, "16-bit logits"); the sort and the key-only steps are shared. */
#include <cub/cub.cuh>
#include <stdint.h>

#include "../common/cuda_util.h"
#include "../common/gpu_launch.cuh"
#include "../common/gpu_logits.cuh"
#include "../common/gpu_warp.cuh"
#include "../common/philox.h"
#include "../common/prob.h"
#include "naive_sort_gpu.h"

namespace {

constexpr int KEY_THREADS = 256, KEY_ITEMS = 4;
constexpr int FIN_THREADS = 512, FIN_ITEMS = 8, FIN_TILE = FIN_THREADS * FIN_ITEMS;
/* At most this many keys per sort call: CUB counts items in an int, and two key buffers of
 * 2^28 keys (2 GiB) bound the workspace. */
constexpr int64_t MAX_CHUNK_KEYS = (int64_t)1 << 28;
constexpr int64_t MAX_CHUNK_ROWS = 65535; /* gridDim.y of naive_keys */

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

using ScanW = cub::BlockScan<uint64_t, FIN_THREADS>;
using ScanI = cub::BlockScan<int, FIN_THREADS>;
using RedW = cub::BlockReduce<uint64_t, FIN_THREADS>;
using RedI = cub::BlockReduce<int, FIN_THREADS>;

struct FinShared {
    union {
        ScanW::TempStorage sw;
        ScanI::TempStorage si;
        RedW::TempStorage rw;
        RedI::TempStorage ri;
    } tmp;
    uint64_t cum[FIN_TILE]; /* tile-local inclusive prefix of the kept weights */
    uint64_t bc_u64;
    int bc_int;
};

/* A block-wide sum (CUB's BlockReduce `Reduce` over its temporary storage), the result given
 * to every thread through `slot`. The leading barrier protects the temporary storage and the
 * slot from their previous use. */
template <typename Reduce, typename T>
__device__ T block_sum(typename Reduce::TempStorage &tmp, T &slot, T v)
{
    __syncthreads();
    const T s = Reduce(tmp).Sum(v);
    if (threadIdx.x == 0)
        slot = s;
    __syncthreads();
    return slot;
}

/* The first position in [lo, hi) where pred is false, given that pred holds on a prefix of
 * [lo, hi) (hi when it holds everywhere). Every thread of the block must call it with the
 * same lo and hi; each round probes FIN_THREADS evenly spaced positions. */
template <class Pred>
__device__ int64_t block_partition_point(int64_t lo, int64_t hi, Pred pred)
{
    while (lo < hi) {
        const int64_t step = (hi - lo + FIN_THREADS - 1) / FIN_THREADS;
        const int64_t q = lo + (int64_t)threadIdx.x * step;
        const int c = __syncthreads_count(q < hi && pred(q));
        if (c == 0)
            return lo;
        /* probes 0..c-1 hold, probe c (when inside) does not */
        int64_t nlo = lo + (int64_t)(c - 1) * step + 1, nhi = lo + (int64_t)c * step;
        lo = nlo;
        hi = nhi < hi ? nhi : hi;
    }
    return lo;
}

__device__ __forceinline__ uint64_t draw_target(uint64_t seed, int64_t row, uint64_t offset,
                                                int d, uint64_t total)
{
    return tkp_scale_u64(tkp_philox_u64(seed, (uint64_t)row, offset, (uint32_t)d), total);
}

/* The total weight of the first n sorted keys of the row (m: the row's largest value). */
__device__ __forceinline__ uint64_t fin_sorted_total(FinShared &sh, const uint32_t *srt,
                                                     int64_t n, float m)
{
    const int tid = threadIdx.x;
    uint64_t mine = 0;
    for (int64_t base = 0; base < n; base += FIN_TILE)
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)j * FIN_THREADS + tid;
            if (idx < n)
                mine += tkp_weight(tkp_key_value(srt[idx]), m);
        }
    return block_sum<RedW>(sh.tmp.rw, sh.bc_u64, mine);
}

/* Top-p on the first n sorted keys: nk = #{j < n : j == 0 or (mass before j) < target}, a
 * prefix of the order, and kept_total = their weight. */
__device__ __forceinline__ void fin_topp_prefix(FinShared &sh, const uint32_t *srt, int64_t n,
                                                float m, float p, uint64_t total, int64_t &nk,
                                                uint64_t &kept_total)
{
    const int tid = threadIdx.x;
    const uint64_t target = tkp_topp_target(p, total);
    uint64_t carry = 0, mine_w = 0;
    int mine_n = 0;
    for (int64_t base = 0; base < n; base += FIN_TILE) {
        uint64_t w[FIN_ITEMS], ex[FIN_ITEMS], agg;
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)tid * FIN_ITEMS + j;
            w[j] = idx < n ? tkp_weight(tkp_key_value(srt[idx]), m) : 0;
        }
        __syncthreads();
        ScanW(sh.tmp.sw).ExclusiveSum(w, ex, agg);
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++) {
            int64_t idx = base + (int64_t)tid * FIN_ITEMS + j;
            if (idx < n && (idx == 0 || carry + ex[j] < target)) {
                mine_n++;
                mine_w += w[j];
            }
        }
        carry += agg;
        if (carry >= target) /* every later token has at least this much before it */
            break;
    }
    nk = block_sum<RedI>(sh.tmp.ri, sh.bc_int, mine_n);
    kept_total = block_sum<RedW>(sh.tmp.rw, sh.bc_u64, mine_w);
}

/* The boundary of the kept set: tokens with key > kb are kept, and the first `ties` with
 * key == kb (in index order, ranked only when tie_scan: some ties at kb are dropped). */
struct FinBoundary {
    uint32_t kb;
    int64_t ties;
    bool tie_scan;
};

__device__ __forceinline__ FinBoundary fin_boundary(const uint32_t *srt, int64_t nk,
                                                    int64_t vocab)
{
    FinBoundary bd;
    bd.kb = 0xFFFFFFFFu; /* no valid key equals it (+inf is 0xFF800000) */
    bd.ties = 0;
    bd.tie_scan = false;
    if (nk > 0) {
        bd.kb = srt[nk - 1];
        const uint32_t b = bd.kb;
        const int64_t above =
            block_partition_point(0, nk, [&](int64_t j) { return srt[j] > b; });
        const int64_t upto =
            block_partition_point(nk, vocab, [&](int64_t j) { return srt[j] >= b; });
        bd.ties = nk - above;
        bd.tie_scan = upto - above > bd.ties; /* some ties at kb are dropped: rank them by index */
    }
    return bd;
}

/* The thread's FIN_ITEMS values x[i0 ...] of the tile, as floats (four-element vector loads
 * when the row is vector-aligned, tkp_vec4_ok: i0 is a multiple of FIN_ITEMS; NaN past the
 * row's end). */
template <class E>
__device__ __forceinline__ void fin_load_items(const void *x, bool x_vec, int64_t i0,
                                               int64_t vocab, float (&v)[FIN_ITEMS])
{
    if (x_vec && i0 + FIN_ITEMS <= vocab) {
#pragma unroll
        for (int q = 0; q < FIN_ITEMS / 4; q++) {
            float4 f = tkp_load4<E>(x, i0 + 4 * q);
            v[4 * q] = f.x;
            v[4 * q + 1] = f.y;
            v[4 * q + 2] = f.z;
            v[4 * q + 3] = f.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            v[j] = i0 + j < vocab ? tkp_load1<E>(x, i0 + j)
                                  : __int_as_float(0x7FC00000); /* NaN */
    }
}

/* Whether each of the thread's values is kept: above the boundary, or a tie at it among the
 * first `ties` in index order (tie_carry: the ties of the earlier tiles; a block scan ranks
 * the tile's). */
__device__ __forceinline__ void fin_keep_items(FinShared &sh, const float (&v)[FIN_ITEMS],
                                               int64_t nk, const FinBoundary &bd,
                                               int64_t &tie_carry, bool (&keep)[FIN_ITEMS])
{
    int eq[FIN_ITEMS], rank[FIN_ITEMS];
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++) {
        uint32_t key = tkp_order_key(v[j]);
        eq[j] = nk > 0 && key == bd.kb;
        keep[j] = nk > 0 && key > bd.kb;
    }
    if (bd.tie_scan) {
        int agg;
        __syncthreads();
        ScanI(sh.tmp.si).ExclusiveSum(eq, rank, agg);
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            keep[j] = keep[j] || (eq[j] && tie_carry + rank[j] < bd.ties);
        tie_carry += agg;
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            keep[j] = keep[j] || eq[j];
    }
}

/* The mask bytes kp[0, FIN_ITEMS) of tokens i0 ... (one 8-byte store when aligned). */
__device__ __forceinline__ void fin_write_mask(uint8_t *kp, int64_t i0, int64_t vocab,
                                               const bool (&keep)[FIN_ITEMS])
{
    if (i0 + FIN_ITEMS <= vocab && ((uintptr_t)kp & 7) == 0) {
        uint2 pk;
        pk.x = (uint32_t)keep[0] | (uint32_t)keep[1] << 8 | (uint32_t)keep[2] << 16 |
               (uint32_t)keep[3] << 24;
        pk.y = (uint32_t)keep[4] | (uint32_t)keep[5] << 8 | (uint32_t)keep[6] << 16 |
               (uint32_t)keep[7] << 24;
        *reinterpret_cast<uint2 *>(kp) = pk;
    } else {
#pragma unroll
        for (int j = 0; j < FIN_ITEMS; j++)
            if (i0 + j < vocab)
                kp[j] = keep[j] ? 1 : 0;
    }
}

/* The draws of row `row` that fall in the tile starting at token `base`: the tile's kept
 * weights scanned in index order into sh.cum; a draw whose target t (my_target when
 * draws <= FIN_THREADS) has wcarry <= t < wcarry + the tile's mass is the first position
 * whose inclusive prefix exceeds t - wcarry. Returns the tile's kept mass. */
__device__ __forceinline__ uint64_t fin_draw_tile(FinShared &sh, const float (&v)[FIN_ITEMS],
                                                  const bool (&keep)[FIN_ITEMS], float m,
                                                  int64_t base, uint64_t wcarry,
                                                  int64_t *out, int draws, uint64_t my_target,
                                                  uint64_t seed, int64_t row, uint64_t offset,
                                                  uint64_t kept_total)
{
    const int tid = threadIdx.x;
    uint64_t w[FIN_ITEMS], ex[FIN_ITEMS], agg;
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++)
        w[j] = keep[j] ? tkp_weight(v[j], m) : 0;
    __syncthreads(); /* the previous tile's draws are done with cum[] */
    ScanW(sh.tmp.sw).ExclusiveSum(w, ex, agg);
#pragma unroll
    for (int j = 0; j < FIN_ITEMS; j++)
        sh.cum[tid * FIN_ITEMS + j] = ex[j] + w[j];
    __syncthreads();
    if (agg > 0)
        for (int d = tid; d < draws; d += FIN_THREADS) {
            uint64_t t = draws <= FIN_THREADS ? my_target
                                              : draw_target(seed, row, offset, d, kept_total);
            if (t >= wcarry && t - wcarry < agg) {
                const uint64_t local = t - wcarry;
                int lo = 0, hi = FIN_TILE - 1; /* first position with cum > local */
                while (lo < hi) {
                    int mid = (lo + hi) >> 1;
                    if (sh.cum[mid] > local)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                out[d] = base + lo;
            }
        }
    return agg;
}

/* Step 3, one block per row of the chunk starting at row0 (logits of element type E). */
template <class E>
__global__ void __launch_bounds__(FIN_THREADS)
    naive_finish(const void *__restrict__ logits, int64_t stride, int64_t vocab,
                 const int32_t *__restrict__ kk, const float *__restrict__ pp, int64_t row0,
                 const uint32_t *__restrict__ sorted_keys, uint8_t *__restrict__ kept,
                 int64_t *__restrict__ samples, int draws, uint64_t seed, uint64_t offset)
{
    __shared__ FinShared sh;
    const int tid = threadIdx.x;
    const int64_t row = row0 + blockIdx.x;
    const uint32_t *srt = sorted_keys + (int64_t)blockIdx.x * vocab;
    const void *x = tkp_row_ptr<E>(logits, stride, row);
    const int32_t k = kk[row];
    const float p = pp[row];
    const bool sampling = samples != nullptr && draws > 0;

    /* valid tokens = non-zero keys, which the descending sort put first */
    const int64_t valid = block_partition_point(0, vocab, [&](int64_t j) { return srt[j] != 0u; });
    int64_t n = valid;
    if (tkp_topk_on(k, vocab) && (int64_t)k < n)
        n = k;
    const float m = valid ? tkp_key_value(srt[0]) : 0.0f;

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
        my_target = draw_target(seed, row, offset, tid, kept_total);

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
            wcarry += fin_draw_tile(sh, v, keep, m, base, wcarry, out, draws, my_target, seed,
                                    row, offset, kept_total);
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
    void (*finish)(const void *, int64_t, int64_t, const int32_t *, const float *, int64_t,
                   const uint32_t *, uint8_t *, int64_t *, int, uint64_t, uint64_t);
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

extern "C" int naive_gpu_plan(const struct tkp_problem *pb, struct naive_gpu_plan *plan,
                              struct tkp_error *err)
{
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
    return TKP_OK;
}

extern "C" int naive_gpu_run(const struct naive_gpu_plan *plan, const struct tkp_problem *pb,
                             const struct tkp_io *io, void *workspace, void *stream,
                             struct tkp_error *err)
{
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
            io->logits, pb->stride, vocab, io->k, io->p, row0, keys.Current(), io->kept,
            io->samples, draws, io->seed, io->offset);
        TKP_LAUNCH_CHECK(err);
    }
    return TKP_OK;
}

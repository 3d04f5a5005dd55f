/* cub_topk.cu — the native peer cub.topk (docs/PEERS.md, "cub.topk"): CUB's AIR top-k, called
 * from C/CUDA with no Python. A row of V <= CUB_TOPK_BATCHED_MAX tokens goes through
 * cub::DeviceBatchedTopK (one launch, one CTA a row); a longer row through cub::DeviceTopK,
 * one call a row on the harness's stream. Either returns each row's k keys and their indices,
 * unordered, ties at the k-th key resolved as CUB resolves them (not by index: the oracle
 * reports what it does); a last kernel writes them into the kept mask. The only translation
 * unit that sees CUB 3.3+'s headers (nvidia-cuda-cccl 13.3, Makefile CCCL_133), so that they
 * never meet the toolkit's CUB; it includes nothing of the harness but algos/tkp.h and
 * algos/common/cuda_util.h. Every call is enqueued, never synchronised, so it can be captured
 * as a CUDA graph (docs/DESIGN.md, "A run, step by step"). */
#include <cub/device/device_batched_topk.cuh>
#include <cub/device/device_topk.cuh>
#include <cuda/__execution/determinism.h>
#include <cuda/__execution/output_ordering.h>
#include <cuda/__execution/require.h>
#include <cuda/__execution/tie_break.h>
#include <cuda/argument>
#include <cuda/iterator>
#include <cuda/std/execution>
#include <cuda/stream_ref>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../algos/common/cuda_util.h"

/* One CTA holds a whole row in DeviceBatchedTopK: its largest tile (256 threads x 64 keys). */
#ifndef CUB_TOPK_BATCHED_MAX
#define CUB_TOPK_BATCHED_MAX 8192
#endif

struct cub_topk_state {
    struct tkp_problem pb;
    int32_t k;         /* the problem's k_max: every row's k (the harness's cells share one) */
    int batched;       /* V <= CUB_TOPK_BATCHED_MAX */
    size_t temp_bytes; /* CUB's temporary storage */
};

/* CUB's only implemented contract (device_topk.cuh, "Current support"): non-deterministic,
 * unordered output; ties at the k-th key are not broken by index. */
static auto topk_env(cudaStream_t stream)
{
    namespace ex = cuda::execution;
    return cuda::std::execution::env{
        cuda::stream_ref{ stream },
        ex::require(ex::determinism::not_guaranteed, ex::output_ordering::unsorted) };
}

static auto batched_env(cudaStream_t stream)
{
    namespace ex = cuda::execution;
    return cuda::std::execution::env{
        cuda::stream_ref{ stream },
        ex::require(ex::determinism::not_guaranteed, ex::tie_break::unspecified,
                    ex::output_ordering::unsorted) };
}

/* Row r's first element: the logits of a row start at r * stride. */
template <typename T> struct row_start {
    const T *base;
    int64_t stride;
    __host__ __device__ const T *operator()(int64_t r) const { return base + r * stride; }
};
template <typename T> struct out_start {
    T *base;
    int64_t k;
    __host__ __device__ T *operator()(int64_t r) const { return base + r * k; }
};
struct index_start {
    __host__ __device__ cuda::counting_iterator<int32_t> operator()(int64_t) const
    {
        return cuda::counting_iterator<int32_t>{ 0 };
    }
};

/* The whole batch through DeviceBatchedTopK (d_temp NULL: its storage size). */
template <typename T>
static cudaError_t batched_call(void *d_temp, size_t &bytes, const struct tkp_problem *pb,
                                const T *logits, T *keys, int32_t *idx, int32_t k,
                                cudaStream_t stream)
{
    const cuda::counting_iterator<int64_t> rows{ 0 };
    auto in = cuda::transform_iterator(rows, row_start<T>{ logits, pb->stride });
    auto keys_out = cuda::transform_iterator(rows, out_start<T>{ keys, k });
    auto idx_in = cuda::transform_iterator(rows, index_start{});
    auto idx_out = cuda::transform_iterator(rows, out_start<int32_t>{ idx, k });
    auto sizes = cuda::args::immediate{ pb->vocab, cuda::args::bounds<1, CUB_TOPK_BATCHED_MAX>() };
    auto ks = cuda::args::immediate{ (int64_t)k, cuda::args::bounds<1, CUB_TOPK_BATCHED_MAX>() };
    return cub::DeviceBatchedTopK::MaxPairs(d_temp, bytes, in, keys_out, idx_in, idx_out, sizes,
                                            ks, cuda::args::immediate{ pb->batch },
                                            batched_env(stream));
}

/* Row r through DeviceTopK (d_temp NULL: its storage size, the same for every row). */
template <typename T>
static cudaError_t row_call(void *d_temp, size_t &bytes, const struct tkp_problem *pb,
                            const T *logits, T *keys, int32_t *idx, int32_t k, int64_t r,
                            cudaStream_t stream)
{
    /* 32-bit counts (V < 2^31, cub_topk_supports): CUB then indexes with 32-bit offsets */
    return cub::DeviceTopK::MaxPairs(d_temp, bytes, logits + r * pb->stride, keys + r * k,
                                     cuda::counting_iterator<int32_t>{ 0 }, idx + r * k,
                                     (int32_t)pb->vocab, k, topk_env(stream));
}

/* The selected indices into the kept mask (cleared before): one thread an index. */
__global__ void cub_topk_mark(const int32_t *__restrict__ idx, int64_t n, int32_t k, int64_t vocab,
                              uint8_t *__restrict__ kept)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        kept[(i / k) * vocab + idx[i]] = 1;
}

/* The layout of the workspace: CUB's storage, then the keys and the indices, [B, k] each. */
struct cub_topk_buffers {
    void *temp, *keys;
    int32_t *idx;
};

static size_t carve(const struct cub_topk_state *s, void *base, struct cub_topk_buffers *b)
{
    char *at = (char *)base;
    const size_t n = (size_t)(s->pb.batch * s->k);
    b->temp = tkp_carve(&at, s->temp_bytes ? s->temp_bytes : 1);
    b->keys = tkp_carve(&at, n * tkp_dtype_size(s->pb.dtype));
    b->idx = (int32_t *)tkp_carve(&at, n * sizeof(int32_t));
    return (size_t)(at - (char *)base) + 256;
}

/* The selection of every row in the element type T (temp NULL: the storage size into s). */
template <typename T>
static cudaError_t select_rows(struct cub_topk_state *s, const void *logits,
                               const struct cub_topk_buffers *b, cudaStream_t stream)
{
    const T *in = (const T *)logits;
    T *keys = (T *)b->keys;
    size_t bytes = s->temp_bytes;
    if (s->batched || !b->temp) {
        cudaError_t e = s->batched ? batched_call<T>(b->temp, bytes, &s->pb, in, keys, b->idx, s->k, stream)
                                   : row_call<T>(NULL, bytes, &s->pb, in, keys, b->idx, s->k, 0, stream);
        if (!b->temp)
            s->temp_bytes = bytes;
        return e;
    }
    for (int64_t r = 0; r < s->pb.batch; r++) {
        cudaError_t e = row_call<T>(b->temp, bytes, &s->pb, in, keys, b->idx, s->k, r, stream);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static cudaError_t select_typed(struct cub_topk_state *s, const void *logits,
                                const struct cub_topk_buffers *b, cudaStream_t stream)
{
    switch (s->pb.dtype) {
    case TKP_BF16: return select_rows<__nv_bfloat16>(s, logits, b, stream);
    case TKP_F16: return select_rows<__half>(s, logits, b, stream);
    default: return select_rows<float>(s, logits, b, stream);
    }
}

static int cub_topk_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)opts;
    if (pb->k_max <= 0 || pb->k_max >= pb->vocab) {
        *why = "cub.topk selects a top-k set: top-k must be on (0 < k < V)";
        return 0;
    }
    if (pb->vocab > INT32_MAX) {
        *why = "cub.topk returns int32 indices: V must be below 2^31";
        return 0;
    }
    return 1;
}

static int cub_topk_init(void *state, const struct tkp_problem *pb, const void *opts,
                         size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    struct cub_topk_state *s = (struct cub_topk_state *)state;
    s->pb = *pb;
    s->k = pb->k_max;
    s->batched = pb->vocab <= CUB_TOPK_BATCHED_MAX;
    s->temp_bytes = 0;
    struct cub_topk_buffers none = { NULL, NULL, NULL };
    TKP_CUDA_TRY(select_typed(s, NULL, &none, NULL), err);
    *workspace_bytes = carve(s, NULL, &none);
    return TKP_OK;
}

static int cub_topk_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                        struct tkp_error *err)
{
    struct cub_topk_state *s = (struct cub_topk_state *)state;
    cudaStream_t st = (cudaStream_t)stream;
    struct cub_topk_buffers b;
    carve(s, workspace, &b);
    const int64_t n = s->pb.batch * s->k;
    TKP_CUDA_TRY(cudaMemsetAsync(io->kept, 0, (size_t)(s->pb.batch * s->pb.vocab), st), err);
    TKP_CUDA_TRY(select_typed(s, io->logits, &b, st), err);
    cub_topk_mark<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(b.idx, n, s->k, s->pb.vocab,
                                                               io->kept);
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

extern "C" const struct tkp_impl tkp_peer_cub_topk_gpu = {
    sizeof(struct cub_topk_state), cub_topk_supports, cub_topk_init, cub_topk_run, NULL, NULL,
    TKP_DTYPE_BIT(TKP_BF16) | TKP_DTYPE_BIT(TKP_F16),
};

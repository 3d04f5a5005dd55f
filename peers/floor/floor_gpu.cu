/* floor_gpu.cu — the memory floors on the GPU (floor.h): one grid-wide pass over the batch's
 * logits as 16-byte vectors, each thread with FLOOR_UNROLL loads in flight, a CTA per
 * FLOOR_THREADS x FLOOR_UNROLL vectors up to as many CTAs as the SMs hold at once. floor.read
 * XORs what it reads and each CTA writes one word of it (the checksum, floor.h: a few KiB
 * written against the batch's bytes read); floor.copy writes every vector into the workspace.
 * The bytes past the last whole vector (a 16-bit batch's last 2 .. 14) are CTA 0's. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "../../algos/common/cuda_util.h"
#include "floor.h"

#define FLOOR_THREADS 512
#define FLOOR_UNROLL 4

namespace {

struct floor_gpu_state {
    struct tkp_problem pb;
    int64_t vectors; /* whole 16-byte vectors of the batch */
    int tail;        /* bytes past them */
    int ctas;
};

__device__ __forceinline__ void xor_into(uint4 &acc, const uint4 v)
{
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
}

/* The tail bytes, as floor_checksum takes them (their offsets are a multiple of 4 apart from
 * the vectors' end). */
__device__ uint32_t tail_word(const unsigned char *tail, int n, unsigned char *copy)
{
    uint32_t w = 0;
    for (int i = 0; i < n; i++) {
        w ^= (uint32_t)tail[i] << (8 * (i % 4));
        if (copy)
            copy[i] = tail[i];
    }
    return w;
}

/* COPY: write every vector to out; else XOR them, CTA b writing its word to sink[b]. */
template <bool COPY>
__global__ void __launch_bounds__(FLOOR_THREADS)
    floor_pass(const uint4 *__restrict__ in, int64_t vectors, int tail, uint4 *__restrict__ out,
               uint32_t *__restrict__ sink)
{
    __shared__ uint32_t warp_words[FLOOR_THREADS / 32]; /* floor.read's reduction */
    const int64_t step = (int64_t)gridDim.x * FLOOR_THREADS;
    int64_t i = (int64_t)blockIdx.x * FLOOR_THREADS + threadIdx.x;
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (; i + (FLOOR_UNROLL - 1) * step < vectors; i += FLOOR_UNROLL * step) {
        uint4 v[FLOOR_UNROLL];
#pragma unroll
        for (int u = 0; u < FLOOR_UNROLL; u++)
            v[u] = __ldg(in + i + u * step);
#pragma unroll
        for (int u = 0; u < FLOOR_UNROLL; u++) {
            if (COPY)
                out[i + u * step] = v[u];
            else
                xor_into(acc, v[u]);
        }
    }
    for (; i < vectors; i += step) {
        if (COPY)
            out[i] = __ldg(in + i);
        else
            xor_into(acc, __ldg(in + i));
    }
    uint32_t word = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (blockIdx.x == 0 && threadIdx.x == 0 && tail)
        word ^= tail_word((const unsigned char *)(in + vectors), tail,
                          COPY ? (unsigned char *)(out + vectors) : nullptr);
    if constexpr (!COPY) {
        for (int d = 16; d > 0; d >>= 1)
            word ^= __shfl_xor_sync(0xffffffffu, word, d);
        if (threadIdx.x % 32 == 0)
            warp_words[threadIdx.x / 32] = word;
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t cta = 0;
            for (int w = 0; w < FLOOR_THREADS / 32; w++)
                cta ^= warp_words[w];
            sink[blockIdx.x] = cta;
        }
    }
}

/* The CTAs of a pass: enough for every thread's FLOOR_UNROLL vectors, at most a full device. */
int ctas_for(int64_t vectors, struct tkp_error *err, int *ctas)
{
    int dev = 0, sms = 0, per_sm = 0;
    TKP_CUDA_TRY(cudaGetDevice(&dev), err);
    TKP_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    TKP_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, floor_pass<false>,
                                                               FLOOR_THREADS, 0),
                 err);
    const int64_t needed = (vectors + FLOOR_THREADS * FLOOR_UNROLL - 1) /
                           (FLOOR_THREADS * FLOOR_UNROLL);
    const int64_t full = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
    *ctas = (int)(needed < 1 ? 1 : needed < full ? needed : full);
    return TKP_OK;
}

int floor_gpu_init(void *state, const struct tkp_problem *pb, bool copy, size_t *workspace_bytes,
                   struct tkp_error *err)
{
    struct floor_gpu_state *s = (struct floor_gpu_state *)state;
    s->pb = *pb;
    const size_t bytes = floor_batch_bytes(pb);
    s->vectors = (int64_t)(bytes / 16);
    s->tail = (int)(bytes % 16);
    const int rc = ctas_for(s->vectors, err, &s->ctas);
    *workspace_bytes = copy ? bytes : sizeof(uint32_t) * (size_t)s->ctas;
    return rc;
}

int read_init(void *state, const struct tkp_problem *pb, const void *opts,
              size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    return floor_gpu_init(state, pb, false, workspace_bytes, err);
}

int copy_init(void *state, const struct tkp_problem *pb, const void *opts,
              size_t *workspace_bytes, struct tkp_error *err)
{
    (void)opts;
    return floor_gpu_init(state, pb, true, workspace_bytes, err);
}

template <bool COPY>
int floor_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
              struct tkp_error *err)
{
    const struct floor_gpu_state *s = (const struct floor_gpu_state *)state;
    if (s->vectors == 0 && s->tail == 0)
        return TKP_OK;
    if ((uintptr_t)io->logits % 16 || (uintptr_t)workspace % 16) {
        tkp_error_set(err, "the memory floors read 16-byte vectors: the logits (or the "
                           "workspace) do not start at a multiple of 16 bytes");
        return TKP_EINVAL;
    }
    floor_pass<COPY><<<s->ctas, FLOOR_THREADS, 0, (cudaStream_t)stream>>>(
        (const uint4 *)io->logits, s->vectors, s->tail, COPY ? (uint4 *)workspace : nullptr,
        COPY ? nullptr : (uint32_t *)workspace);
    TKP_LAUNCH_CHECK(err);
    return TKP_OK;
}

} // namespace

extern "C" const struct tkp_impl tkp_floor_read_gpu = {
    sizeof(struct floor_gpu_state), floor_supports, read_init, floor_run<false>, NULL, NULL,
    FLOOR_DTYPES,
};
extern "C" const struct tkp_impl tkp_floor_copy_gpu = {
    sizeof(struct floor_gpu_state), floor_supports, copy_init, floor_run<true>, NULL, NULL,
    FLOOR_DTYPES,
};

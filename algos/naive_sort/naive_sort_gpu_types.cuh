/* naive_sort_gpu_types.cuh — what the layers of naive_sort's CUDA code share (README.md, "GPU
 * source layout"): the launch constants and the finishing block's shared memory (FinShared).
 * The layers: naive_sort_gpu_finish.cuh (the steps of naive_finish on one row's sorted keys),
 * naive_sort_gpu.cu (the kernels, the sort and the launcher). */
#ifndef TKP_NAIVE_SORT_GPU_TYPES_CUH
#define TKP_NAIVE_SORT_GPU_TYPES_CUH

#include <cub/cub.cuh>
#include <stdint.h>

namespace {

constexpr int KEY_THREADS = 256, KEY_ITEMS = 4;
constexpr int FIN_THREADS = 512, FIN_ITEMS = 8, FIN_TILE = FIN_THREADS * FIN_ITEMS;
constexpr int FIN_WARPS = FIN_THREADS / 32;
/* At most this many keys per sort call: CUB counts items in an int, and two key buffers of
 * 2^28 keys (2 GiB) bound the workspace. */
constexpr int64_t MAX_CHUNK_KEYS = (int64_t)1 << 28;
constexpr int64_t MAX_CHUNK_ROWS = 65535; /* gridDim.y of naive_keys */

using RedW = cub::BlockReduce<uint64_t, FIN_THREADS>;
using RedI = cub::BlockReduce<int, FIN_THREADS>;

/* The batch's Philox key and its per-row arrays (device pointers, NULL in batch keying): each
 * row's key is tkp_row_key of them (docs/SEMANTICS.md, "Sampling: two keying modes"). */
struct FinKeys {
    const uint64_t *row_seed, *row_offset;
    uint64_t seed, offset;
};

struct FinShared {
    union {
        uint64_t sw[FIN_WARPS]; /* the block scans (algos/common/gpu_block.cuh) */
        int si[FIN_WARPS];
        RedW::TempStorage rw;
        RedI::TempStorage ri;
    } tmp;
    uint64_t cum[FIN_TILE]; /* tile-local inclusive prefix of the kept weights */
    uint64_t bc_u64;
    int bc_int;
};

} // namespace

#endif

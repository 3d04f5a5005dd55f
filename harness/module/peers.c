/* peers.c — the peer libraries a config can name beside the modules (docs/PEERS.md): one
 * `struct tkp_peer` each (peers.h): its module table, flagged TKP_PEER, with the ops, outputs
 * and options that `topkp list` prints and config checks use, then its package and backends.
 * Their code is Python (peers/catalog.py names the same peers); `topkp run` calls them through
 * the worker of peer_worker.c; a native peer's (cub.topk, the memory floors) is compiled in and
 * runs as a module's. */
#include <stddef.h>

#include "../../peers/floor/floor.h"
#include "peers.h"

/* The options a peer may take; each peer lists only those it reads. */
struct peer_opts {
    int input, order, entry;
};

static const char *const input_choices[] = { "probs", "softmax", NULL };
static const char *const order_choices[] = { "top_k_first", "joint", NULL };
static const char *const entry_choices[] = { "joint", "single", NULL };

#define INPUT_OPTION                                                                          \
    { "input", "probs: the kernel alone, on a softmax computed outside the timed region; "   \
               "softmax: a softmax (FlashInfer's; for SGLang torch's, written back into the " \
               "logits) and the kernel, timed together",                                      \
      TKP_OPT_ENUM, offsetof(struct peer_opts, input), 0, 0, 1, input_choices }
#define ORDER_OPTION                                                                          \
    { "order", "filter_apply_order: top_k_first (the contract's order) or joint (both "      \
               "filters on the original distribution)",                                       \
      TKP_OPT_ENUM, offsetof(struct peer_opts, order), 0, 0, 1, order_choices }

#define ENTRY_OPTION                                                                          \
    { "entry", "joint: top_k_top_p_sampling_from_probs for every row; single: "               \
               "top_p_sampling_from_probs or top_k_sampling_from_probs when one filter is on "  \
               "(FlashInfer's single-filter samplers), the joint call otherwise",               \
      TKP_OPT_ENUM, offsetof(struct peer_opts, entry), 0, 0, 1, entry_choices }

static const struct tkp_option no_options[] = { { NULL } };
static const struct tkp_option input_options[] = { INPUT_OPTION, { NULL } };
static const struct tkp_option order_options[] = { ORDER_OPTION, { NULL } };
static const struct tkp_option input_order_entry_options[] = { INPUT_OPTION, ORDER_OPTION,
                                                              ENTRY_OPTION, { NULL } };

#define ALL_OPS (TKP_TOPK | TKP_TOPP | TKP_TOPK_TOPP)
#define PEER(id, label, pkg, about, op, out, where, opt)                                       \
    static const struct tkp_peer id = {                                                       \
        .algo = { .abi = TKP_ABI, .name = label, .summary = about, .ops = op, .outputs = out, \
                  .flags = TKP_PEER, .options = opt, .opts_size = sizeof(struct peer_opts) }, \
        .package = pkg, .backends = where,                                                    \
    }

PEER(torch_sort, "torch.sort", "torch",
     "the textbook sort-based filter in plain PyTorch (stable sort, float32 softmax and cumsum)",
     ALL_OPS, TKP_OUT_SET, TKP_CPU | TKP_GPU, no_options);
PEER(torch_sample, "torch.sample", "torch",
     "torch.sort's filter, then torch.multinomial over the kept probabilities", ALL_OPS,
     TKP_OUT_SAMPLE, TKP_CPU | TKP_GPU, no_options);
PEER(torch_topk, "torch.topk", "torch", "torch.topk, a top-k reference", TKP_TOPK, TKP_OUT_SET,
     TKP_CPU | TKP_GPU, no_options);
PEER(vllm_pytorch, "vllm.pytorch", "vllm",
     "vLLM's apply_top_k_top_p_pytorch, the sort baseline of the Qrita paper", ALL_OPS,
     TKP_OUT_SET, TKP_CPU | TKP_GPU, no_options);
PEER(vllm_triton, "vllm.triton", "vllm",
     "vLLM's apply_top_k_top_p, its sampler's entry point (the Triton Qrita kernels)", ALL_OPS,
     TKP_OUT_SET, TKP_GPU, no_options);
PEER(fi_sampling, "flashinfer.sampling", "flashinfer-python",
     "FlashInfer's top_k_top_p_sampling_from_logits (rejection sampling), deterministic",
     ALL_OPS, TKP_OUT_SAMPLE, TKP_GPU, order_options);
PEER(fi_sampling_probs, "flashinfer.sampling_probs", "flashinfer-python",
     "FlashInfer's top_k_top_p_sampling_from_probs (rejection sampling), deterministic",
     ALL_OPS, TKP_OUT_SAMPLE, TKP_GPU, input_order_entry_options);
PEER(fi_min_p, "flashinfer.min_p", "flashinfer-python",
     "FlashInfer's min_p_sampling_from_probs (rejection sampling), min-p alone, deterministic; "
     "per-row seeds and offsets as tensors with row_keys = 1",
     TKP_MINP, TKP_OUT_SAMPLE, TKP_GPU, input_options);
PEER(fi_top_k_mask, "flashinfer.top_k_mask", "flashinfer-python",
     "FlashInfer's top_k_mask_logits", TKP_TOPK, TKP_OUT_SET, TKP_GPU, no_options);
PEER(fi_renorm, "flashinfer.renorm", "flashinfer-python",
     "FlashInfer's top_k_renorm_probs then top_p_renorm_probs; kept = probability > 0", ALL_OPS,
     TKP_OUT_SET, TKP_GPU, input_options);
PEER(fi_topk, "flashinfer.topk", "flashinfer-python",
     "FlashInfer's radix top-k (flashinfer.topk.top_k), deterministic", TKP_TOPK, TKP_OUT_SET,
     TKP_GPU, no_options);
PEER(fi_cake, "flashinfer.cake", "flashinfer-python",
     "FlashInfer's cake_sampling.top_k_top_p_sampling_from_probs (k <= 1024), the cake peer",
     TKP_TOPK | TKP_TOPK_TOPP, TKP_OUT_SAMPLE, TKP_GPU, input_options);
PEER(sglang_via_flashinfer, "sglang.via_flashinfer", "flashinfer-python",
     "SGLang 0.5.23's sampler call on CUDA: FlashInfer's top_k_top_p_sampling_from_probs, joint "
     "order; FlashInfer's binary, not an sgl-kernel build (k = 1 and no filter: unsupported, "
     "SGLang calls no kernel there)",
     ALL_OPS, TKP_OUT_SAMPLE, TKP_GPU, input_options);

/* cub.topk: native, its code in peers/cub/cub_topk.cu, built only with CUDA and CUB 3.3+'s
 * headers (Makefile CCCL_133). */
#ifdef TKP_HAVE_CCCL133
extern const struct tkp_impl tkp_peer_cub_topk_gpu;
#define CUB_TOPK_GPU (&tkp_peer_cub_topk_gpu)
#else
#define CUB_TOPK_GPU ((const struct tkp_impl *)0)
#endif
static const struct tkp_peer cub_topk = {
    .algo = { .abi = TKP_ABI, .name = "cub.topk",
              .summary = "CUB's AIR top-k (cub::DeviceBatchedTopK for V <= 8192, else "
                         "cub::DeviceTopK a row), native C/CUDA; ties at the k-th logit as CUB "
                         "leaves them",
              .ops = TKP_TOPK, .outputs = TKP_OUT_SET, .flags = TKP_PEER,
              .options = no_options, .opts_size = sizeof(struct peer_opts), .gpu = CUB_TOPK_GPU },
    .package = "nvidia-cuda-cccl 13.3 (CUB headers, compiled in)",
    .backends = TKP_GPU,
    .native = "cub.topk is not in this build: it needs a CUDA build with CUB 3.3+'s headers "
              "(`make cccl-headers`, or make CCCL_133=<folder>; docs/PEERS.md, \"cub.topk\")",
};

/* The memory floors: native, C and CUDA in peers/floor/ (docs/PEERS.md, "Memory floors"). No
 * outputs, so never judged: every cell of any mode is theirs to time. */
#define FLOOR_PEER(id, label, about, cpu_impl, gpu_impl)                                       \
    static const struct tkp_peer id = {                                                       \
        .algo = { .abi = TKP_ABI, .name = label, .summary = about, .ops = ALL_OPS | TKP_MINP, \
                  .outputs = 0, .flags = TKP_PEER, .options = no_options,                    \
                  .opts_size = sizeof(struct peer_opts), .cpu = &(cpu_impl),                  \
                  .gpu = TKP_GPU_IMPL(gpu_impl) },                                            \
        .package = "none (peers/floor/, compiled in)", .backends = TKP_CPU | TKP_GPU,         \
        .native = "the memory floors' GPU code is in CUDA builds only (make without "         \
                  "CPU_ONLY, with nvcc)",                                                     \
    }
FLOOR_PEER(floor_read, "floor.read",
           "the read floor: every byte of the batch's logits read once (16-byte loads over the "
           "whole device), one word a CTA written; not a sampler, never judged",
           tkp_floor_read_cpu, tkp_floor_read_gpu);
FLOOR_PEER(floor_copy, "floor.copy",
           "the copy floor: every byte of the batch's logits read and written once (into its "
           "workspace); not a sampler, never judged",
           tkp_floor_copy_cpu, tkp_floor_copy_gpu);

const struct tkp_peer *const tkp_peers[] = {
    &torch_sort,    &torch_sample, &torch_topk, &vllm_pytorch, &vllm_triton,
    &fi_sampling,   &fi_sampling_probs, &fi_min_p, &fi_top_k_mask, &fi_renorm, &fi_topk,
    &fi_cake,       &sglang_via_flashinfer, &cub_topk, &floor_read, &floor_copy, NULL,
};

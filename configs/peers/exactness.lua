-- exactness.lua — every peer (docs/PEERS.md) and every module judged by the oracle on hostile
-- rows: ties (bf16-rounded logits), -inf (half the row masked), NaN and +inf, flat rows without
-- outliers, and extreme k and p, every row of every cell checked. Timing is not the point:
-- one repetition. The rows_exact / rows_checked columns are the finding; a peer's message
-- names its first differing row. On the CPU backend the GPU-only peers record `unsupported`.
--
-- On the GPU the sweep "exactness_16bit" repeats the grid on bf16 logits (docs/PEERS.md,
-- "16-bit logits"): the same rows rounded to the 16-bit type, each peer fed the encodings and
-- judged on their exact upcast, so that a native 16-bit path that differs from its float32 one
-- shows. (The CPU plan is the float32 sweep alone.) f16 is left out of `make reproduce`'s 25
-- minutes: no engine the paper measures feeds f16 logits, and each 16-bit type costs as much as the
-- float32 sweep (115 s on the H200); `{ "bf16", "f16" }` below brings it back.
local peers = {
    "torch.sort", "torch.sample", "torch.topk", "vllm.pytorch", "vllm.triton",
    "flashinfer.sampling", { "flashinfer.sampling", order = "joint" },
    "flashinfer.sampling_probs", "flashinfer.top_k_mask", "flashinfer.renorm", "flashinfer.topk",
    "flashinfer.cake", "sglang.via_flashinfer", "cub.topk",
}
local modules = { "naive_sort", "rtopk", "qrita", "cake", "rejection" }
local algos = {}
for _, a in ipairs(modules) do algos[#algos + 1] = a end
for _, a in ipairs(peers) do algos[#algos + 1] = a end

-- The grid in the element types `dtypes` (nil: the default, f32).
local function grid(dtypes)
    return {
        algos = algos,
        dataset = { "gaussian", "flat", "bf16", "masked", "nan_inf" },
        vocab = backend == "cpu" and 4096 or 32768, batch = 16,
        k = { 0, 1, 50, 1000 }, p = { 0.0, 0.9, 1.0 },
        dtype = dtypes,
        where = function(c) return c.mode ~= "none" end,
        verify = 16, draws = 256,
        timing = { warmup = 1, min_reps = 1, max_reps = 1, max_seconds = 1 },
    }
end

sweep "exactness" (grid(nil))
if backend == "gpu" then
    sweep "exactness_16bit" (grid({ "bf16" }))
end

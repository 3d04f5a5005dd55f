-- fig2_real.lua — a slice of the Qrita paper's Figure 2 (fig2_throughput.lua) on real-model
-- logits: SmolLM2-135M-Instruct's next-token logits on a public-domain English text
-- (datasets/real/README.md; V = 49152, REAL_ROWS rows: the Makefile's), written by `make real-logits`.
-- Throughput against batch size in the three modes top-k 50, top-p 0.9 and top-k 50 then
-- top-p 0.9, for the five modules and the peers, with every row of every cell checked against
-- the oracle. Batches stop at the file's rows (a larger batch would repeat rows). Another model
-- and vocabulary than the paper's: a check of Figure 2's ordering on real logits, not a row of
-- it. A run whose cells read the file fails before it starts, naming the file and the target,
-- when the file is missing. On the CPU backend a CPU-sized grid (batches 1 to 16, the peers
-- with a CPU path: 105 cells, 24 s on 2 cores); on the GPU batches 1 to 64 (powers of 2) and
-- vLLM's two baselines, torch.sort and FlashInfer's kernels as fig2_throughput.lua lists them.
local SMALL = backend == "cpu"
local REAL_ROWS = 96

local modules = { "naive_sort", "rtopk", "qrita", "cake", "rejection" }
local cpu_peers = { "vllm.pytorch", "torch.sort" }
local gpu_peers = {
    "vllm.pytorch", "vllm.triton", "torch.sort",
    "flashinfer.sampling", { "flashinfer.sampling_probs", input = "probs" },
    { "flashinfer.sampling_probs", input = "softmax" }, "flashinfer.top_k_mask", "flashinfer.topk",
    { "flashinfer.cake", input = "probs" }, { "flashinfer.cake", input = "softmax" },
}
local algos = {}
for _, a in ipairs(modules) do algos[#algos + 1] = a end
for _, a in ipairs(SMALL and cpu_peers or gpu_peers) do algos[#algos + 1] = a end

sweep "fig2_real" {
    algos = algos,
    dataset = file("../../datasets/real/smollm2-135m.h5", "make real-logits"),
    vocab = { 49152 },
    batch = SMALL and pow2(0, 4) or pow2(0, 6),
    k = { 0, 50 },   -- 0: top-k off
    p = { 0.9, 1.0 }, -- 1.0: top-p off
    where = function(c) return c.mode ~= "none" and c.batch <= REAL_ROWS end,
    timing = SMALL and { warmup = 1, min_reps = 3, max_reps = 5, max_seconds = 0.2 } or nil,
    verify = REAL_ROWS, -- every row of every cell
}

-- targets.lua — the cells whose H200 times have targets (the modules against their peers,
-- docs/GPU-MACHINE.md "Measured on an H200", results/h200/README.md), on the data shape
-- the peers were measured on (docs/H200-PEERS.md: N(0, sigma) + 20-100 outliers at 4-12 sigma;
-- sigma 1 for top-k and top-k+top-p, sigma 2 for top-p alone). Median kernel time, L2 flushed.
-- The peers of each cell (docs/PEERS.md) run in the same sweep, on the same logits, so that
-- every module's time has its peers' beside it from one run.
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 }

local lists = include "lib/algo_lists.lua"
local join, probs_and_softmax = lists.join, lists.probs_and_softmax
local sort_peers = { "vllm.pytorch", "vllm.triton" }
local samplers = join({ "flashinfer.sampling" }, probs_and_softmax("flashinfer.sampling_probs"),
                      { "sglang.via_flashinfer" })

sweep "topk50" {
    algos = join({ "naive_sort", "rtopk", "qrita" }, sort_peers,
                 { "torch.topk", "flashinfer.topk", "flashinfer.top_k_mask" }),
    dataset = "peers_s1", vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 1.0,
    timing = timing,
}
sweep "topk50_topp09" {
    algos = join({ "naive_sort", "qrita", "cake", "rejection" }, sort_peers, samplers,
                 { { "flashinfer.sampling", order = "joint" }, "flashinfer.renorm" },
                 probs_and_softmax("flashinfer.cake")),
    dataset = { "peers_s1", "flat" },
    vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 0.9, timing = timing,
}
sweep "topp09" {
    algos = join({ "naive_sort", "qrita", "rejection" }, sort_peers, samplers, { "flashinfer.renorm" }),
    dataset = "peers_s2", vocab = 151936, batch = { 1, 1024 }, k = 0, p = 0.9, timing = timing,
}
sweep "cake_k1000" {
    algos = join({ "cake" }, probs_and_softmax("flashinfer.cake"),
                 probs_and_softmax("flashinfer.sampling_probs")),
    dataset = "peers_s1", vocab = 262144, batch = 128, k = 1000, p = 0.9, timing = timing,
}

-- targets_bf16.lua — the modules' top-k 50 + top-p 0.9 targets (targets.lua, sweep
-- "topk50_topp09") on float32 and on bfloat16 logits in one run: qrita, cake and rejection at
-- V = 128256 and 262144 and B = 1, 128 and 1024, on the peers' data shape (docs/H200-PEERS.md:
-- N(0, 1) + 20-100 outliers at 4-12 sigma). A bf16 cell reads half the bytes of its f32 twin, so
-- its memory floor is that of its own bytes (scripts/floor-table.py); each module's kept set and
-- draws on a bf16 row equal those on its float32 upcast (docs/SEMANTICS.md, "16-bit logits"). A
-- module that does not read bf16 records its bf16 cells `unsupported`. Median kernel time, L2
-- flushed: `topkp run configs/h200/targets_bf16.lua --backend gpu`.
sweep "topk50_topp09_dtype" {
    algos = { "qrita", "cake", "rejection" },
    dataset = "peers_s1", vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 0.9,
    dtype = { "f32", "bf16" },
    timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 },
}

-- The peers of the same cells (targets.lua's list), on float32 logits and on the same bf16
-- logits: a peer whose API takes float32 (docs/PEERS.md, "16-bit logits") has the cast timed in,
-- as an engine pays it today; the modules' bf16 time is judged against the best of them.
-- The list helpers targets.lua uses too.
local lists = include "lib/algo_lists.lua"
local join, probs_and_softmax = lists.join, lists.probs_and_softmax
sweep "topk50_topp09_dtype_peers" {
    algos = join({ "vllm.pytorch", "vllm.triton", "flashinfer.sampling",
                   { "flashinfer.sampling", order = "joint" }, "flashinfer.renorm" },
                 probs_and_softmax("flashinfer.sampling_probs"), probs_and_softmax("flashinfer.cake")),
    dataset = "peers_s1", vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 0.9,
    dtype = { "f32", "bf16" },
    timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 },
}

-- floor_cells.lua — the cells of the memory-floor targets on the H100 (algos/*/README.md):
-- configs/h200/floor_grid.lua's four modes, the modules and the peers each is held to, on two
-- of its vocabularies and five of its batches, and each module in float32 and bf16 at B = 1024.
-- Included by floor_targets.lua (with the floors) and floor_targets_modules.lua (without).
local timing = { warmup = 3, min_reps = 10, max_reps = 60, max_seconds = 0.3, target_rel = 0.01 }
local vocab = { 128256, 262144 }
local batch = { 1, 16, 128, 256, 1024 }

local fi_cake = { "flashinfer.cake", input = "probs" }
local fi_rejection = { "flashinfer.sampling_probs", input = "probs", entry = "single" }
local fi_rejection_joint = { "flashinfer.sampling_probs", input = "probs", order = "joint" }

local function grid(algos, dataset, k, p)
    return { algos = algos, dataset = dataset, vocab = vocab, batch = batch, k = k, p = p,
             timing = timing }
end

sweep "topk50" (grid({ "qrita", "cake", "rejection", "vllm.triton", fi_cake, fi_rejection },
                     "peers_s1", 50, 1.0))
sweep "topp09" (grid({ "qrita", "rejection", "vllm.triton", fi_rejection }, "peers_s2", 0, 0.9))
sweep "topk50_topp09" (grid({ "qrita", "cake", "rejection", "vllm.triton", fi_cake,
                              fi_rejection, fi_rejection_joint }, "peers_s1", 50, 0.9))
sweep "topk1000_topp09" (grid({ "qrita", "cake", "rejection", "vllm.triton", fi_cake,
                                fi_rejection, fi_rejection_joint }, "peers_s1", 1000, 0.9))
-- 16-bit logits at their own floor: each module in float32 and bf16 at B = 1024 (the target:
-- bf16 at least 1.6x faster; scripts/floor-table.py's target 4)
sweep "bf16_b1024" {
    algos = { "qrita", "cake", "rejection" }, dataset = "peers_s1", vocab = vocab, batch = 1024,
    k = 50, p = 0.9, dtype = { "f32", "bf16" }, timing = timing,
}

return { timing = timing, vocab = vocab, batch = batch }

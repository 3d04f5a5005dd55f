-- floor_grid.lua — the memory-floor targets of qrita, cake and rejection against their peers
-- (algos/*/README.md, results/h200/README.md): every vocabulary of the paper's models but one
-- x seven batches x four modes, the modules and the peers they are held to in one sweep, on the
-- same logits (N(0, sigma) + 20-100 outliers at 4-12 sigma: sigma 1, or 2 for top-p alone).
-- FlashInfer's samplers take probabilities computed outside the timed region (input = probs):
-- the kernel alone, the strictest comparison. Medians with the L2 flushed.
local timing = { warmup = 3, min_reps = 10, max_reps = 60, max_seconds = 0.3, target_rel = 0.01 }
local vocab = { 128256, 151936, 201088, 262144 }
local batch = { 1, 4, 16, 64, 128, 256, 1024 }

local fi_cake = { "flashinfer.cake", input = "probs" }
local fi_rejection = { "flashinfer.sampling_probs", input = "probs", entry = "single" }
local fi_rejection_joint = { "flashinfer.sampling_probs", input = "probs", order = "joint" }

sweep "topk50" {
    algos = { "qrita", "cake", "rejection", "vllm.triton", fi_cake, fi_rejection },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 50, p = 1.0, timing = timing,
}
sweep "topp09" {
    algos = { "qrita", "rejection", "vllm.triton", fi_rejection },
    dataset = "peers_s2", vocab = vocab, batch = batch, k = 0, p = 0.9, timing = timing,
}
sweep "topk50_topp09" {
    algos = { "qrita", "cake", "rejection", "vllm.triton", fi_cake, fi_rejection,
              fi_rejection_joint },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 50, p = 0.9, timing = timing,
}
sweep "topk1000_topp09" {
    algos = { "qrita", "cake", "rejection", "vllm.triton", fi_cake, fi_rejection,
              fi_rejection_joint },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 1000, p = 0.9, timing = timing,
}
-- The floors of every (V, B) of the grid, in the same run and by the same timer as the cells
-- held to them (docs/PEERS.md, "Memory floors"; scripts/floor-table.py reads them from here).
sweep "floors" {
    algos = { "floor.read", "floor.copy" }, dataset = "peers_s1", vocab = vocab, batch = batch,
    k = 50, p = 1.0, dtype = { "f32", "bf16" }, timing = timing,
}

-- floor_grid_rejection.lua — floor_grid.lua's grid for rejection and the FlashInfer samplers it is
-- held to (probabilities in, the single-filter and the joint entry points), run again after a
-- change to rejection alone (algos/rejection/README.md).
local timing = { warmup = 3, min_reps = 10, max_reps = 60, max_seconds = 0.3, target_rel = 0.01 }
local vocab = { 128256, 151936, 201088, 262144 }
local batch = { 1, 4, 16, 64, 128, 256, 1024 }
local fi_rejection = { "flashinfer.sampling_probs", input = "probs", entry = "single" }
local fi_rejection_joint = { "flashinfer.sampling_probs", input = "probs", order = "joint" }

sweep "topk50" {
    algos = { "rejection", fi_rejection },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 50, p = 1.0, timing = timing,
}
sweep "topp09" {
    algos = { "rejection", fi_rejection },
    dataset = "peers_s2", vocab = vocab, batch = batch, k = 0, p = 0.9, timing = timing,
}
sweep "topk50_topp09" {
    algos = { "rejection", fi_rejection, fi_rejection_joint },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 50, p = 0.9, timing = timing,
}
sweep "topk1000_topp09" {
    algos = { "rejection", fi_rejection, fi_rejection_joint },
    dataset = "peers_s1", vocab = vocab, batch = batch, k = 1000, p = 0.9, timing = timing,
}

-- samplers.lua — the sampler cells of targets.lua (cake, rejection: H200 times with targets,
-- docs/GPU-MACHINE.md "Measured on an H200"), on the data shapes the peers were measured on
-- (docs/H200-PEERS.md: N(0, sigma) + 20-100 outliers at 4-12 sigma, sigma 1; flat = N(0, 1)).
-- Median kernel time, L2 flushed. A subset of targets.lua, quick enough to rerun after a
-- sampler change.
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 }

sweep "samplers_topk50_topp09" {
    algos = { "cake", "rejection" }, dataset = { "peers_s1", "flat" },
    vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 0.9, timing = timing,
}
sweep "cake_k1000" {
    algos = { "cake" }, dataset = "peers_s1",
    vocab = 262144, batch = { 1, 128 }, k = 1000, p = 0.9, timing = timing,
}

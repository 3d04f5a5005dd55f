-- profile.lua — the small-batch target cells, a few repetitions each, for `ncu` per-kernel
-- times on the H200 (scripts/h200-profile.sh). Not a measurement config: use targets.lua.
local timing = { warmup = 1, min_reps = 2, max_reps = 2, max_seconds = 1.0 }

sweep "qrita_topk" {
    algos = "qrita", dataset = "peers_s1", vocab = 128256, batch = { 1, 128 },
    k = 50, p = 1.0, timing = timing,
}
sweep "qrita_topp" {
    algos = "qrita", dataset = "peers_s2", vocab = 151936, batch = 1, k = 0, p = 0.9,
    timing = timing,
}
sweep "samplers" {
    algos = { "cake", "rejection" }, dataset = "peers_s1", vocab = 128256, batch = { 1, 128 },
    k = 50, p = 0.9, timing = timing,
}

-- probe_rejection.lua — rejection with top-p alone and with k 50 + p 0.9 at large batch, for
-- forced launch shapes (TKP_REJ_CLUSTER=8|16) against the plan's own (algos/rejection/README.md).
-- Not a measurement config: floor_grid.lua is.
local timing = { warmup = 2, min_reps = 10, max_reps = 30, max_seconds = 0.5, target_rel = 0.01 }

sweep "topp" {
    algos = "rejection", dataset = "peers_s2", vocab = { 151936, 262144 }, batch = { 128, 1024 },
    k = 0, p = 0.9, timing = timing,
}
sweep "k50_p09" {
    algos = "rejection", dataset = "peers_s1", vocab = 151936, batch = 1024, k = 50, p = 0.9,
    timing = timing,
}

-- probe_floor.lua — a few repetitions of the cells where the memory-floor targets of
-- algos/*/README.md are furthest off (cake at B >= 128, rejection with top-p alone, qrita at
-- B >= 128), for Nsight Compute runs and forced-variant experiments (TKP_REJ_CLUSTER,
-- TKP_CAKE_CLUSTER) on the H200. Not a measurement config: floor_grid.lua is.
local timing = { warmup = 1, min_reps = 3, max_reps = 3, max_seconds = 1.0 }

sweep "cake_k50" {
    algos = "cake", dataset = "peers_s1", vocab = { 128256, 262144 }, batch = { 128, 1024 },
    k = 50, p = 0.9, timing = timing,
}
sweep "rejection_topp" {
    algos = "rejection", dataset = "peers_s2", vocab = 151936, batch = { 1, 128, 1024 },
    k = 0, p = 0.9, timing = timing,
}
sweep "qrita_k50" {
    algos = "qrita", dataset = "peers_s1", vocab = { 128256, 262144 }, batch = { 128, 1024 },
    k = 50, p = { 1.0, 0.9 }, timing = timing,
}
sweep "qrita_k1000" {
    algos = "qrita", dataset = "peers_s1", vocab = 262144, batch = 1024, k = 1000, p = 0.9,
    timing = timing,
}
sweep "qrita_topp" {
    algos = "qrita", dataset = "peers_s2", vocab = 151936, batch = { 16, 1024 }, k = 0, p = 0.9,
    timing = timing,
}

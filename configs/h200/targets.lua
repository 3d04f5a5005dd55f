-- targets.lua — the cells of issues 5 and 6 whose H200 times have targets, on the data shape
-- the peers were measured on (H200-PEERS.md: N(0, sigma) + 20-100 outliers at 4-12 sigma;
-- sigma 1 for top-k and top-k+top-p, sigma 2 for top-p alone). Median kernel time, L2 flushed.
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 }

sweep "topk50" {
    algos = { "naive_sort", "rtopk", "qrita" }, dataset = "peers_s1",
    vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 1.0, timing = timing,
}
sweep "topk50_topp09" {
    algos = { "naive_sort", "qrita", "cake", "rejection" }, dataset = { "peers_s1", "flat" },
    vocab = { 128256, 262144 }, batch = { 1, 128, 1024 }, k = 50, p = 0.9, timing = timing,
}
sweep "topp09" {
    algos = { "naive_sort", "qrita", "rejection" }, dataset = "peers_s2",
    vocab = 151936, batch = { 1, 1024 }, k = 0, p = 0.9, timing = timing,
}
sweep "cake_k1000" {
    algos = { "cake" }, dataset = "peers_s1",
    vocab = 262144, batch = 128, k = 1000, p = 0.9, timing = timing,
}

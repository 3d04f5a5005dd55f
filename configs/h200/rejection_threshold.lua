-- rejection_threshold.lua — the rejection sampler on both sides of the one-CTA kernels'
-- thread switch (1024 threads per row up to SMs rows, 512 above: the A/B of that threshold
-- against 2 x SMs, algos/rejection/README.md "Launch shape"), k = 50 then p = 0.9, peaked and
-- flat rows. Ran as diag/threshold.lua (the same sweep).
local timing = { warmup = 3, min_reps = 50, max_reps = 300, max_seconds = 0.5, target_rel = 0.005 }
sweep "rejection_threshold" {
    algos = { "rejection" }, dataset = { "peers_s1", "flat" },
    vocab = { 128256, 262144 }, batch = { 64, 128, 133, 160, 200, 256 }, k = 50, p = 0.9,
    timing = timing,
}

-- rejection_batches.lua — the rejection sampler across the batch sizes where its one-CTA
-- kernels change (1024 threads up to SMs rows, 512 threads above), k = 50 then
-- p = 0.9, peaked and flat rows, every repetition kept (the samples dataset) so that a
-- timing tail shows. For A/B runs of two builds on one device (scripts or by hand).
local timing = { warmup = 3, min_reps = 50, max_reps = 300, max_seconds = 0.5, target_rel = 0.005 }

sweep "rejection_batches" {
    algos = { "rejection" }, dataset = { "peers_s1", "flat" },
    vocab = { 128256, 262144 }, batch = { 128, 256, 264, 512, 1024 }, k = 50, p = 0.9,
    timing = timing,
}

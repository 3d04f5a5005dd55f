-- quick.lua — the default run (`make run`): every algorithm on the synthetic Gaussian
-- dataset, time against batch size at one vocabulary, top-k 50 then top-p 0.9.
-- About 15 seconds on two CPU cores (15 s measured at 67ea0b5: docs/CAMPAIGN.md, "Reproducing the
-- Qrita paper"); the same file runs unchanged on the GPU backend.
sweep "quick" {
    algos = { "naive_sort", "rtopk", "qrita", "cake", "rejection" },
    dataset = "gaussian",
    vocab = { 32768 },
    batch = { 1, 4, 16, 64 },
    k = { 50 },
    p = { 0.9, 1.0 },
    timing = { min_reps = 10, max_reps = 20, max_seconds = 0.5 },
}

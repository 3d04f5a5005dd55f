-- k_by_p.lua — a k x p sweep at one shape, for the figures' X/BY/FACET flags (docs/FIGURES.md,
-- "Figures"): time against k, a series per p, e.g.
--   make figures RESULTS=results/k_by_p.h5 X=k BY=p FACET=algo
-- p = 1.0 turns top-p off (the top-k-only series). About a minute on two CPU cores.
sweep "k_by_p" {
    algos   = { "naive_sort", "qrita", "cake", "rejection" },
    dataset = "gaussian",
    vocab   = 32768,
    batch   = 16,
    k       = { 1, 8, 50, 200, 1000 },
    p       = { 0.5, 0.9, 0.99, 1.0 },
    timing  = { warmup = 1, min_reps = 5, max_reps = 10, max_seconds = 0.3 },
}

sweep "tiny" {
    algos = { "naive_sort", "qrita" },
    dataset = "gaussian",
    vocab = { 16 },
    batch = { 2 },
    k = { 4 },
    p = { 0.9 },
    draws = 2,
    timing = { min_reps = 1, max_reps = 1, max_seconds = 0.01 },
}

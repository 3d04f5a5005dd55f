sweep "tiny" {
    algos = { "naive_sort", "qrita" },
    dataset = "gaussian",
    vocab = { 16 },
    batch = { 2 },
    k = { 4 },
    p = { 0.9 },
    draws = 2,
    timing = { 2 },
    k = { 4 },
    p = {ax_seconds = 0.01 },
}

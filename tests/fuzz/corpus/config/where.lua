sweep "w" {
    algos = { "cake", "rejection" },
    dataset = file "x.h5",
    vocab = { 32 }, batch = { 1 }, k = { 8, 50 }, p = { 0.5 },
    where = function(cell) return cell.k < 32 and backend == "cpu" end,
}

sweep "smoke" { algos = { "naive_sort" }, vocab = 1000, batch = 2, k = 5 }

sweep "bad" { algos = { "qrita" }, dataset = "gaussian", vocab = { 16 }, batch = { 1 }, kk = { 1 } }

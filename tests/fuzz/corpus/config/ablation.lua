ablation "abl" {
    base = { dataset = "gaussian", vocab = pow2(4, 5), batch = range(1, 3, 2), k = { 2 }, p = { 1.0 } },
    variants = { A = { "qrita" }, B = { "rtopk" } },
}

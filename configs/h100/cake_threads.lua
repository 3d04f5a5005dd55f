-- cake_threads.lua — cake's two CTA shapes side by side (algos/cake/README.md, "Two CTAs a SM"):
-- run it twice in one device call, once as is (512 threads a CTA, one CTA a SM) and once with
-- TKP_CAKE_THREADS=256 (two CTAs a SM), and compare the files cell by cell (`topkp compare`).
-- The rows of a wave overlap one another's tails only past 132 rows (one a SM), hence the
-- batches; B = 1 and 128 show what the smaller CTA costs where nothing overlaps.
sweep "cake_threads" {
    algos = "cake", dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 1024, 512, 256, 128, 1 }, k = 50, p = 0.9, dtype = { "f32", "bf16" },
}

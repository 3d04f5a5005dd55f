-- cake_threads.lua — cake's two CTA shapes side by side (algos/cake/README.md, "Two CTAs a SM"):
-- at 28133bb it ran twice in one device call, with TKP_CAKE_THREADS=512 (one CTA a SM) and
-- =256 (two CTAs a SM), compared cell by cell (`topkp compare`). Since the H100's dispatch
-- table sets `threads` (the hook acts only under auto), name the shape by the option instead,
-- as configs/h100/batch_variants.lua does (it places the cut between them).
-- The rows of a wave overlap one another's tails only past 132 rows (one a SM), hence the
-- batches; B = 1 and 128 show what the smaller CTA costs where nothing overlaps.
sweep "cake_threads" {
    algos = "cake", dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 1024, 512, 256, 128, 1 }, k = 50, p = 0.9, dtype = { "f32", "bf16" },
}

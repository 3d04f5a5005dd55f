-- qrita_heavy.lua — qrita past B = #SMs, where a warp searches each row's buffer (8 rows a
-- block) and hands a row of more than HEAVY_N = 4096 candidates to a block (algos/qrita/README.md,
-- "Past B = #SMs"): at k = 1000 a row holds ~2000 candidates and one warp searches them all.
-- Run it with TKP_QRITA_HEAVY_N=4096 (what "as is" ran before the option heavy_n=auto), =1024
-- and =0 (every such row to a block) in one device call, and compare the files cell by cell
-- (`topkp compare`); k = 50 shows what the hand-off costs where a warp's search is short.
sweep "qrita_heavy" {
    algos = "qrita", dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 1024, 256 }, k = { 1000, 50 }, p = { 0.9, 1.0 },
}

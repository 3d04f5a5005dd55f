-- rejection_big_list.lua — rejection's k-th key from pass 1's big list
-- (algos/rejection/README.md, "The k-th key from pass 1's list") against the build without
-- it, and one CTA a row against the cluster variant where the cost model takes a cluster
-- (B <= 16): k = 300-1000 on peers_s1 rows, FlashInfer's samplers (probabilities in) beside
-- them. Run it twice in one device call, the second time with TKP_REJ_BIG_LIST=0 (the
-- ablation), and compare the files (results/h100-2026-12-06/big-list/):
--   build/gpu/topkp run configs/h100/rejection_big_list.lua --backend gpu -o big.h5
--   TKP_REJ_BIG_LIST=0 build/gpu/topkp run configs/h100/rejection_big_list.lua --backend gpu \
--       --only rejection -o small.h5
local timing = { warmup = 3, min_reps = 10, max_reps = 60, max_seconds = 0.3, target_rel = 0.01 }
local one_cta = { "rejection", cluster = "1" }
local fi_rejection = { "flashinfer.sampling_probs", input = "probs", entry = "single" }
local fi_rejection_joint = { "flashinfer.sampling_probs", input = "probs", order = "joint" }

sweep "k1000_p09" {
    algos = { "rejection", one_cta, fi_rejection, fi_rejection_joint }, dataset = "peers_s1",
    vocab = { 128256, 262144 }, batch = { 1, 4, 16, 128, 256, 1024 }, k = 1000, p = 0.9,
    timing = timing,
}
sweep "k1000_alone" {
    algos = { "rejection", fi_rejection }, dataset = "peers_s1", vocab = 128256,
    batch = { 16, 128, 1024 }, k = 1000, p = 1.0, timing = timing,
}
sweep "k300_600" {
    algos = { "rejection", one_cta }, dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 1, 16, 128, 1024 }, k = { 300, 600 }, p = 0.9, timing = timing,
}
-- k <= 256 plans no big list: the same kernels' cells, to see that nothing else moved
sweep "k50_unchanged" {
    algos = { "rejection" }, dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 1, 128, 1024 }, k = 50, p = 0.9, timing = timing,
}

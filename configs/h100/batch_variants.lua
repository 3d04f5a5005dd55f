-- batch_variants.lua — where two launch variants change places as the batch grows past the
-- device's SMs (132 on the H100 and the H200), each variant named by its option in one run:
-- cake's CTA shape (threads=512: one CTA a SM; threads=256: two, algos/cake/README.md "Two CTAs
-- a SM"), qrita's hand-off of a warp's row to a block (heavy_n=4096 or 0,
-- algos/qrita/README.md "Past B = #SMs") and rejection's CTA shape where a CTA takes a row
-- (threads=512: two CTAs a SM; 256: four; cluster=1 so that no cluster takes the small
-- batches). The options' auto rules (cake: 256 past #SMs rows when k <= 256; qrita: 0 up to
-- twice #SMs rows, four times where V x k > 2^27 with k > 256; rejection: 1024 where a row has
-- top-p alone, else 512 past #SMs rows and 256 from four times #SMs when k <= 256) are placed
-- from these cells; auto itself runs beside them (on a device whose dispatch table sets cake's
-- threads, cake's auto cells take the table's shape: the same cells as an explicit one, run
-- once).
--   build/gpu/topkp run configs/h100/batch_variants.lua --backend gpu -o batch_variants.h5
local timing = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 0.3, target_rel = 0.01 }

sweep "cake_threads_by_batch" {
    algos = { { "cake", threads = "512" }, { "cake", threads = "256" }, "cake" },
    dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 128, 133, 160, 200, 264, 384, 512, 1024 },
    k = { 50, 1000 }, p = 0.9, dtype = { "f32", "bf16" }, timing = timing,
}

sweep "qrita_heavy_by_batch" {
    algos = { { "qrita", heavy_n = "4096" }, { "qrita", heavy_n = "0" }, "qrita" },
    dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 133, 160, 200, 264, 384, 512, 768, 1024 },
    k = { 50, 1000 }, p = { 0.9, 1.0 }, timing = timing,
}

-- cake's shapes between k = 50 (256 faster past #SMs rows) and 1000 (256 slower: the
-- candidates overflow its 4096-entry list), for the k bound of threads=auto
sweep "cake_threads_by_k" {
    algos = { { "cake", threads = "512" }, { "cake", threads = "256" } },
    dataset = "peers_s1", vocab = 128256, batch = { 264, 1024 },
    k = { 64, 128, 256, 512 }, p = 0.9, dtype = { "f32", "bf16" }, timing = timing,
}

-- rejection's one-CTA-a-row shapes (cluster=1): 1024 threads (one a SM), 512 (two) and 256
-- (four, so that one CTA's tail overlaps three others' streams); k = 256 and 1000 check the
-- bound of 256 (measured at k = 50 and top-p alone only: algos/rejection/README.md, "GPU")
sweep "rejection_threads_by_batch" {
    algos = { { "rejection", cluster = "1", threads = "1024" },
              { "rejection", cluster = "1", threads = "512" },
              { "rejection", cluster = "1", threads = "256" }, "rejection" },
    dataset = "peers_s1", vocab = { 128256, 262144 },
    batch = { 64, 132, 133, 264, 528, 1024 },
    k = { 50, 256, 1000, 0 }, p = 0.9, dtype = { "f32", "bf16" }, timing = timing,
}

-- top-p alone, 1024 against 512 threads on both benchmark datasets in one run: the rule's 1024
-- for top-p rows was read off peers_s1 rows (above), and the floor targets' peers_s2 rows took
-- 1.03-1.10x longer with it across two runs (results/h100-2026-12-06/README.md, "The floor
-- targets at c120595")
sweep "rejection_topp_threads_by_dataset" {
    algos = { { "rejection", cluster = "1", threads = "1024" },
              { "rejection", cluster = "1", threads = "512" } },
    dataset = { "peers_s1", "peers_s2" }, vocab = { 128256, 262144 }, batch = { 256, 1024 },
    k = 0, p = 0.9, timing = timing,
}

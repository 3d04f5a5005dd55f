-- profile_cake.lua — the cells where cake's tail was found to cost most (one CTA an SM through
-- its row's tail: B = 128; waves of rows: B = 1024), a few repetitions each, for `ncu`'s
-- per-instruction stall samples on the H100 (scripts/ncu-source.sh). Not a measurement config:
-- use configs/h100/seed_table.lua or configs/h200/targets.lua for times.
local timing = { warmup = 1, min_reps = 2, max_reps = 2, max_seconds = 1.0 }

sweep "cake_tail" {
    algos = "cake", dataset = "peers_s1", vocab = 128256, batch = { 128, 1024 },
    k = 50, p = 0.9, timing = timing,
}

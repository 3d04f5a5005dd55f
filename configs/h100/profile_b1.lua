-- profile_b1.lua — one row (B = 1), where the sampling contract's 3 % is tightest, for `ncu`'s
-- per-instruction stall samples on the H100 (scripts/ncu-source.sh with `--sweep S`, skipping
-- the warm-up launch): rejection with min-p off and on (min_p 0.05), cake on bf16 rows. Not a
-- measurement config: configs/sampling/minp_seeds.lua and configs/h100/pass1_ab.lua time these.
local timing = { warmup = 1, min_reps = 2, max_reps = 2, max_seconds = 1.0 }

for _, m in ipairs({ { "off", 0.0 }, { "minp", 0.05 } }) do
    sweep("b1_rejection_" .. m[1]) {
        algos = "rejection", dataset = "gaussian", vocab = 128256, batch = 1,
        k = 50, p = 0.9, min_p = m[2], draws = 1, timing = timing,
    }
end

sweep "b1_cake_bf16" {
    algos = "cake", dataset = "peers_s1", vocab = 128256, batch = 1,
    k = 50, p = 0.9, dtype = "bf16", timing = timing,
}

-- minp_cost.lua — what min-p costs, the smallest same-run grid for an
-- A/B of the fold (algos/common/gpu_minp.cuh): min-p off and 0.05 at B = 1, 128 and 1024 on
-- the full vocabulary (Llama 3's 128256), top-k 50 and top-p 0.9 on. Run it with two builds in
-- one device call and put them side by side with scripts/minp-cost.py (min_p is a column:
-- `topkp compare` or the export pairs the cells that differ only in it). The fuller grid, with
-- per-row seeds, is configs/sampling/minp_seeds.lua. On the CPU a CPU-sized grid.
local SMALL = backend == "cpu"
sweep "minp_cost" {
    algos = { "qrita", "rejection" }, -- the fold is the same for every module: two suffice
    dataset = "gaussian",
    vocab = SMALL and { 4096 } or { 128256 },
    batch = { 1, 128, 1024 },
    k = 50, p = 0.9,
    min_p = { 0.0, 0.05 },
    timing = SMALL and { min_reps = 3, max_reps = 10, max_seconds = 0.2 }
        or { warmup = 3, min_reps = 20, max_reps = 100, max_seconds = 0.5, target_rel = 0.02 },
}

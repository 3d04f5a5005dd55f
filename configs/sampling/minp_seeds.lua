-- minp_seeds.lua — what per-row seeds and min-p cost each sampler: the same cells with batch
-- keying and min-p off (today's problem), with per-row seeds and offsets (row_keys = 1), with
-- min-p 0.05, and with both, at B = 1, 128 and 1024 (docs/SEMANTICS.md, "min-p" and "Sampling:
-- two keying modes"). Every variant of a sampler runs in one sweep, so one results file holds
-- the same-run comparison: min_p and row_keys are columns, and `topkp compare` or the export
-- pair the cells that differ only in them. On the GPU the full vocabulary (Llama 3's 128256);
-- on the CPU a CPU-sized grid. scripts/minp-cost.py puts the old build's run beside this one.
local SMALL = backend == "cpu" -- the CPU-sized grid on the CPU backend, the full one on the GPU
local timing = SMALL and { min_reps = 5, max_reps = 20, max_seconds = 0.3 }
    or { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 }

sweep "minp_seeds_samplers" {
    algos = { "naive_sort", "cake", "rejection" },
    dataset = "gaussian",
    vocab = SMALL and { 4096 } or { 128256 },
    batch = { 1, 128, 1024 },
    k = 50, p = 0.9,
    min_p = { 0.0, 0.05 },
    row_keys = { 0, 1 },
    draws = 1,
    timing = timing,
}

-- the kept-set modules: min-p only (they draw nothing, so per-row seeds do not concern them)
sweep "minp_kept_sets" {
    algos = { "qrita", "naive_sort" },
    dataset = "gaussian",
    vocab = SMALL and { 4096 } or { 128256 },
    batch = { 1, 128, 1024 },
    k = 50, p = 0.9,
    min_p = { 0.0, 0.05 },
    timing = timing,
}

-- min-p with top-k off (top-p 0.9 alone before it): there no part of the row bounds the fold
-- before its count, so the modules count over the row inside their kernels (docs/SEMANTICS.md,
-- "min-p"); cake refuses top-k off past its 1024-entry slab
sweep "minp_topk_off" {
    algos = { "naive_sort", "qrita", "rejection" },
    dataset = "gaussian",
    vocab = SMALL and { 4096 } or { 128256 },
    batch = { 1, 128, 1024 },
    k = 0, p = 0.9,
    min_p = { 0.0, 0.05 },
    timing = timing,
}

-- peers_keys_minp.lua — the peers that take per-row seeds and offsets or min-p, beside our
-- samplers, judged by the same oracle on hostile rows (docs/SEMANTICS.md, "min-p" and
-- "Sampling: two keying modes"; docs/PEERS.md): FlashInfer's samplers with row_keys = 0 (a
-- torch generator) and 1 (seed and offset tensors, FlashInfer's per-request form), and
-- FlashInfer's min_p_sampling_from_probs (min-p alone) at tiny, middling and near-1 min_p. Every
-- row's kept set checked and its draws tested against the kept distribution; then the same
-- cells timed at the full vocabulary, so that what per-row keys cost FlashInfer stands beside
-- what they cost us (configs/sampling/minp_seeds.lua). scripts/batch-invariance.py checks the
-- draws themselves (permuted rows, changed batch-mates, B = 1). On the CPU backend the
-- GPU-only peers record `unsupported`.
local GPU = backend == "gpu"
local samplers = { "naive_sort", "cake", "rejection",
    "flashinfer.sampling", "flashinfer.sampling_probs" }
local check = { warmup = 1, min_reps = 1, max_reps = 1, max_seconds = 1 }

sweep "peer_row_keys_exact" {
    algos = samplers,
    dataset = { "gaussian", "bf16", "masked", "nan_inf" },
    vocab = GPU and 32768 or 4096, batch = 16,
    k = { 0, 50, 1000 }, p = { 0.9, 1.0 },
    row_keys = { 0, 1 },
    where = function(c) return c.mode ~= "none" end,
    verify = 16, draws = 256, timing = check,
}

sweep "peer_min_p_exact" {
    algos = { "flashinfer.min_p", "naive_sort", "qrita", "cake", "rejection" },
    dataset = { "gaussian", "bf16", "masked", "nan_inf" },
    vocab = GPU and 32768 or 4096, batch = 16,
    k = 0, p = 1.0,
    min_p = { 1e-6, 0.05, 0.3, 0.999 },
    row_keys = { 0, 1 },
    verify = 16, draws = 256, timing = check,
}

if GPU then
    local timed = { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 }
    sweep "peer_row_keys_cost" {
        algos = { "flashinfer.sampling_probs", "rejection", "cake" },
        dataset = "gaussian", vocab = 128256, batch = { 1, 128, 1024 },
        k = 50, p = 0.9, row_keys = { 0, 1 }, timing = timed,
    }
    sweep "peer_min_p_cost" {
        algos = { "flashinfer.min_p", "rejection", "cake" },
        dataset = "gaussian", vocab = 128256, batch = { 1, 128, 1024 },
        k = 0, p = 1.0, min_p = 0.05, row_keys = { 0, 1 }, timing = timed,
    }
end

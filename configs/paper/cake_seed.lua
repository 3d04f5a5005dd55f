-- cake_seed.lua — the cake seed's measured table (its documentation, "Measured performance":
-- `bench_cake_sampling.py --batches 1,2,4,8,16,32,64,128 --vocabs 32768,128256,151936,262144`,
-- k = 10, 50, 1000, p = 0.9, H100 SXM) on our timer: our `cake` module, its top-p stage fused
-- into the first kernel and chained as a second launch (the seed: "bitwise identical to the
-- two-launch form"), beside FlashInfer's cake kernel on probabilities (`flashinfer.cake`,
-- softmax outside the timed region, as the seed's kernel times are) and FlashInfer's default
-- `top_k_first` route (`flashinfer.sampling_probs`, the seed's baseline for its speed-ups).
-- The seed's times are CUPTI kernel times (FlashInfer's bench_gpu_time), ours CUDA events
-- around the call with L2 flushed (docs/CONFIGS.md, "Configs"). Its CUDA-graph columns are the
-- graph = 1 cells on the GPU: the call captured once and replayed under the same flush
-- (docs/DESIGN.md, "A run, step by step"), each eager cell's twin. The rows are N(0,1) logits with outliers ("gaussian"): the seed does not
-- name its inputs beyond their shape.
--
-- Meant for the H100 or H200: 4 vocabularies x 8 batches x 3 k x 4 entries x eager and graph = 768
-- cells (the
-- peers' `unsupported` on the CPU). On the CPU backend the grid is tiny (2 vocabularies, 3
-- batches, k = 50) so that `make reproduce` still writes the sweep there.
local SMALL = backend == "cpu"

sweep "cake_seed" {
    algos = {
        { "cake", topp_launch = "fused" },
        { "cake", topp_launch = "chained" },
        { "flashinfer.cake", input = "probs" },
        { "flashinfer.sampling_probs", input = "probs", order = "top_k_first" },
    },
    dataset = "gaussian",
    vocab = SMALL and { 32768, 128256 } or { 32768, 128256, 151936, 262144 },
    batch = SMALL and { 1, 8, 32 } or pow2(0, 7),
    k = SMALL and { 50 } or { 10, 50, 1000 },
    p = 0.9,
    graph = SMALL and 0 or { 0, 1 },
    verify = 1 << 20, -- every row of every cell (top-k on: the oracle's 1 ms a row)
    timing = SMALL and { warmup = 1, min_reps = 3, max_reps = 5, max_seconds = 0.2 } or nil,
}

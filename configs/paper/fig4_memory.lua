-- fig4_memory.lua — the Qrita paper's Figure 4 (section 4.3): workspace memory of each
-- algorithm against batch size at the five vocabularies of its models (top-k 50 then top-p
-- 0.9; the workspace_bytes column, and peak_device_bytes on the GPU). Memory does not depend on
-- timing, so each cell is timed once. On the GPU the batches are 1, 4, 16, 64, 128, 256 and 1024
-- (`make reproduce`'s 25 minutes: about 130 s for these 7 x 5 vocabularies x 13 algorithms on
-- the H200, from the committed run of all 11). Meant for the H200: the full grid (275 cells) needs about
-- 8 minutes of calls alone on a 2-core CPU (estimated from the batch-16 cells, scaled linearly in
-- the batch), so on the CPU backend it stops at batch 16 (27 s on 2 busy cores, measured at 67ea0b5). Workspace depends on the shape, not the values: the synthetic "gaussian" dataset
-- serves every vocabulary.
local SMALL = backend == "cpu" -- the CPU-sized grid on the CPU backend, the full one on the GPU

-- The peers (docs/PEERS.md) are measured too: their extra device bytes per call (the peak of
-- torch's allocator above the inputs) on the GPU; on the CPU only their cells' presence.
-- Every baseline of the paper (PyTorch's sort: vllm.pytorch and torch.sort; vLLM's Triton Qrita;
-- FlashInfer's samplers and renorm; SGLang) at every batch of the grid.
local peers = SMALL and { "vllm.pytorch", "torch.sort" } or
    { "vllm.pytorch", "torch.sort", "vllm.triton", "flashinfer.sampling",
      { "flashinfer.sampling_probs", input = "probs" }, "flashinfer.renorm",
      { "flashinfer.cake", input = "probs" }, "sglang.via_flashinfer" }
local algos = { "naive_sort", "rtopk", "qrita", "cake", "rejection" }
for _, a in ipairs(peers) do algos[#algos + 1] = a end

sweep "fig4" {
    algos = algos,
    dataset = "gaussian",
    vocab = { 128256, 151936, 201088, 248320, 262208 },
    batch = SMALL and pow2(0, 4) or { 1, 4, 16, 64, 128, 256, 1024 },
    k = 50,
    p = 0.9,
    timing = { warmup = 0, min_reps = 1, max_reps = 1, max_seconds = 0.1 },
    verify = 1 << 20, -- every row of every cell (top-k 50 then top-p: the oracle's 1 ms a row)
}

-- cub_topk.lua — NVIDIA's top-k beside ours (docs/PEERS.md, "cub.topk"): qrita, rtopk and
-- naive_sort's top-k against cub.topk (CUB's AIR top-k, DeviceBatchedTopK for V <= 8192, else
-- DeviceTopK a row), with torch.topk and FlashInfer's radix top-k as the other references, on
-- top-k alone (p = 1), the peers' data shape (docs/H200-PEERS.md), eager and as CUDA graph
-- replays (graph = 1: DeviceTopK's launches a row without their gaps). The issue's target: each
-- of our modules faster than cub.topk, or the reason measured. Medians, L2 flushed.
-- Meant for the H100 or H200 (cub.topk needs a build with CUB 3.3+'s headers: make
-- cccl-headers); on the CPU the GPU-only entries are `unsupported` and the grid is tiny.
local SMALL = backend == "cpu"

sweep "cub_topk" {
    algos = { "naive_sort", "rtopk", "qrita", "cub.topk", "torch.topk", "flashinfer.topk" },
    dataset = "peers_s1",
    vocab = SMALL and 4096 or { 4096, 32768, 128256, 262144 },
    batch = SMALL and { 1, 8 } or { 1, 16, 128, 1024 },
    k = SMALL and 50 or { 50, 1000 },
    p = 1.0,
    graph = SMALL and 0 or { 0, 1 },
    verify = 16,
    timing = SMALL and { warmup = 1, min_reps = 3, max_reps = 5, max_seconds = 0.2 }
             or { warmup = 3, min_reps = 20, max_reps = 200, max_seconds = 1.0, target_rel = 0.01 },
}

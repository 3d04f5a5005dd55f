-- fig2_throughput.lua — the Qrita paper's Figure 2 (arXiv 2602.01518, section 4.2): throughput
-- (batch rows per second) against batch size at the five vocabularies of its models, in the
-- three modes top-k 50, top-p 0.9 and top-k 50 then top-p 0.9, for every algorithm. rtopk does
-- top-k only; its other cells are recorded 'unsupported' (as are cake's top-p-only cells on
-- vocabularies above its 1024-entry slab).
--
-- The peers (docs/PEERS.md) run beside the modules on the same logits, under the same timer and
-- oracle: vLLM's PyTorch baseline and Triton Qrita (the paper's "PyTorch" and "vLLM" rows),
-- FlashInfer's samplers, masks, radix top-k and cake sampler (probabilities in: the kernel alone,
-- and FlashInfer's softmax + kernel), torch.topk, and SGLang's sampler. A peer that cannot do a
-- cell, or whose package does not import, records an `unsupported` row saying why. On the CPU
-- backend only the peers with a CPU path run.
--
-- Meant for the H100 or H200 (`topkp run configs/paper/fig2_throughput.lua --backend gpu`; `make
-- reproduce` runs sweep "fig2" in three chunks: scripts/reproduce.sh). On the GPU the batches are
-- 1, 4, 16, 32, 64, 128, 256 and 1024 (2, 8 and 512 left out to fit the campaign's 25 minutes:
-- vLLM's Triton kernel compiles anew at B = 2 and 8; the scaling claim is about B <= 128 and the
-- bend after it), every row of each cell judged by the oracle (built once a row, mode and
-- vocabulary in a chunk, harness/verify/judge_memo.c, at 1-1.5 ms a 262k row with top-k and 26 ms with
-- top-p alone on one core, then each cell's rows checked against it: about 8 s a chunk on the
-- GPU host's 16 cores, 126 s of one core), the timer's GPU defaults (at least 20 samples, noisy
-- cells flagged). The modules' full
-- grid is 5 vocabularies x 11 batches x 3 modes x 5 algorithms = 825 cells; on a 2-core CPU the
-- batch-1024 cells alone would take about an hour (estimated from the batch-16 cells, scaled
-- linearly in the batch; naive_sort sorts a 262208-token row in about 85 ms), so on the CPU
-- backend the grid stops at batch 16 (375 module cells, about 3 minutes on 2 busy cores: 188 s
-- measured at 67ea0b5; the CPU peers' 225 cells come on top: torch.sort and torch.topk with
-- Debian's torch 91 s, vllm.pytorch only where vllm is installed).
--
-- Datasets: the paper uses WikiText-2 logits of five models; here each vocabulary gets the
-- model-like synthetic dataset of its model (`topkp list`), paired by the `where` filter. Put
-- "gaussian" (or file "x.h5" with real logits) in a `dataset` field to change one.
local SMALL = backend == "cpu" -- the CPU-sized grid on the CPU backend, the full one on the GPU

local models = {
    { vocab = 128256, dataset = "model_llama3_8b" }, -- R1-Distill-Llama-8B
    { vocab = 151936, dataset = "model_qwen3_8b" }, -- Qwen3-8B
    { vocab = 201088, dataset = "model_gpt_oss_20b" }, -- GPT-OSS-20B
    { vocab = 248320, dataset = "model_qwen35" }, -- Qwen3.5-35B-A3B
    { vocab = 262208, dataset = "model_gemma3_4b" }, -- Gemma3-4B
}
local vocabs, datasets, dataset_of = {}, {}, {}
for _, m in ipairs(models) do
    vocabs[#vocabs + 1] = m.vocab
    dataset_of[m.vocab] = m.dataset
    if not datasets[m.dataset] then
        datasets[m.dataset] = true
        datasets[#datasets + 1] = m.dataset
    end
end

local modules = { "naive_sort", "rtopk", "qrita", "cake", "rejection" }
local cpu_peers = { "vllm.pytorch", "torch.sort", "torch.topk" }
local gpu_peers = {
    "vllm.pytorch", "vllm.triton", "torch.sort", "torch.topk",
    "flashinfer.sampling", { "flashinfer.sampling_probs", input = "probs" },
    { "flashinfer.sampling_probs", input = "softmax" }, "flashinfer.top_k_mask", "flashinfer.topk",
    { "flashinfer.cake", input = "probs" }, { "flashinfer.cake", input = "softmax" },
    "sglang.via_flashinfer",
}
local algos = {}
for _, a in ipairs(modules) do algos[#algos + 1] = a end
for _, a in ipairs(SMALL and cpu_peers or gpu_peers) do algos[#algos + 1] = a end

-- The grid of Figure 2 in one element type: "fig2" on float32 logits, as the paper measures,
-- and on the GPU "fig2_bf16", the same cells on bfloat16 logits (the engines' usual logits;
-- docs/SEMANTICS.md, "16-bit logits": each module's results on a bf16 row equal those on its
-- float32 upcast), so that both figures come from one run. A module or peer that does not read
-- bf16 records its cells `unsupported`. The CPU backend runs the f32 grid only (its time).
local function fig2(name, dtype)
    sweep(name) {
        algos = algos,
        dataset = datasets,
        vocab = vocabs,
        batch = SMALL and pow2(0, 4) or { 1, 4, 16, 32, 64, 128, 256, 1024 },
        k = { 0, 50 },   -- 0: top-k off
        p = { 0.9, 1.0 }, -- 1.0: top-p off
        dtype = dtype,
        where = function(c) return c.mode ~= "none" and dataset_of[c.vocab] == c.dataset end,
        timing = SMALL and { warmup = 1, min_reps = 3, max_reps = 5, max_seconds = 0.2 } or nil,
        verify = 1 << 20, -- every row of every cell (verify's ceiling, above any batch)
    }
end
fig2("fig2", "f32")
if not SMALL then fig2("fig2_bf16", "bf16") end

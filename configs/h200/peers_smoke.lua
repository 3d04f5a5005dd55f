-- peers_smoke.lua — one small cell of every peer (docs/PEERS.md) in each mode it offers, with
-- every row checked: a first look at the bridge on a new machine or package version. Every
-- cell should be `ok`, or `unsupported` with the reason (a missing package, a mode or a
-- backend the peer lacks).
local peers = {}
for _, p in ipairs({ "torch.sort", "torch.sample", "torch.topk", "vllm.pytorch", "vllm.triton",
                     "flashinfer.sampling", "flashinfer.top_k_mask", "flashinfer.topk",
                     "sglang.via_flashinfer" }) do
    peers[#peers + 1] = p
end
for _, input in ipairs({ "probs", "softmax" }) do
    peers[#peers + 1] = { "flashinfer.sampling_probs", input = input }
    peers[#peers + 1] = { "flashinfer.renorm", input = input }
    peers[#peers + 1] = { "flashinfer.cake", input = input }
end
peers[#peers + 1] = { "flashinfer.sampling", order = "joint" }

sweep "peers_smoke" {
    algos = peers, dataset = "peers_s1", vocab = 128256, batch = { 1, 8 },
    k = { 0, 50 }, p = { 0.9, 1.0 },
    where = function(c) return c.mode ~= "none" end,
    verify = 8, draws = 64,
    timing = { warmup = 2, min_reps = 5, max_reps = 20, max_seconds = 0.3 },
}

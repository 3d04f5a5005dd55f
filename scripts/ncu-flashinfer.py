"""ncu-flashinfer.py WHAT V B [K P] — one warm call then one profiled call of a FlashInfer
sampler on N(0, sigma) logits turned into probabilities, for Nsight Compute on the GPU machine
(after `source scripts/gpu-peers.sh`): WHAT is `cake` (cake_sampling, probabilities in) or
`top_p` (top_p_sampling_from_probs, deterministic). Lets `ncu -k regex:...` see the peer's own
kernels on the shapes of algos/cake/README.md and algos/rejection/README.md."""
import sys

import torch

what, V, B = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
k = int(sys.argv[4]) if len(sys.argv) > 4 else 50
p = float(sys.argv[5]) if len(sys.argv) > 5 else 0.9
sigma = 2.0 if what == "top_p" else 1.0
g = torch.Generator(device="cuda").manual_seed(1)
logits = torch.randn(B, V, device="cuda", generator=g) * sigma
probs = torch.softmax(logits, dim=-1)
kk = torch.full((B,), k, device="cuda", dtype=torch.int32)
pp = torch.full((B,), p, device="cuda", dtype=torch.float32)
if what == "cake":
    import flashinfer.cake_sampling as cs
    call = lambda: cs.top_k_top_p_sampling_from_probs(probs, kk, pp, top_k_max=k)
else:
    import flashinfer.sampling as fs
    call = lambda: fs.top_p_sampling_from_probs(probs, pp, deterministic=True)
for _ in range(3):
    call()
torch.cuda.synchronize()

"""vllm_peers.py — vLLM's two top-k / top-p filters, called as vLLM's sampler calls them
(docs/PEERS.md): `vllm.triton` is `apply_top_k_top_p`, the sampler's entry point, which on a
GPU runs the Triton implementation of Qrita; `vllm.pytorch` is `apply_top_k_top_p_pytorch`,
the sort-based baseline of the Qrita paper. Both mask the logits in place, so each call gets a
work copy that is restored outside the timed region; kept = not masked to -inf."""
import sys

from peer import Peer
from cell import Call

SAMPLER = "vllm.v1.sample.ops.topk_topp_sampler"


def in_place(cell, fn):
    torch = cell.torch
    work = cell.logits.clone()
    k = cell.k_rows() if cell.topk_on else None
    p = cell.p_rows() if cell.topp_on else None
    return Call(lambda: fn(work, k, p) if (k is not None or p is not None) else work,
                reset=lambda: work.copy_(cell.logits),
                kept=lambda out: out != float("-inf"))


def prepare_triton(cell):
    return in_place(cell, sys.modules[SAMPLER].apply_top_k_top_p)


def prepare_pytorch(cell):
    return in_place(cell, sys.modules[SAMPLER].apply_top_k_top_p_pytorch)


def drop_caches():
    triton = sys.modules.get("vllm.v1.sample.ops.topk_topp_triton")
    if triton is not None and hasattr(triton, "reset_buffer_cache"):
        triton.reset_buffer_cache()


PEERS = [
    Peer("vllm.triton", "vllm", [SAMPLER, "vllm.v1.sample.ops.topk_topp_triton"], ("cuda",),
         prepare_triton),
    Peer("vllm.pytorch", "vllm", [SAMPLER], ("cpu", "cuda"), prepare_pytorch),
]

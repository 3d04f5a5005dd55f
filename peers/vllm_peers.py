"""vllm_peers.py — vLLM's two top-k / top-p filters, called as vLLM's sampler calls them
(docs/PEERS.md): `vllm.triton` is `apply_top_k_top_p`, the sampler's entry point, which on a
GPU runs the Triton implementation of Qrita; `vllm.pytorch` is `apply_top_k_top_p_pytorch`,
the sort-based baseline of the Qrita paper. Both mask the logits in place, so each call gets a
work copy that is restored outside the timed region; kept = not masked to -inf. vLLM's sampler
converts the logits to float32 before any of its steps: for a 16-bit cell the timed call
starts with that cast, whose new tensor is the work copy (nothing to restore)."""
import sys

from peer import FLOAT32, Peer
from cell import Call

SAMPLER = "vllm.v1.sample.ops.topk_topp_sampler"


def in_place(cell, fn):
    k = cell.k_rows() if cell.topk_on else None
    p = cell.p_rows() if cell.topp_on else None
    filtered = k is not None or p is not None
    kept = lambda out: out != float("-inf")  # noqa: E731
    if cell.sixteen_bit:  # the sampler's cast, timed; fn masks the cast's copy
        return Call(lambda: fn(cell.float32(), k, p) if filtered else cell.float32(), kept=kept)
    work = cell.logits.clone()
    return Call(lambda: fn(work, k, p) if filtered else work,
                reset=lambda: work.copy_(cell.logits), kept=kept)


def prepare_triton(cell):
    return in_place(cell, sys.modules[SAMPLER].apply_top_k_top_p)


def prepare_pytorch(cell):
    return in_place(cell, sys.modules[SAMPLER].apply_top_k_top_p_pytorch)


def drop_caches():
    triton = sys.modules.get("vllm.v1.sample.ops.topk_topp_triton")
    if triton is not None and hasattr(triton, "reset_buffer_cache"):
        triton.reset_buffer_cache()


CAST_NOTE = "x.float() timed, as vLLM's sampler converts the logits to float32 first"
PEERS = [
    Peer("vllm.triton", "vllm", [SAMPLER, "vllm.v1.sample.ops.topk_topp_triton"], ("cuda",),
         prepare_triton, FLOAT32, CAST_NOTE),
    Peer("vllm.pytorch", "vllm", [SAMPLER], ("cpu", "cuda"), prepare_pytorch, FLOAT32, CAST_NOTE),
]

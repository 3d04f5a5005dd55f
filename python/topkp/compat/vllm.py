"""topkp.compat.vllm — vLLM's v1 sampler entry point `apply_top_k_top_p(logits, k, p)`
(vllm/v1/sample/ops/topk_topp_sampler.py) and the names of its two implementations: the
logits with every token outside the kept set set to -inf, written in place (as vLLM's paths
do, a strided view included) and returned. k: None or an integer tensor, p: None or a float
tensor, each [B] or [1] (broadcast); k >= V turns top-k off. The kept set is topkp's
(docs/SEMANTICS.md): exactly k tokens at a tie, where vLLM keeps every token tied with the
k-th (docs/PYTHON.md, "Where the semantics differ")."""
import torch

from .. import top_k_top_p_mask


def _rows(x, batch):
    if isinstance(x, torch.Tensor) and x.dim() == 1 and x.shape[0] == 1 and batch != 1:
        return x.expand(batch)
    return x


def _apply(logits, k, p, algo="qrita", mask_value=float("-inf")):
    if (k is None and p is None) or logits.shape[0] == 0:  # nothing to mask (an empty batch)
        return logits
    b = logits.shape[0]
    kept = top_k_top_p_mask(logits.contiguous(), k=_rows(k, b), p=_rows(p, b), algo=algo)
    return logits.masked_fill_(~kept, mask_value)


def apply_top_k_top_p(logits: torch.Tensor, k, p, has_topp_only_rows: bool = True,
                      algo: str = "qrita") -> torch.Tensor:
    return _apply(logits, k, p, algo)


def apply_top_k_top_p_pytorch(logits: torch.Tensor, k, p, allow_cpu_sync: bool = False):
    """vLLM's sort baseline's name; the same op."""
    return _apply(logits, k, p)


def apply_top_k_top_p_triton(logits: torch.Tensor, k, p, has_topp_only_rows: bool = True,
                             mask_value: float = float("-inf")):
    """vLLM's Triton entry point's name; the same op, with its mask value."""
    return _apply(logits, k, p, mask_value=mask_value)

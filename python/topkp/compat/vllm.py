"""topkp.compat.vllm — vLLM's v1 sampler entry point `apply_top_k_top_p(logits, k, p)`
(vllm/v1/sample/ops/topk_topp_sampler.py): the logits with every token outside the kept set
set to -inf, written in place (as vLLM's PyTorch path may) and returned. k: None or a [B]
integer tensor (k >= V: off); p: None or a [B] float tensor. The kept set is topkp's
(docs/SEMANTICS.md): exactly k tokens at a tie, where vLLM keeps every token tied with the
k-th (docs/PYTHON.md, "Where the semantics differ")."""
import torch

from .. import top_k_top_p_mask


def apply_top_k_top_p(logits: torch.Tensor, k, p, has_topp_only_rows: bool = True,
                      algo: str = "qrita") -> torch.Tensor:
    if k is None and p is None:
        return logits
    kept = top_k_top_p_mask(logits, k=k, p=p, algo=algo)
    return logits.masked_fill_(~kept, float("-inf"))


def apply_top_k_top_p_pytorch(logits: torch.Tensor, k, p, allow_cpu_sync: bool = False):
    """The name of vLLM's sort baseline, for callers that import it; the same as above."""
    return apply_top_k_top_p(logits, k, p)

"""topkp.compat.flashinfer — FlashInfer's sampling calls (flashinfer/sampling.py) with their
signatures, dtypes and return types: samples int32 [B] (or the dtype of `indices`), renormed
probabilities and masked logits as new tensors of the input's dtype. Top-k filters first
(filter_apply_order="top_k_first"; "joint" is refused), every kernel is deterministic
(`deterministic` is accepted and has no effect). Probability inputs follow docs/SEMANTICS.md,
"Probabilities": a row of probabilities is the row of logits log(probs). Seeds: an int seed
and offset key the batch; a [B] (or [1]) int64 tensor keys each row (per-row keying,
docs/SEMANTICS.md, "Sampling: two keying modes"); without them the generator's (seed,
offset), its offset advanced by B * 32 rounded up to 4, as FlashInfer advances it."""
from typing import Optional, Union

import torch

from .. import TopkpError, sample, top_k_top_p_mask
from .._torch import generator_key


def _check_order(filter_apply_order):
    """Top-k first only (docs/SEMANTICS.md, "Top-k and top-p together: top-k first")."""
    if filter_apply_order != "top_k_first":
        raise ValueError(f"filter_apply_order={filter_apply_order!r}: topkp filters top-k "
                         "first only (filter_apply_order='top_k_first')")


def _probs_logits(probs, check_nan):
    """The logits a row of probabilities means (docs/SEMANTICS.md, "Probabilities")."""
    if check_nan and bool(torch.isnan(probs).any()):
        raise ValueError("Input probs contains NaN.")
    return torch.log(probs.float())


def _key_rows(value, batch, device):
    """A seed or offset: an int (batch keying) or a [1] / [B] tensor (one per row)."""
    if value is None or not isinstance(value, torch.Tensor):
        return value, None
    if value.dim() != 1 or value.shape[0] not in (1, batch):
        raise TopkpError(2, f"seed/offset tensor of shape {tuple(value.shape)}: expected (1,) "
                            f"or ({batch},)")
    return None, value.to(device=device, dtype=torch.int64).expand(batch).contiguous()


def _sample(logits, top_k, top_p, indices, generator, seed, offset, algo):
    if indices is not None:
        logits = logits.index_select(0, indices.to(torch.long))
    b = logits.shape[0]
    s, seeds = _key_rows(seed, b, logits.device)
    o, offsets = _key_rows(offset, b, logits.device)
    if seed is None and offset is None:
        s, o = generator_key(logits, b * 32, generator)
    out = sample(logits, k=top_k, p=top_p, seeds=seeds, offsets=offsets, algo=algo,
                 seed=s or 0, offset=o or 0, draws=1)
    return out[:, 0].to(indices.dtype if indices is not None else torch.int32)


def top_k_top_p_sampling_from_logits(
        logits: torch.Tensor, top_k: Union[torch.Tensor, int], top_p: Union[torch.Tensor, float],
        indices: Optional[torch.Tensor] = None, filter_apply_order: str = "top_k_first",
        deterministic: bool = True, generator: Optional[torch.Generator] = None,
        check_nan: bool = False, seed=None, offset=None, algo: Optional[str] = None):
    _check_order(filter_apply_order)
    if check_nan and bool(torch.isnan(logits).any()):
        raise ValueError("Input logits contains NaN.")
    return _sample(logits, top_k, top_p, indices, generator, seed, offset, algo)


def top_k_top_p_sampling_from_probs(
        probs: torch.Tensor, top_k: Union[torch.Tensor, int], top_p: Union[torch.Tensor, float],
        indices: Optional[torch.Tensor] = None, filter_apply_order: str = "top_k_first",
        deterministic: bool = True, generator: Optional[torch.Generator] = None,
        check_nan: bool = False, seed=None, offset=None, return_valid: bool = False,
        algo: Optional[str] = None):
    _check_order(filter_apply_order)
    samples = _sample(_probs_logits(probs, check_nan), top_k, top_p, indices, generator, seed,
                      offset, algo)
    return (samples, samples >= 0) if return_valid else samples


def _renorm(probs, kept):
    out = torch.where(kept, probs, torch.zeros((), dtype=probs.dtype, device=probs.device))
    total = out.sum(dim=-1, keepdim=True, dtype=torch.float32)
    return (out.float() / total).to(probs.dtype)


def top_p_renorm_probs(probs: torch.Tensor, top_p: Union[torch.Tensor, float],
                       is_deterministic: bool = False) -> torch.Tensor:
    return _renorm(probs, top_k_top_p_mask(_probs_logits(probs, False), p=top_p))


def top_k_renorm_probs(probs: torch.Tensor, top_k: Union[torch.Tensor, int],
                       is_deterministic: bool = False) -> torch.Tensor:
    return _renorm(probs, top_k_top_p_mask(_probs_logits(probs, False), k=top_k))


def top_k_mask_logits(logits: torch.Tensor, top_k: Union[torch.Tensor, int]) -> torch.Tensor:
    return top_k_top_p_mask(logits, k=top_k, output="logits")

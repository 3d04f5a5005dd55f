"""topkp.compat.flashinfer — FlashInfer's sampling calls (flashinfer/sampling.py) with their
signatures, dtypes and return types: the samplers with two filters, one (top_k, top_p, min_p)
or none, over probabilities or logits, with return_valid where FlashInfer has it, and chain
speculative sampling (docs/PYTHON.md, "The adapters"); samples int32
[B] (or the dtype of `indices`); renormed probabilities and masked logits as new tensors of the
input's dtype; a top_k / top_p / min_p that is a scalar or a [B] tensor (a 0-d, 2-D or wrongly
sized one is a ValueError, as there). filter_apply_order "top_k_first" is topkp's order;
"joint" keeps the tokens that both filters keep on the whole row, then draws from them. Every
kernel is deterministic (`deterministic` has no effect). A row with nothing to draw gets 0,
not valid, as FlashInfer's kernels give (docs/PYTHON.md, "Where the semantics differ").
Probability inputs follow docs/SEMANTICS.md, "Probabilities". Seeds: an int seed and offset
key the batch; integer [B] or [1] tensors key each row (per-row keying, docs/SEMANTICS.md,
"Sampling: two keying modes"); with neither, the generator's key (docs/PYTHON.md, "Seeds
and offsets"), a CUDA generator's offset advanced as FlashInfer advances it for the call."""
from typing import Optional, Union

import torch

from .. import TopkpError, sample, top_k_top_p_mask
from .._torch import generator_key

_PARAM_DTYPES = {"top_k": torch.int32, "top_p": torch.float32, "min_p": torch.float32}


def _param(value, batch, name):
    """A scalar, or a [batch] tensor of the op's dtype; FlashInfer's refusals otherwise."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.dim() == 0:
        raise ValueError(f"Expected a 1D tensor of shape (batch_size,) or scalar for {name}, "
                         "got a 0-dimensional tensor")
    if value.dim() > 1:
        raise ValueError(f"Expected a 1D tensor or scalar for {name}, got a {value.dim()}D "
                         "tensor")
    if value.shape[0] != batch:
        raise ValueError(f"Sampling parameter tensor batch size mismatch: {name} has "
                         f"{value.shape[0]} values, the batch {batch} rows")
    return value.to(_PARAM_DTYPES[name])


def _probs_logits(probs):
    """The logits a row of probabilities means (docs/SEMANTICS.md, "Probabilities")."""
    return torch.log(probs.float())


def _key_rows(value, batch, device):
    """A seed or offset: an int (batch keying), or an integer [1] or [B] tensor, one per row
    (per-row keying), left on its device so that a captured CUDA graph replays with what it
    holds (docs/PYTHON.md, "Seeds and offsets"; FlashInfer reads a [1] tensor as the batch's
    key instead, "Where the semantics differ")."""
    if value is None or not isinstance(value, torch.Tensor):
        return value, None
    if value.dim() != 1 or value.shape[0] not in (1, batch) or value.is_floating_point():
        raise TopkpError(2, f"seed/offset tensor of shape {tuple(value.shape)} and dtype "
                            f"{value.dtype}: expected an integer tensor of shape (1,) or "
                            f"({batch},)")
    return None, value.to(device=device, dtype=torch.int64).expand(batch).contiguous()


def _sample(logits, indices, generator, seed, offset, algo, order="top_k_first", per_row=32,
            **filters):
    """topkp's one draw a row (int64, -1 where nothing can be drawn); filters: top_k, top_p,
    min_p (scalars or [B] tensors, FlashInfer's refusals); per_row: how far the generator's
    offset moves a row (FlashInfer's amount for the call: 32, or V for sampling_from_logits,
    1 for sampling_from_probs and min_p)."""
    if order not in ("top_k_first", "joint"):
        raise ValueError(f"Invalid filter_apply_order: {order}")
    if indices is not None:
        logits = logits.index_select(0, indices.to(torch.long))
    b = logits.shape[0]
    f = {n: _param(v, b, n) for n, v in filters.items()}
    if b == 0:  # an empty batch draws nothing (topkp's own calls refuse it)
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    k, p, min_p = f.get("top_k"), f.get("top_p"), f.get("min_p")
    if order == "joint":  # each filter on the whole row; draw from what both keep
        both = top_k_top_p_mask(logits, k=k) & top_k_top_p_mask(logits, p=p)
        logits, k, p = logits.float().masked_fill(~both, float("-inf")), None, None
    s, seeds = _key_rows(seed, b, logits.device)
    o, offsets = _key_rows(offset, b, logits.device)
    if seed is None and offset is None:
        s, o = generator_key(logits, b * per_row, generator)
    out = sample(logits, k=k, p=p, min_p=min_p, seeds=seeds, offsets=offsets, algo=algo,
                 seed=s or 0, offset=o or 0, draws=1)
    return out[:, 0]


def _softmax_logits(logits):
    """What a sampler over logits ranks and draws by: log(softmax(logits)), as FlashInfer's
    samplers over logits take the softmax first, so that sampling logits and sampling
    torch.softmax(logits) give the same draws; a row holding a NaN or +inf (whose softmax is
    NaN throughout) keeps its logits, so topkp's rules for them stand (docs/SEMANTICS.md,
    "Valid tokens and special values")."""
    x = logits.float()
    plain = ~(torch.isnan(x) | (x == float("inf"))).any(dim=-1, keepdim=True)
    return torch.where(plain, torch.log(torch.softmax(x, dim=-1)), x)


def _from_logits(logits, indices, check_nan, generator, seed, offset, algo, probs=False,
                 **filters):
    """A sampler over logits (or, probs=True, over the logits a row of probabilities means):
    FlashInfer's samples (int32, or the dtype of `indices`), and which rows had anything to
    draw; a row with nothing (topkp's -1: no valid token, or none kept) gets 0, as FlashInfer's
    kernels write there (docs/PYTHON.md, "Where the semantics differ")."""
    if check_nan and bool(torch.isnan(logits).any()):
        raise ValueError(f"Input {'probs' if probs else 'logits'} contains NaN.")
    x = _probs_logits(logits) if probs else _softmax_logits(logits)
    drawn = _sample(x, indices, generator, seed, offset, algo, **filters)
    dtype = indices.dtype if indices is not None else torch.int32
    return drawn.clamp(min=0).to(dtype), drawn >= 0


def _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                **filters):
    """A sampler over probabilities; with return_valid, (samples, valid) as FlashInfer's."""
    samples, valid = _from_logits(probs, indices, check_nan, generator, seed, offset, algo,
                                  probs=True, **filters)
    return (samples, valid) if return_valid else samples


def top_k_top_p_sampling_from_logits(
        logits: torch.Tensor, top_k: Union[torch.Tensor, int], top_p: Union[torch.Tensor, float],
        indices: Optional[torch.Tensor] = None, filter_apply_order: str = "top_k_first",
        deterministic: bool = True, generator: Optional[torch.Generator] = None,
        check_nan: bool = False, seed=None, offset=None, algo: Optional[str] = None):
    return _from_logits(logits, indices, check_nan, generator, seed, offset, algo,
                        order=filter_apply_order, top_k=top_k, top_p=top_p)[0]


def top_k_top_p_sampling_from_probs(
        probs: torch.Tensor, top_k: Union[torch.Tensor, int], top_p: Union[torch.Tensor, float],
        indices: Optional[torch.Tensor] = None, filter_apply_order: str = "top_k_first",
        deterministic: bool = True, generator: Optional[torch.Generator] = None,
        check_nan: bool = False, seed=None, offset=None, return_valid: bool = False,
        algo: Optional[str] = None):
    return _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                       order=filter_apply_order, top_k=top_k, top_p=top_p)


def sampling_from_logits(logits: torch.Tensor, indices: Optional[torch.Tensor] = None,
                         deterministic: bool = True, generator: Optional[torch.Generator] = None,
                         check_nan: bool = False, seed=None, offset=None,
                         algo: Optional[str] = None):
    return _from_logits(logits, indices, check_nan, generator, seed, offset, algo,
                        per_row=logits.shape[-1])[0]


def sampling_from_probs(probs: torch.Tensor, indices: Optional[torch.Tensor] = None,
                        deterministic: bool = True, generator: Optional[torch.Generator] = None,
                        check_nan: bool = False, seed=None, offset=None,
                        return_valid: bool = False, algo: Optional[str] = None):
    return _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                       per_row=1)


def top_k_sampling_from_probs(probs: torch.Tensor, top_k: Union[torch.Tensor, int],
                              indices: Optional[torch.Tensor] = None, deterministic: bool = True,
                              generator: Optional[torch.Generator] = None,
                              check_nan: bool = False, seed=None, offset=None,
                              return_valid: bool = False, algo: Optional[str] = None):
    return _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                       top_k=top_k)


def top_p_sampling_from_probs(probs: torch.Tensor, top_p: Union[torch.Tensor, float],
                              indices: Optional[torch.Tensor] = None, deterministic: bool = True,
                              generator: Optional[torch.Generator] = None,
                              check_nan: bool = False, seed=None, offset=None,
                              return_valid: bool = False, algo: Optional[str] = None):
    return _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                       top_p=top_p)


def min_p_sampling_from_probs(probs: torch.Tensor, min_p: Union[torch.Tensor, float],
                              indices: Optional[torch.Tensor] = None, deterministic: bool = True,
                              generator: Optional[torch.Generator] = None,
                              check_nan: bool = False, seed=None, offset=None,
                              return_valid: bool = False, algo: Optional[str] = None):
    return _from_probs(probs, indices, check_nan, generator, seed, offset, return_valid, algo,
                       per_row=1, min_p=min_p)


def _uniforms(shape, device, generator, seed, offset):
    """The acceptance tests' uniforms in [0, 1): from the generator (torch's default for the
    device when none), or, with an int seed and offset, from a generator they seed (the same
    call repeats its draws)."""
    if isinstance(seed, torch.Tensor) or isinstance(offset, torch.Tensor):
        raise TopkpError(2, "chain_speculative_sampling: seed and offset tensors are not "
                            "supported (an int seed and offset, or a generator)")
    if seed is not None or offset is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(((seed or 0) * 1000003 + (offset or 0)) % (1 << 63))
    return torch.rand(shape, generator=generator, device=device)


def chain_speculative_sampling(
        draft_probs: torch.Tensor, draft_token_ids: torch.Tensor, target_probs: torch.Tensor,
        maybe_output_accepted_token_num: Optional[torch.Tensor] = None,
        maybe_output_emitted_draft_token_num: Optional[torch.Tensor] = None,
        deterministic: bool = True, generator: Optional[torch.Generator] = None, seed=None,
        offset=None, algo: Optional[str] = None):
    """FlashInfer's chain speculative sampling (Chen et al. 2023, arXiv 2302.01318): draft
    token i of a row (draft probability q, target probability p) is kept when u * q < p, u
    uniform in [0, 1); the chain stops at the first one that is not, where a token is drawn from
    the residual max(target - draft, 0) (the target row where that is all 0); after a whole
    chain, the bonus token from target row N. Returns (tokens int32 [B, N + 1], -1 after the
    drawn token; accepted_num, += the drafts each test keeps on its own; emitted_num, += the
    drafts before the first rejection), the counts added in place into the tensors given. The
    draw is topkp's sampling_from_probs over the chosen rows (generator, seed, offset, algo)."""
    b, n = draft_token_ids.shape
    dev = draft_probs.device
    accepted = maybe_output_accepted_token_num
    emitted = maybe_output_emitted_draft_token_num
    accepted = torch.zeros(b, dtype=torch.int32, device=dev) if accepted is None else accepted
    emitted = torch.zeros(b, dtype=torch.int32, device=dev) if emitted is None else emitted
    ids = draft_token_ids.to(device=dev, dtype=torch.long)
    q = draft_probs.float().gather(2, ids[..., None])[..., 0]
    p = target_probs[:, :n].float().gather(2, ids[..., None])[..., 0]
    kept = _uniforms((b, n), dev, generator, seed, offset) * q < p
    rejected = ~kept
    stop = torch.where(rejected.any(dim=1), rejected.int().argmax(dim=1),
                       torch.full((b,), n, dtype=torch.long, device=dev))
    accepted += kept.sum(dim=1).to(accepted.dtype)
    emitted += stop.to(emitted.dtype)
    rows = torch.arange(b, device=dev)
    target = target_probs.float()[rows, stop]
    draft = (draft_probs.float()[rows, stop.clamp(max=max(n - 1, 0))] * (stop < n)[:, None]
             if n else torch.zeros_like(target))
    residual = (target - draft).clamp_min(0)
    weights = torch.where((residual.sum(dim=1) > 0)[:, None], residual, target)
    token = sampling_from_probs(weights, generator=generator, seed=seed, offset=offset,
                                algo=algo)
    position = torch.arange(n + 1, device=dev)[None]
    out = torch.full((b, n + 1), -1, dtype=torch.int32, device=dev)
    out[:, :n] = torch.where(position[:, :n] < stop[:, None], ids, -1).to(torch.int32)
    out[rows, stop] = token.to(torch.int32)
    return out, accepted, emitted


def softmax(logits: torch.Tensor, temperature=None, enable_pdl=None) -> torch.Tensor:
    """FlashInfer's softmax: float32 probabilities of logits / temperature (a scalar or one per
    row); not topkp's own work, for the code that calls it beside the samplers."""
    x = logits.float()
    if isinstance(temperature, torch.Tensor):
        x = x / temperature.to(device=x.device, dtype=torch.float32).reshape(-1, 1)
    elif temperature is not None:
        x = x / float(temperature)
    return torch.softmax(x, dim=-1)


def _renorm(probs, **filters):
    b = probs.shape[0]
    filters = {n: _param(v, b, "top_k" if n == "k" else "top_p") for n, v in filters.items()}
    if b == 0:
        return probs.clone()
    kept = top_k_top_p_mask(_probs_logits(probs), **filters)
    out = torch.where(kept, probs, torch.zeros((), dtype=probs.dtype, device=probs.device))
    total = out.sum(dim=-1, keepdim=True, dtype=torch.float32)
    return (out.float() / total).to(probs.dtype)


def top_p_renorm_probs(probs: torch.Tensor, top_p: Union[torch.Tensor, float],
                       is_deterministic: bool = False) -> torch.Tensor:
    return _renorm(probs, p=top_p)


def top_k_renorm_probs(probs: torch.Tensor, top_k: Union[torch.Tensor, int],
                       is_deterministic: bool = False) -> torch.Tensor:
    return _renorm(probs, k=top_k)


def top_k_mask_logits(logits: torch.Tensor, top_k: Union[torch.Tensor, int]) -> torch.Tensor:
    k = _param(top_k, logits.shape[0], "top_k")
    if logits.shape[0] == 0:
        return logits.clone()
    return top_k_top_p_mask(logits, k=k, output="logits")


top_k_renorm_prob = top_k_renorm_probs  # the older names FlashInfer still answers to
top_p_renorm_prob = top_p_renorm_probs

"""_torch.py — the ops as torch.library custom ops, topkp::mask and topkp::sample, with fake
implementations so that torch.compile(fullgraph=True) traces through them; CPU tensors run the
CPU backend on their own memory, CUDA tensors the kernels on the current stream with a cached
plan and workspace (docs/PYTHON.md, "PyTorch")."""
from typing import Optional

import math
import numpy as np
import torch

from . import _core, _lib
from ._lib import TopkpError

_DTYPES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}
_ROW_DTYPES = {"k": (torch.int32, torch.int64), "p": (torch.float32, torch.float64),
               "min_p": (torch.float32, torch.float64), "seeds": (torch.int64, torch.uint64),
               "offsets": (torch.int64, torch.uint64)}
_CAST = {"k": torch.int32, "p": torch.float32, "min_p": torch.float32}


def check_logits(logits):
    if not isinstance(logits, torch.Tensor):
        raise TopkpError(2, f"logits: expected a torch.Tensor, got {type(logits).__name__}")
    if logits.dim() != 2:
        raise TopkpError(2, f"logits: shape {tuple(logits.shape)}, expected [batch, vocab]")
    if logits.dtype not in _DTYPES:
        raise TopkpError(2, f"logits of {logits.dtype}: expected float32, bfloat16 or float16")
    if logits.device.type not in ("cpu", "cuda"):
        raise TopkpError(2, f"logits on {logits.device}: expected a CPU or CUDA tensor")
    return _DTYPES[logits.dtype]


def _row_stride(logits):
    """The row stride the C entry point is told (it refuses one that is not the vocab)."""
    b, v = logits.shape
    if logits.stride(1) != 1 and v > 1:
        raise TopkpError(2, f"logits: a row's elements are {logits.stride(1)} apart; "
                            "the rows must be contiguous (.contiguous())")
    return logits.stride(0) if b > 1 else v


def _device_row(name, t, logits):
    b = logits.shape[0]
    if t.device != logits.device:
        raise TopkpError(2, f"{name} on {t.device}, logits on {logits.device}")
    if t.dtype not in _ROW_DTYPES[name]:
        raise TopkpError(2, f"{name} of {t.dtype}: expected {_ROW_DTYPES[name][0]}")
    if tuple(t.shape) != (b,):
        raise TopkpError(2, f"{name}: shape {tuple(t.shape)}, expected ({b},)")
    if name in _CAST and t.dtype != _CAST[name]:
        t = t.to(_CAST[name])
    return t.contiguous()


def _host(name, t, b):
    if t is None:
        return None
    if t.dtype not in _ROW_DTYPES[name]:
        raise TopkpError(2, f"{name} of {t.dtype}: expected {_ROW_DTYPES[name][0]}")
    if name in ("seeds", "offsets"):
        return _core.host_rows(name, t.contiguous().view(torch.int64).numpy(), b)
    return _core.host_rows(name, t.contiguous().numpy(), b)


def _cpu_run(logits, rows, algo, options, want_kept, draws, seed, offset):
    b, v = logits.shape
    hrows = {n: _host(n, t, b) for n, t in rows.items()}
    kept = torch.empty((b, v), dtype=torch.uint8) if want_kept else None
    samples = torch.empty((b, draws), dtype=torch.int64) if draws else None
    dtype = _DTYPES[logits.dtype]

    def run(name):
        _core.host_run(logits.data_ptr(), dtype, b, v, _row_stride(logits), hrows, name,
                       options, want_kept, draws, seed, offset,
                       None if kept is None else kept.data_ptr(),
                       None if samples is None else samples.data_ptr())
    run(_core.pick_sampler(algo or None, run) if draws and not algo else algo)
    return kept if want_kept else samples


def _gpu_run(logits, rows, algo, options, want_kept, draws, seed, offset, k_bound):
    b, v = logits.shape
    dev = logits.device
    drows = {n: None if t is None else _device_row(n, t, logits) for n, t in rows.items()}
    keyed = drows["seeds"] is not None or drows["offsets"] is not None
    fields = dict(options=options.encode(), backend=_lib.GPU, dtype=_DTYPES[logits.dtype],
                  batch=b, vocab=v, row_stride=_row_stride(logits), want_kept=int(want_kept),
                  draws=draws, row_keyed=int(keyed), has_k=int(rows["k"] is not None),
                  has_p=int(rows["p"] is not None), has_min_p=int(rows["min_p"] is not None),
                  k_bound=k_bound)

    def plan_of(name):
        key = (name, tuple(sorted(fields.items())), dev.index)
        return _core.gpu_plan(key, dict(fields, algo=name.encode()))
    name = _core.pick_sampler(None, plan_of) if draws and not algo else algo
    plan = plan_of(name)
    if plan.workspace is None:  # the cached workspace and the rows of filters left off
        plan.workspace = torch.empty(max(plan.workspace_bytes, 1), dtype=torch.uint8, device=dev)
        plan.off_k = torch.zeros(b, dtype=torch.int32, device=dev)
        plan.off_p = torch.ones(b, dtype=torch.float32, device=dev)
    k = drows["k"] if drows["k"] is not None else plan.off_k
    p = drows["p"] if drows["p"] is not None else plan.off_p
    kept = torch.empty((b, v), dtype=torch.uint8, device=dev) if want_kept else None
    samples = torch.empty((b, draws), dtype=torch.int64, device=dev) if draws else None
    ptr = lambda t: None if t is None else t.data_ptr()
    io = _lib.IO(logits=logits.data_ptr(), k=k.data_ptr(), p=p.data_ptr(),
                 min_p=ptr(drows["min_p"]), kept=ptr(kept), samples=ptr(samples), seed=seed,
                 offset=offset, row_seed=ptr(drows["seeds"]), row_offset=ptr(drows["offsets"]))
    plan.run(io, plan.workspace.data_ptr(), torch.cuda.current_stream(dev).cuda_stream)
    return kept if want_kept else samples


def _run(logits, rows, algo, options, want_kept, draws, seed, offset, k_bound):
    """k_bound: 0, or the scalar k every row holds (a GPU plan's bound, docs/PYTHON.md, "CUDA")."""
    check_logits(logits)
    if not logits.is_cuda:
        return _cpu_run(logits, rows, algo, options, want_kept, draws, seed, offset)
    with torch.cuda.device(logits.device):  # the C side plans and launches on the current one
        return _gpu_run(logits, rows, algo, options, want_kept, draws, seed, offset, k_bound)


def generator_key(logits, increment, generator=None):
    """(seed, offset) for a call without seeds (docs/PYTHON.md, "Seeds and offsets"). A CUDA
    generator (the device's default, or `generator`) gives its Philox (seed, offset) and its
    offset advances by `increment` rounded up to 4, as FlashInfer's get_seed_and_offset
    advances it; a CPU generator has no such offset, so a fresh 63-bit seed is drawn from it."""
    if generator is None:
        generator = (torch.cuda.default_generators[logits.device.index or 0] if logits.is_cuda
                     else torch.default_generator)
    if generator.device.type != "cuda":
        seed = torch.randint(0, 2**63 - 1, (1,), generator=generator, device="cpu")
        return int(seed), 0
    state = generator.get_state()
    seed, offset = (int(x) for x in state.view(torch.int64)[:2])
    state = state.clone()
    state.view(torch.int64)[1] = offset + (increment + 3) // 4 * 4
    generator.set_state(state)
    return seed & (2**64 - 1), offset & (2**64 - 1)


def mask_eager(logits, k, p, min_p, algo, options, k_bound):
    """topkp::mask's body, called directly in eager mode (eager_ok) and by the op."""
    rows = {"k": k, "p": p, "min_p": min_p, "seeds": None, "offsets": None}
    return _run(logits, rows, algo, options, True, 0, 0, 0, k_bound)


def eager_ok(*tensors):
    """True where a call may skip the dispatcher (docs/PYTHON.md, "Overhead"): not under
    torch.compile's tracing and only plain tensors (no fake, functional or other subclass); the
    op itself stays what torch.compile and torch.library see."""
    return not torch.compiler.is_compiling() and all(
        type(t) is torch.Tensor for t in tensors if t is not None)


@torch.library.custom_op("topkp::mask", mutates_args=())
def mask_op(logits: torch.Tensor, k: Optional[torch.Tensor], p: Optional[torch.Tensor],
            min_p: Optional[torch.Tensor], algo: str, options: str, k_bound: int) -> torch.Tensor:
    return mask_eager(logits, k, p, min_p, algo, options, k_bound)


@mask_op.register_fake
def _mask_fake(logits, k, p, min_p, algo, options, k_bound):
    return logits.new_empty(logits.shape, dtype=torch.uint8)


def sample_eager(logits, k, p, min_p, seeds, offsets, algo, options, draws, seed, offset,
                 use_generator, k_bound):
    """topkp::sample's body, called directly in eager mode (eager_ok) and by the op."""
    if use_generator:
        seed, offset = generator_key(logits, logits.shape[0] * draws)
    rows = {"k": k, "p": p, "min_p": min_p, "seeds": seeds, "offsets": offsets}
    return _run(logits, rows, algo, options, False, draws, seed & (2**64 - 1),
                offset & (2**64 - 1), k_bound)


@torch.library.custom_op("topkp::sample", mutates_args=())
def sample_op(logits: torch.Tensor, k: Optional[torch.Tensor], p: Optional[torch.Tensor],
              min_p: Optional[torch.Tensor], seeds: Optional[torch.Tensor],
              offsets: Optional[torch.Tensor], algo: str, options: str, draws: int,
              seed: int, offset: int, use_generator: bool, k_bound: int) -> torch.Tensor:
    return sample_eager(logits, k, p, min_p, seeds, offsets, algo, options, draws, seed, offset,
                        use_generator, k_bound)


@sample_op.register_fake
def _sample_fake(logits, k, p, min_p, seeds, offsets, algo, options, draws, seed, offset,
                 use_generator, k_bound):
    return logits.new_empty((logits.shape[0], draws), dtype=torch.int64)


# A scalar that turns its filter off on every row (docs/SEMANTICS.md, "Input of one call").
OFF_SCALAR = {"k": lambda v, vocab: v <= 0 or v >= vocab, "p": lambda v, vocab: v >= 1,
              "min_p": lambda v, vocab: v <= 0}


def k_bound(k, vocab):
    """The GPU plan's top-k bound of a scalar k (0: none known)."""
    return int(k) if isinstance(k, (int, np.integer)) and 0 < k < vocab else 0


def as_rows(name, value, logits):
    """A scalar k, p or min_p as a [batch] tensor on the logits' device (no sync); a tensor
    or a sequence as it is (checked by the op)."""
    if value is None or isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        if isinstance(value, (list, tuple, np.ndarray)):
            return torch.as_tensor(np.asarray(value), device=logits.device)
        raise TopkpError(2, f"{name}: expected a number or a [batch] tensor, got "
                            f"{type(value).__name__}")
    if name == "k" and not float(value).is_integer():
        raise TopkpError(2, f"k: expected an integer, got {value!r}")
    if math.isfinite(value) and OFF_SCALAR.get(name, lambda v, n: False)(value, logits.shape[1]):
        return None  # the filter is off on every row: the plan need not have it (an infinity
        # goes on to the C side, which refuses it by name)
    dtype = torch.int32 if name == "k" else (torch.int64 if name in ("seeds", "offsets")
                                             else torch.float32)
    if torch.compiler.is_compiling():
        return torch.full((logits.shape[0],), value, dtype=dtype, device=logits.device)
    return _scalar_rows(value, logits.shape[0], dtype, logits.device)


_SCALAR_ROWS = {}  # (value, batch, dtype, device) -> a read-only [batch] tensor


def _scalar_rows(value, batch, dtype, device):
    """A scalar's [batch] tensor, made once and reused: an eager call launches no fill kernel
    and allocates nothing for it (docs/PYTHON.md, "Overhead"); the ops never write their rows."""
    key = (value, batch, dtype, device)
    rows = _SCALAR_ROWS.get(key)
    if rows is None and device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # made inside a capture, its fill runs only at replay: never reuse it outside the graph
        return torch.full((batch,), value, dtype=dtype, device=device)
    if rows is None:
        if len(_SCALAR_ROWS) >= 256:
            _SCALAR_ROWS.clear()
        rows = _SCALAR_ROWS[key] = torch.full((batch,), value, dtype=dtype, device=device)
    return rows

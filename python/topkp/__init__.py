"""topkp — exact top-k / top-p / min-p truncation and sampling from numpy and PyTorch
(docs/PYTHON.md). Every result equals `topkp apply`'s bit for bit: the same module code runs
behind include/topkp_ops.h. numpy arrays run the CPU backend; PyTorch tensors run where they
live (CUDA: the current stream), through the custom ops topkp::mask and topkp::sample."""
import numpy as np

from . import _core, _lib
from ._lib import TopkpError, algos

__all__ = ["top_k_top_p_mask", "sample", "manual_seed", "algos", "TopkpError", "backends"]

try:
    import torch as _torch_mod
    from . import _torch
except ImportError:  # numpy only
    _torch_mod = None
    _torch = None

# The numpy front end's generator: (seed, next offset); docs/PYTHON.md, "Seeds and offsets".
_NP_KEY = [0, 0]


def backends():
    """The backends of this build: {"cpu"} or {"cpu", "gpu"}."""
    bits = _lib.LIB.topkp_ops_backends()
    return {n for n, b in (("cpu", 1), ("gpu", 2)) if bits & b}


def manual_seed(seed):
    """The numpy front end's seed; its offset starts again at 0."""
    _NP_KEY[:] = [int(seed) & (2**64 - 1), 0]


def _is_torch(x):
    return _torch_mod is not None and isinstance(x, _torch_mod.Tensor)


def _np_logits(logits, dtype):
    arr = np.asarray(logits) if not isinstance(logits, np.ndarray) else logits
    if arr.ndim != 2:
        raise TopkpError(2, f"logits: shape {arr.shape}, expected [batch, vocab]")
    code = _core.numpy_dtype(arr, dtype)
    if not arr.flags.c_contiguous:
        raise TopkpError(2, f"logits rows are not contiguous (strides {arr.strides})")
    return arr, code


def _np_rows(batch, **rows):
    return {n: _core.host_rows(n, v, batch) for n, v in rows.items()}


def top_k_top_p_mask(logits, k=None, p=None, min_p=None, algo="qrita", output="mask",
                     dtype=None, **options):
    """The kept set of every row (docs/SEMANTICS.md): top-k, then top-p, then min-p.
    k, p, min_p: None (off), a scalar, or one value per row. output="mask": a bool [B, V]
    mask; output="logits": the logits with every token not kept set to -inf. `options` are
    the module's (`topkp list`); `dtype` names a numpy uint16 array's 16-bit type."""
    if output not in ("mask", "logits"):
        raise TopkpError(2, f"output={output!r}: expected 'mask' or 'logits'")
    opts = _core.options_text(options)
    if _is_torch(logits):
        _torch.check_logits(logits)
        rows = [_torch.as_rows(n, v, logits) for n, v in (("k", k), ("p", p), ("min_p", min_p))]
        call = _torch.mask_eager if _torch.eager_ok(logits, *rows) else _torch_mod.ops.topkp.mask
        kept = call(logits, *rows, algo, opts, _torch.k_bound(k, logits.shape[1]))
        kept = kept.view(_torch_mod.bool)  # 0/1 bytes: a view, no conversion kernel
        if output == "mask":
            return kept
        return logits.masked_fill(~kept, float("-inf"))
    arr, code = _np_logits(logits, dtype)
    b, v = arr.shape
    kept = np.empty((b, v), np.uint8)
    rows = _np_rows(b, k=k, p=p, min_p=min_p, seeds=None, offsets=None)
    _core.host_run(arr.ctypes.data, code, b, v, v, rows, algo, opts, True, 0, 0, 0,
                   kept.ctypes.data, None)
    if output == "mask":
        return kept.view(bool)
    if code == 0 or arr.dtype == np.float16:
        return np.where(kept.view(bool), arr, arr.dtype.type(-np.inf))
    out = arr.copy()  # 16-bit encodings: -inf is 0xFF80 (bf16) or 0xFC00 (f16)
    out[~kept.view(bool)] = 0xFF80 if code == 1 else 0xFC00
    return out


def sample(logits, k=None, p=None, min_p=None, seeds=None, offsets=None, algo=None, draws=1,
           seed=None, offset=None, dtype=None, **options):
    """`draws` token ids per row ([B, draws] int64; -1 for a row with no valid token), drawn
    from the kept set (docs/SEMANTICS.md, "Sampling: two keying modes"). seeds / offsets: one
    per row (per-row keying). Without them, `seed` and `offset` key the batch; without those
    too, the generator's (seed, offset), its offset advanced by B * draws rounded up to 4 each
    call (torch: the device's default generator, as FlashInfer; numpy: manual_seed's)."""
    if not isinstance(draws, int) or isinstance(draws, bool) or draws < 1:
        raise TopkpError(2, f"draws={draws!r}: expected an integer >= 1")
    opts = _core.options_text(options)
    use_gen = seeds is None and offsets is None and seed is None and offset is None
    if _is_torch(logits):
        _torch.check_logits(logits)
        rows = [_torch.as_rows(n, v, logits) for n, v in
                (("k", k), ("p", p), ("min_p", min_p), ("seeds", seeds), ("offsets", offsets))]
        call = (_torch.sample_eager if _torch.eager_ok(logits, *rows)
                else _torch_mod.ops.topkp.sample)
        return call(logits, *rows, algo or "", opts, draws, _signed(seed), _signed(offset),
                    use_gen, _torch.k_bound(k, logits.shape[1]))
    arr, code = _np_logits(logits, dtype)
    b, v = arr.shape
    if use_gen:
        seed, offset = _NP_KEY
        _NP_KEY[1] = (offset + (b * draws + 3) // 4 * 4) & (2**64 - 1)
    rows = _np_rows(b, k=k, p=p, min_p=min_p, seeds=seeds, offsets=offsets)
    out = np.empty((b, draws), np.int64)

    def run(name):
        _core.host_run(arr.ctypes.data, code, b, v, v, rows, name, opts, False, draws,
                       int(seed or 0) & (2**64 - 1), int(offset or 0) & (2**64 - 1),
                       None, out.ctypes.data)
    run(_core.pick_sampler(algo, run) if algo is None else algo)
    return out


def _signed(x):
    """A 64-bit key as the signed int a custom op's schema carries (the same bits)."""
    x = int(x or 0) & (2**64 - 1)
    return x - 2**64 if x >= 2**63 else x

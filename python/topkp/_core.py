"""_core.py — the ops on raw buffers, shared by the numpy and the PyTorch front ends: rows
(k, p, min_p, seeds, offsets) checked and made contiguous, a plan (cached on the GPU, with its
workspace), one run. The numbers mean what docs/SEMANTICS.md says; docs/PYTHON.md, "The ops"."""
import ctypes

import numpy as np

from . import _lib
from ._lib import TopkpError

# Without `algo`, sample() takes the first of these that plans the request.
SAMPLERS = ("rejection", "cake", "naive_sort")
# k, p and min_p off: what a row without the filter holds (docs/SEMANTICS.md, "Input of one call").
OFF = {"k": 0, "p": 1.0, "min_p": 0.0}
ROW_TYPES = {"k": np.int32, "p": np.float32, "min_p": np.float32, "seeds": np.uint64,
             "offsets": np.uint64}


def options_text(options):
    """{"name": value} as the C entry point's "name=value,name=value"."""
    for name, value in options.items():
        if "," in str(value) or "=" in str(value):
            raise TopkpError(2, f"option {name}={value!r}: a value holds no ',' or '='")
    return ",".join(f"{n}={v}" for n, v in options.items())


def host_rows(name, value, batch):
    """A scalar or a [batch] sequence/array as a contiguous numpy row array (None stays None)."""
    if value is None:
        return None
    want = ROW_TYPES[name]
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TopkpError(2, f"{name}: expected a number or a [batch] array of numbers, got "
                            f"{type(value).__name__} of {arr.dtype}")
    if name in ("k", "seeds", "offsets") and arr.dtype.kind == "f":
        raise TopkpError(2, f"{name}: expected integers, got {arr.dtype}")
    if arr.ndim == 0:
        arr = np.full(batch, arr, dtype=want)
    elif arr.shape != (batch,):
        raise TopkpError(2, f"{name}: shape {tuple(arr.shape)}, expected ({batch},) or a scalar")
    if name in ("seeds", "offsets") and arr.dtype.kind == "i":
        arr = arr.astype(np.int64).view(np.uint64)
    return np.ascontiguousarray(arr, dtype=want)


def ptr(arr):
    return None if arr is None else arr.ctypes.data


def host_run(logits_ptr, dtype, batch, vocab, stride, rows, algo, options, want_kept, draws,
             seed, offset, kept_ptr, samples_ptr):
    """Plan and run on host buffers: the plan is made from the rows, as `topkp apply` makes it."""
    k = rows["k"] if rows["k"] is not None else np.zeros(batch, np.int32)
    p = rows["p"] if rows["p"] is not None else np.ones(batch, np.float32)
    keyed = rows["seeds"] is not None or rows["offsets"] is not None
    spec = _lib.Spec(algo=algo.encode(), options=options.encode(), backend=_lib.CPU,
                     dtype=dtype, batch=batch, vocab=vocab, row_stride=stride,
                     want_kept=int(want_kept), draws=draws, row_keyed=int(keyed), k=ptr(k),
                     p=ptr(p), min_p=ptr(rows["min_p"]))
    plan = _lib.Plan(spec)
    work = np.empty(max(plan.workspace_bytes, 1), np.uint8)
    io = _lib.IO(logits=logits_ptr, k=ptr(k), p=ptr(p), min_p=ptr(rows["min_p"]),
                 kept=kept_ptr, samples=samples_ptr, seed=seed, offset=offset,
                 row_seed=ptr(rows["seeds"]), row_offset=ptr(rows["offsets"]))
    plan.run(io, work.ctypes.data)


def pick_sampler(algo, try_plan):
    """`algo`, or the first of SAMPLERS for which try_plan(name) raises nothing."""
    if algo is not None:
        return algo
    why = []
    for name in SAMPLERS:
        try:
            try_plan(name)
            return name
        except TopkpError as e:
            why.append(f"{name}: {e}")
    raise TopkpError(1, "no module samples this request: " + "; ".join(why))


_GPU_PLANS = {}


def gpu_plan(key, spec_fields):
    """The cached plan of a GPU problem (planned for any rows: docs/PYTHON.md, "CUDA")."""
    plan = _GPU_PLANS.get(key)
    if plan is None:
        plan = _lib.Plan(_lib.Spec(**spec_fields))
        plan.workspace = None
        _GPU_PLANS[key] = plan
    return plan


def numpy_dtype(arr, dtype):
    """The C dtype code of a numpy logits array (bf16 by `dtype="bf16"` on uint16 encodings,
    or ml_dtypes' bfloat16)."""
    if dtype is not None:
        if dtype not in _lib.DTYPES:
            raise TopkpError(2, f"dtype {dtype!r} is not one of f32, bf16, f16")
        need = np.float32 if dtype == "f32" else (np.float16, np.uint16)
        if arr.dtype not in np.atleast_1d(np.dtype(need) if dtype == "f32" else need):
            if not (dtype == "bf16" and arr.dtype.name == "bfloat16"):
                raise TopkpError(2, f"dtype {dtype!r} does not match logits of {arr.dtype}")
        return _lib.DTYPES[dtype]
    if arr.dtype == np.float32:
        return 0
    if arr.dtype == np.float16:
        return 2
    if arr.dtype.name == "bfloat16":
        return 1
    raise TopkpError(2, f"logits of {arr.dtype}: expected float32, float16 or bfloat16 "
                        "(uint16 encodings with dtype='bf16' or 'f16')")

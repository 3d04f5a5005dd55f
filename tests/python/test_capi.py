"""test_capi.py — the C entry point include/topkp_ops.h through ctypes, where the Python front
ends do not reach: what the library says of itself, a plan made without host rows (the GPU's
way, docs/PYTHON.md, "The C entry point") run on the CPU against the exact plan, and the
refusals of a spec, a run and a workspace (docs/PYTHON.md, "Errors")."""
import ctypes

import numpy as np
import pytest

from conftest import logits
from topkp import _lib
from topkp._lib import TopkpError

X = logits(batch=3, vocab=200, seed=31)


def _spec(**kw):
    base = dict(algo=b"cake", options=b"", backend=_lib.CPU, dtype=0, batch=3, vocab=200,
                row_stride=200, want_kept=1, draws=0, row_keyed=0)
    base.update(kw)
    return _lib.Spec(**base)


def _run(plan, k, p=None, kept=None, workspace=True):
    k = np.asarray(k, np.int32)
    p = np.ones(3, np.float32) if p is None else np.asarray(p, np.float32)
    kept = np.zeros((3, 200), np.uint8) if kept is None else kept
    work = np.empty(max(plan.workspace_bytes, 1), np.uint8)
    io = _lib.IO(logits=X.ctypes.data, k=k.ctypes.data, p=p.ctypes.data, kept=kept.ctypes.data)
    plan.run(io, work.ctypes.data if workspace else None)
    return kept


def test_the_library_describes_itself():
    assert _lib.LIB.topkp_ops_version() == 1
    assert _lib.LIB.topkp_ops_backends() & _lib.CPU
    algos = _lib.algos()
    assert set(algos) == {"naive_sort", "rtopk", "qrita", "cake", "rejection"}
    assert algos["rejection"][1] == _lib.OUT_SAMPLE and algos["rtopk"][0] == 1


def test_a_plan_without_rows_and_a_k_bound_equals_the_exact_plan():
    k = np.array([5, 9, 9], np.int32)
    exact = _lib.Plan(_spec(k=k.ctypes.data, p=np.ones(3, np.float32).ctypes.data))
    bound = _lib.Plan(_spec(has_k=1, k_bound=9))
    assert np.array_equal(_run(bound, k), _run(exact, k))
    with pytest.raises(TopkpError, match="more than the plan was made for"):
        _run(bound, [5, 10, 9])
    with pytest.raises(TopkpError, match="more than the plan was made for"):
        _run(bound, [5, 9, 9], p=[0.5, 1, 1])  # top-p: a filter the plan does not have


def test_a_k_bound_plans_cake_with_top_p_beside_its_top_k():
    """With the k_bound promise (every row's top-k on) no row is top-p alone, so cake, which
    refuses top-p alone past its slab, plans top-k then top-p at V = 4096 (the GPU's way for
    a scalar k and per-row p, docs/PYTHON.md "CUDA")."""
    x = logits(batch=3, vocab=4096, seed=32)
    k, p = np.full(3, 50, np.int32), np.array([0.5, 0.9, 1.0], np.float32)
    kw = dict(vocab=4096, row_stride=4096)
    exact = _lib.Plan(_spec(k=k.ctypes.data, p=p.ctypes.data, **kw))
    bound = _lib.Plan(_spec(has_k=1, has_p=1, k_bound=50, **kw))

    def run(plan, k):
        kept, work = np.zeros((3, 4096), np.uint8), np.empty(max(plan.workspace_bytes, 1), np.uint8)
        io = _lib.IO(logits=x.ctypes.data, k=k.ctypes.data, p=p.ctypes.data, kept=kept.ctypes.data)
        plan.run(io, work.ctypes.data)
        return kept
    assert np.array_equal(run(bound, k), run(exact, k))
    with pytest.raises(TopkpError, match="more than the plan was made for"):
        run(bound, np.array([50, 0, 50], np.int32))  # a top-p-only row breaks the promise


def test_cake_refuses_a_plan_for_any_top_k_by_name():
    with pytest.raises(TopkpError, match="cake") as e:
        _lib.Plan(_spec(vocab=4096, row_stride=4096, has_k=1))
    assert e.value.status == 1  # TOPKP_OPS_EUNSUPPORTED


@pytest.mark.parametrize("fields, text", [
    (dict(size=8), "of size 8"),
    (dict(backend=3), "backend 3 is not cpu"),
    (dict(dtype=7), "dtype 7 is not one of"),
    (dict(batch=0), "need batch >= 1"),
    (dict(vocab=2**23 + 1, row_stride=2**23 + 1), "vocab in [1, 8388608]"),
    (dict(row_stride=256), "not contiguous (row stride 256, vocab 200)"),
    (dict(want_kept=0), "ask for a kept mask or for draws"),
    (dict(draws=-1), "draws -1"),
    (dict(algo=b"nope"), "unknown algorithm 'nope'"),
    (dict(options=b"search=binary"), "cake has no option 'search'"),
    (dict(k=X.ctypes.data), "give both host rows k and p"),
])
def test_the_spec_is_validated(fields, text):
    spec = _spec(**fields)
    msg = ctypes.create_string_buffer(512)
    handle = ctypes.c_void_p()
    if "size" not in fields:
        spec.size = ctypes.sizeof(_lib.Spec)
    rc = _lib.LIB.topkp_ops_plan_create(ctypes.byref(spec), ctypes.byref(handle), msg, 512)
    assert rc != 0 and handle.value is None and text in msg.value.decode()


def test_a_run_is_validated_against_its_plan():
    plan = _lib.Plan(_spec(has_k=1, k_bound=9))
    with pytest.raises(TopkpError, match="the plan wants a kept mask"):
        k = np.full(3, 5, np.int32)
        io = _lib.IO(logits=X.ctypes.data, k=k.ctypes.data, p=np.ones(3, np.float32).ctypes.data)
        plan.run(io, None)
    with pytest.raises(TopkpError, match="per-row seeds or offsets given to a plan"):
        seeds = np.zeros(3, np.uint64)
        io = _lib.IO(logits=X.ctypes.data, k=k.ctypes.data, p=np.ones(3, np.float32).ctypes.data,
                     kept=np.zeros((3, 200), np.uint8).ctypes.data, row_seed=seeds.ctypes.data)
        plan.run(io, None)
    with pytest.raises(TopkpError, match="logits, k and p are required"):
        plan.run(_lib.IO(k=k.ctypes.data), None)
    if plan.workspace_bytes:
        with pytest.raises(TopkpError, match="workspace of 0 bytes"):
            _run(plan, [5, 5, 5], workspace=False)

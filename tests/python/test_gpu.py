"""test_gpu.py — the ops on CUDA tensors (docs/PYTHON.md, "CUDA"): equal to the CPU backend
bit for bit, no host synchronisation (torch.cuda.set_sync_debug_mode("error")), CUDA-graph
capture and replay with seeds as device tensors, and the call's overhead over the kernel alone
(printed; docs/PYTHON.md records it). Every test skips without a GPU or without the kernels."""
import time

import pytest

import topkp
from conftest import logits

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or "gpu" not in topkp.backends(),
                                reason="no CUDA device, or a CPU-only build of topkp")

ROWS = dict(k=[0, 1, 7, 40, 300, -3], p=[1.0, 0.5, 0.9, 0.0, 0.95, 0.7],
            min_p=[0.0, 0.1, 0.0, 0.05, 0.2, 0.0])


def _rows(device):
    return {"k": torch.tensor(ROWS["k"], dtype=torch.int32, device=device),
            "p": torch.tensor(ROWS["p"], device=device),
            "min_p": torch.tensor(ROWS["min_p"], device=device)}


@pytest.mark.parametrize("algo", ["naive_sort", "qrita", "rtopk"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cuda_mask_equals_cpu(algo, dtype):
    x = torch.from_numpy(logits()).to(dtype)
    rows = {"k": ROWS["k"]} if algo == "rtopk" else ROWS
    want = topkp.top_k_top_p_mask(x, algo=algo, **rows)
    rows_dev = {n: v for n, v in _rows("cuda").items() if n in rows}
    got = topkp.top_k_top_p_mask(x.cuda(), algo=algo, **rows_dev)
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("algo", ["naive_sort", "cake", "rejection"])
def test_cuda_sample_equals_cpu(algo):
    x = torch.from_numpy(logits(seed=3))
    seeds = torch.arange(6) * 5
    if algo == "cake":  # cake bounds its top-k set: a scalar k plans it on the GPU
        want = topkp.sample(x, algo=algo, seeds=seeds, draws=4, k=5, p=0.9)
        got = topkp.sample(x.cuda(), algo=algo, seeds=seeds.cuda(), draws=4, k=5, p=0.9)
    else:
        want = topkp.sample(x, algo=algo, seeds=seeds, draws=4, **ROWS)
        got = topkp.sample(x.cuda(), algo=algo, seeds=seeds.cuda(), draws=4, **_rows("cuda"))
    assert torch.equal(got.cpu(), want)


def test_no_host_synchronisation():
    x = torch.from_numpy(logits(seed=4)).cuda()
    rows, seeds = _rows("cuda"), torch.arange(6, device="cuda")
    topkp.sample(x, seeds=seeds, **rows)  # plan and workspace outside the check
    topkp.top_k_top_p_mask(x, **rows)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        topkp.sample(x, seeds=seeds, **rows)
        topkp.top_k_top_p_mask(x, **rows)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_graph_capture_and_replay_with_device_seeds():
    x = torch.from_numpy(logits(seed=5)).cuda()
    rows, seeds = _rows("cuda"), torch.arange(6, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        topkp.sample(x, seeds=seeds, draws=2, **rows)  # warm-up: plan and workspace
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = topkp.sample(x, seeds=seeds, draws=2, **rows)
    for base in (0, 100, 7):
        seeds.copy_(torch.arange(6, device="cuda") + base)
        g.replay()
        torch.cuda.synchronize()
        want = topkp.sample(x.cpu(), seeds=seeds.cpu(), draws=2,
                            **{n: t.cpu() for n, t in rows.items()})
        assert torch.equal(out.cpu(), want)


def test_overhead_over_the_kernel(capsys):
    """Eager time per call against the same call replayed from a CUDA graph (the kernels
    alone): printed for docs/PYTHON.md, and bounded loosely (15 us at B = 1 is the target)."""
    x = torch.randn(1, 128000, device="cuda")
    k = torch.full((1,), 50, dtype=torch.int32, device="cuda")
    p = torch.full((1,), 0.9, device="cuda")
    for _ in range(10):
        topkp.top_k_top_p_mask(x, k=k, p=p)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        topkp.top_k_top_p_mask(x, k=k, p=p)
    n = 200

    def per_call(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6
    eager = per_call(lambda: topkp.top_k_top_p_mask(x, k=k, p=p))
    replay = per_call(g.replay)
    with capsys.disabled():
        print(f"\ntopkp overhead, qrita B=1 V=128000: eager {eager:.1f} us a call, graph replay "
              f"{replay:.1f} us, overhead {eager - replay:.1f} us")
    assert eager - replay < 200

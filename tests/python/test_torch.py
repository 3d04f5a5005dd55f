"""test_torch.py — the custom ops topkp::mask and topkp::sample under torch.compile
(fullgraph, aot_eager; one test with the default backend), their fake implementations, and
every error the front ends raise, each carrying the C entry point's message where it has one
(docs/PYTHON.md, "PyTorch", "Errors")."""
import numpy as np
import pytest

import topkp
from conftest import logits

torch = pytest.importorskip("torch")


def test_ops_are_registered_with_fake_implementations():
    x = torch.from_numpy(logits())
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        m = torch.ops.topkp.mask(fx, None, torch.full((6,), 0.9), None, "qrita", "", 0)
        s = torch.ops.topkp.sample(fx, None, None, None, None, None, "", "", 3, 0, 0, False, 0)
    assert m.shape == (6, 300) and m.dtype == torch.uint8
    assert s.shape == (6, 3) and s.dtype == torch.int64
    torch.library.opcheck(torch.ops.topkp.mask.default,
                          (x, torch.full((6,), 5, dtype=torch.int32), None, None, "qrita", "", 5))


def test_compile_fullgraph_mask_and_sample():
    x = torch.from_numpy(logits(seed=2))
    k = torch.tensor([1, 2, 3, 4, 5, 0], dtype=torch.int32)
    seeds = torch.arange(6)

    def f(x, k, seeds):
        masked = topkp.top_k_top_p_mask(x, k=k, p=0.9, output="logits")
        return masked, topkp.sample(x, k=k, p=0.9, seeds=seeds, draws=2)
    g = torch.compile(f, backend="aot_eager", fullgraph=True)
    for _ in range(2):
        got, want = g(x, k, seeds), f(x, k, seeds)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_compile_with_the_default_backend():
    x = torch.from_numpy(logits(seed=3))
    f = lambda x: topkp.top_k_top_p_mask(x, k=10, p=0.8, min_p=0.01, output="logits") * 2
    g = torch.compile(f, fullgraph=True)
    assert torch.equal(g(x), f(x))


def test_compile_sample_without_seeds_advances_the_generator():
    x = torch.from_numpy(logits(seed=4))
    g = torch.compile(lambda x: topkp.sample(x, k=50, draws=2), backend="aot_eager",
                      fullgraph=True)
    torch.manual_seed(1)
    a, b = g(x), g(x)
    torch.manual_seed(1)
    assert torch.equal(g(x), a) and not torch.equal(a, b)


X = logits(batch=2, vocab=10)
T = torch.from_numpy(X)
ERRORS = [
    # (call, text the message holds)
    (lambda: topkp.top_k_top_p_mask(T.double(), k=1), "torch.float64"),
    (lambda: topkp.top_k_top_p_mask(X.astype(np.float64), k=1), "float64"),
    (lambda: topkp.top_k_top_p_mask(T[0], k=1), "expected [batch, vocab]"),
    (lambda: topkp.top_k_top_p_mask(X[0], k=1), "expected [batch, vocab]"),
    (lambda: topkp.top_k_top_p_mask(T.to("meta"), k=1), "expected a CPU or CUDA tensor"),
    (lambda: topkp.top_k_top_p_mask(T.t(), k=1), "rows must be contiguous"),
    (lambda: topkp.top_k_top_p_mask(np.asfortranarray(X), k=1), "not contiguous"),
    (lambda: topkp.top_k_top_p_mask(T[:, :0].contiguous(), k=1), "need batch >= 1"),
    (lambda: topkp.top_k_top_p_mask(X, k=2.5), "expected integers"),
    (lambda: topkp.top_k_top_p_mask(T, k=2.5), "expected an integer"),
    (lambda: topkp.top_k_top_p_mask(T, k="3"), "expected a number"),
    (lambda: topkp.top_k_top_p_mask(T, k=torch.ones(3, dtype=torch.int32)), "shape (3,)"),
    (lambda: topkp.top_k_top_p_mask(X, k=[1, 2, 3]), "shape (3,)"),
    (lambda: topkp.top_k_top_p_mask(T, k=torch.ones(2)), "expected torch.int32"),
    (lambda: topkp.top_k_top_p_mask(T, p=torch.ones(2, dtype=torch.int32)), "expected torch.float32"),
    (lambda: topkp.top_k_top_p_mask(T, p=float("nan")), "row 0: p is NaN"),
    (lambda: topkp.top_k_top_p_mask(X, p=[0.5, float("nan")]), "row 1: p is NaN"),
    (lambda: topkp.top_k_top_p_mask(T, min_p=float("nan")), "row 0: min_p is NaN"),
    (lambda: topkp.top_k_top_p_mask(T, p=float("inf")), "row 0: p = inf is not finite"),
    (lambda: topkp.top_k_top_p_mask(X, min_p=[0.1, float("-inf")]), "row 1: min_p = -inf is not finite"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, algo="nope"), "unknown algorithm 'nope'"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, algo="qr\nita"), "byte 3 is \\x0A"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, algo="q" * 64), "a name is 1-63 bytes"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, bogus=1), "has no option 'bogus'"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, search="fast"), "fast"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, search="a,b"), "holds no ','"),
    (lambda: topkp.top_k_top_p_mask(T, p=0.5, algo="rtopk"), "rtopk cannot do this problem"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, algo="rejection"), "returns samples"),
    (lambda: topkp.top_k_top_p_mask(T, k=1, output="probs"), "expected 'mask' or 'logits'"),
    (lambda: topkp.sample(T, k=1, algo="qrita"), "returning samples"),
    (lambda: topkp.sample(T, k=1, draws=0), "draws=0"),
    (lambda: topkp.sample(X, k=1, seeds=[1.5, 2]), "expected integers"),
    (lambda: topkp.sample(T, k=1, seeds=torch.ones(2)), "expected torch.int64"),
    (lambda: topkp.sample(T, k=1, offsets=torch.ones(3, dtype=torch.int64)), "shape (3,)"),
    (lambda: topkp.top_k_top_p_mask(X.astype(np.uint16), k=1), "uint16"),
    (lambda: topkp.top_k_top_p_mask(X, k=1, dtype="bf16"), "does not match"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_raise_with_their_message(case):
    call, text = ERRORS[case]
    with pytest.raises(topkp.TopkpError) as e:
        call()
    assert text in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bf16_encodings_in_numpy_equal_torch_bf16():
    x = torch.from_numpy(logits(seed=5)).bfloat16()
    enc = x.view(torch.int16).numpy().view(np.uint16)
    got = topkp.top_k_top_p_mask(enc, k=9, p=0.7, dtype="bf16")
    assert np.array_equal(got, topkp.top_k_top_p_mask(x, k=9, p=0.7).numpy())

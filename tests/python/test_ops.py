"""test_ops.py — topkp.top_k_top_p_mask and topkp.sample from numpy and from CPU tensors
equal `topkp apply` bit for bit (every module, the three dtypes, scalar and per-row k, p,
min_p, both keying modes), and hold the properties of docs/SEMANTICS.md on their own."""
import numpy as np
import pytest

import topkp
from conftest import apply, logits

torch = pytest.importorskip("torch")

MASKERS = ["naive_sort", "qrita", "cake", "rtopk"]
SAMPLERS = ["naive_sort", "cake", "rejection"]
TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
ROWS = dict(k=[0, 1, 7, 40, 300, -3], p=[1.0, 0.5, 0.9, 0.0, 0.95, 0.7],
            min_p=[0.0, 0.1, 0.0, 0.05, 0.2, 0.0])


def as_torch(x, dtype):
    return torch.from_numpy(x).to(TORCH_DTYPES[dtype])


@pytest.mark.parametrize("algo", MASKERS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_mask_equals_apply(tmp_path, algo, dtype):
    x = logits()
    rows = dict(k=ROWS["k"]) if algo == "rtopk" else ROWS
    want, _ = apply(tmp_path, x, algo, dtype=dtype, **rows)
    got = topkp.top_k_top_p_mask(as_torch(x, dtype), algo=algo, **rows)
    assert got.dtype == torch.bool and torch.equal(got, torch.from_numpy(want))
    if dtype != "bf16":  # numpy has float16, and no bfloat16
        got_np = topkp.top_k_top_p_mask(as_torch(x, dtype).numpy(), algo=algo, **rows)
        assert np.array_equal(got_np, want)


@pytest.mark.parametrize("algo", ["qrita", "cake"])
def test_scalar_arguments_equal_apply(tmp_path, algo):
    x = logits(seed=2, ties=True)
    want, _ = apply(tmp_path, x, algo, k=20, p=0.8, min_p=0.01)
    assert np.array_equal(topkp.top_k_top_p_mask(x, k=20, p=0.8, min_p=0.01, algo=algo), want)


@pytest.mark.parametrize("algo", SAMPLERS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_sample_equals_apply_batch_keyed(tmp_path, algo, dtype):
    x = logits(seed=3)
    _, want = apply(tmp_path, x, algo, dtype=dtype, draws=4, seed=77, offset=5, **ROWS)
    got = topkp.sample(as_torch(x, dtype), algo=algo, draws=4, seed=77, offset=5, **ROWS)
    assert got.dtype == torch.int64 and torch.equal(got, torch.from_numpy(want))


@pytest.mark.parametrize("algo", SAMPLERS)
def test_sample_equals_apply_row_keyed(tmp_path, algo):
    x = logits(seed=4)
    seeds = np.array([1, 2, 3, 2**64 - 1, 0, 9], np.uint64)
    offsets = np.array([0, 5, 2**63, 1, 7, 7], np.uint64)
    _, want = apply(tmp_path, x, algo, draws=3, seeds=seeds, offsets=offsets, **ROWS)
    got = topkp.sample(x, algo=algo, draws=3, seeds=seeds, offsets=offsets, **ROWS)
    assert np.array_equal(got, want)
    t = topkp.sample(torch.from_numpy(x), algo=algo, draws=3, seeds=torch.from_numpy(
        seeds.view(np.int64)), offsets=torch.from_numpy(offsets.view(np.int64)), **ROWS)
    assert torch.equal(t, torch.from_numpy(want))


def test_row_keyed_draws_follow_the_row_not_its_place():
    x = logits(seed=5)
    seeds = np.arange(6, dtype=np.uint64) * 11
    full = topkp.sample(x, k=30, seeds=seeds, draws=8, algo="rejection")
    alone = topkp.sample(x[3:4].copy(), k=30, seeds=seeds[3:4], draws=8, algo="rejection")
    assert np.array_equal(full[3:4], alone)


def test_options_reach_the_module(tmp_path):
    x = logits(seed=6)
    want, _ = apply(tmp_path, x, "qrita", k=10, p=0.9, options=["search=binary", "max_iter=40"])
    assert np.array_equal(topkp.top_k_top_p_mask(x, k=10, p=0.9, algo="qrita", search="binary",
                                                  max_iter=40), want)


def test_masked_logits_output():
    x = logits(seed=7)
    mask = topkp.top_k_top_p_mask(x, k=5)
    out = topkp.top_k_top_p_mask(x, k=5, output="logits")
    assert np.array_equal(out[mask], x[mask]) and np.all(np.isneginf(out[~mask]))
    t = topkp.top_k_top_p_mask(torch.from_numpy(x).bfloat16(), k=5, output="logits")
    assert t.dtype == torch.bfloat16 and torch.equal(torch.isfinite(t), torch.from_numpy(mask))


# ---- the properties of docs/SEMANTICS.md, judged here without the CLI ----

def test_top_k_keeps_the_k_largest():
    x = logits(seed=8)
    for k in (1, 5, 299):
        mask = topkp.top_k_top_p_mask(x, k=k)
        assert (mask.sum(1) == k).all()
        kept_min = np.where(mask, x, np.inf).min(1)
        dropped_max = np.where(mask, -np.inf, x).max(1)
        assert (kept_min >= dropped_max).all()


def test_top_p_keeps_the_smallest_prefix_reaching_p():
    x = logits(seed=9).astype(np.float64)
    p = 0.8
    mask = topkp.top_k_top_p_mask(x.astype(np.float32), p=p)
    prob = np.exp(x - x.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    for r in range(x.shape[0]):
        kept = np.sort(prob[r][mask[r]])
        assert kept.sum() >= p - 1e-6 and kept.sum() - kept[0] < p + 1e-6
        assert kept[0] >= prob[r][~mask[r]].max()


def test_draws_lie_in_the_kept_set_and_a_row_without_valid_tokens_draws_minus_one():
    x = logits(seed=10)
    x[2] = -np.inf
    mask = topkp.top_k_top_p_mask(x, k=9, p=0.9)
    s = topkp.sample(x, k=9, p=0.9, draws=50, seed=3)
    assert (s[2] == -1).all() and not mask[2].any()
    for r in (0, 1, 3, 4, 5):
        assert mask[r][s[r]].all()


def test_draw_frequencies_follow_the_renormalised_distribution():
    x = np.log(np.array([[0.5, 0.3, 0.15, 0.05]], np.float32))
    s = topkp.sample(x, p=0.9, draws=20000, seed=1)[0]
    freq = np.bincount(s, minlength=4) / s.size
    assert freq[3] == 0 and np.abs(freq[:3] - np.array([0.5, 0.3, 0.15]) / 0.95).max() < 0.02


def test_without_seeds_each_call_advances_the_offset():
    x = logits(seed=11)
    topkp.manual_seed(5)
    a, b = topkp.sample(x, draws=4), topkp.sample(x, draws=4)
    assert not np.array_equal(a, b)
    topkp.manual_seed(5)
    assert np.array_equal(topkp.sample(x, draws=4), a)
    # the second call drew at offset B * draws rounded up to 4 = 24
    assert np.array_equal(topkp.sample(x, draws=4, seed=5, offset=24), b)
    torch.manual_seed(9)
    t1 = topkp.sample(torch.from_numpy(x), draws=4)
    torch.manual_seed(9)
    assert torch.equal(topkp.sample(torch.from_numpy(x), draws=4), t1)
    assert not torch.equal(topkp.sample(torch.from_numpy(x), draws=4), t1)


def test_algo_none_picks_a_sampler():
    x = logits(seed=12)
    s = topkp.sample(x, k=5, seed=1)
    assert np.array_equal(s, topkp.sample(x, k=5, seed=1, algo="rejection"))

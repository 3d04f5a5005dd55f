"""test_compat.py — the adapters take vLLM's and FlashInfer's call shapes and give their
return types, dtypes and in-place behaviour, with topkp's kept sets and draws
(docs/PYTHON.md, "The adapters"; docs/SEMANTICS.md, "Probabilities")."""
import numpy as np
import pytest

import topkp
from conftest import logits

torch = pytest.importorskip("torch")
from topkp.compat import flashinfer, vllm  # noqa: E402

X = torch.from_numpy(logits(batch=4, vocab=64, seed=21))
LX = torch.log(torch.softmax(X, dim=-1))  # what FlashInfer's samplers over logits draw by


def test_vllm_masks_in_place_and_returns_the_logits():
    x = X.clone()
    k = torch.tensor([3, 64, 10, 1], dtype=torch.long)
    p = torch.tensor([0.9, 0.5, 1.0, 0.3])
    out = vllm.apply_top_k_top_p(x, k, p)
    assert out.data_ptr() == x.data_ptr() and out.dtype == torch.float32
    assert torch.equal(torch.isfinite(out), topkp.top_k_top_p_mask(X, k=k, p=p))
    assert vllm.apply_top_k_top_p(X, None, None) is X


def test_flashinfer_sampling_from_logits_shapes_and_keys():
    s = flashinfer.top_k_top_p_sampling_from_logits(X, 5, 0.9, seed=3, offset=8)
    assert s.shape == (4,) and s.dtype == torch.int32
    want = topkp.sample(LX, k=5, p=0.9, seed=3, offset=8, algo="rejection")[:, 0]
    assert torch.equal(s.long(), want)
    idx = torch.tensor([0, 0, 3], dtype=torch.int64)
    si = flashinfer.top_k_top_p_sampling_from_logits(X, 5, 0.9, indices=idx, seed=3)
    assert si.shape == (3,) and si.dtype == torch.int64
    rows = flashinfer.top_k_top_p_sampling_from_logits(
        X, torch.full((4,), 5, dtype=torch.int32), torch.full((4,), 0.9),
        seed=torch.arange(4), offset=torch.tensor([7]))
    assert torch.equal(rows.long(), topkp.sample(LX, k=5, p=0.9, seeds=torch.arange(4),
                                                 offsets=torch.full((4,), 7))[:, 0])


def test_flashinfer_generator_keys_each_call():
    g = torch.Generator().manual_seed(4)
    a = flashinfer.top_k_top_p_sampling_from_logits(X, 10, 0.95, generator=g)
    b = flashinfer.top_k_top_p_sampling_from_logits(X, 10, 0.95, generator=g)
    g.manual_seed(4)
    assert torch.equal(flashinfer.top_k_top_p_sampling_from_logits(X, 10, 0.95, generator=g), a)
    assert not torch.equal(a, b)


def test_flashinfer_joint_order_draws_from_what_both_filters_keep():
    both = topkp.top_k_top_p_mask(X, k=5) & topkp.top_k_top_p_mask(X, p=0.5)
    for seed in range(20):
        s = flashinfer.top_k_top_p_sampling_from_logits(X, 5, 0.5, filter_apply_order="joint",
                                                        seed=seed)
        assert both[torch.arange(4), s.long()].all()
    with pytest.raises(ValueError, match="Invalid filter_apply_order"):
        flashinfer.top_k_top_p_sampling_from_logits(X, 5, 0.9, filter_apply_order="other")


@pytest.mark.parametrize("bad, text", [
    (torch.tensor(3, dtype=torch.int), r"Expected a 1D tensor of shape \(batch_size,\) or "
                                       r"scalar.*got a 0-dimensional tensor"),
    (torch.ones(4, 2, dtype=torch.int), r"Expected a 1D tensor or scalar.*got a 2D tensor"),
    (torch.tensor([3], dtype=torch.int), "Sampling parameter tensor batch size mismatch")])
def test_flashinfer_parameter_tensors_are_checked_as_flashinfer_does(bad, text):
    probs = torch.softmax(X, dim=-1)
    for call in (lambda: flashinfer.top_k_renorm_probs(probs, bad),
                 lambda: flashinfer.top_p_renorm_probs(probs, bad),
                 lambda: flashinfer.top_k_mask_logits(X, bad),
                 lambda: flashinfer.top_k_top_p_sampling_from_logits(X, bad, 0.9, seed=1)):
        with pytest.raises(ValueError, match=text):
            call()
    int_p = flashinfer.top_p_renorm_probs(probs, torch.zeros(4, dtype=torch.int))
    assert int_p.shape == probs.shape  # an int tensor of p is read as float, as there


def test_vllm_broadcasts_one_value_and_writes_a_strided_view():
    backing = torch.full((4, 72), -1000.0)
    view = backing[:, :64]
    view.copy_(X)
    out = vllm.apply_top_k_top_p_triton(view, torch.tensor([5]), None)
    assert out.data_ptr() == view.data_ptr() and not out.is_contiguous()
    assert (torch.isfinite(out).sum(-1) == 5).all() and (backing[:, 64:] == -1000).all()
    same = vllm.apply_top_k_top_p_pytorch(X.clone(), torch.full((4,), 5), torch.tensor([1.0]))
    assert torch.equal(same, out)


def test_flashinfer_probs_calls():
    probs = torch.softmax(X, dim=-1)
    kept = topkp.top_k_top_p_mask(torch.log(probs), k=6, p=0.8)
    s, valid = flashinfer.top_k_top_p_sampling_from_probs(probs, 6, 0.8, seed=1,
                                                          return_valid=True)
    assert s.dtype == torch.int32 and valid.all()
    assert kept[torch.arange(4), s.long()].all()
    for renorm, kw in ((flashinfer.top_k_renorm_probs, {"top_k": 6}),
                       (flashinfer.top_p_renorm_probs, {"top_p": 0.8})):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            pr = probs.to(dtype)
            out = renorm(pr, **kw)
            assert out.dtype == dtype and out.data_ptr() != pr.data_ptr()
            assert torch.allclose(out.float().sum(-1), torch.ones(4), atol=1e-2)
    mask_k = topkp.top_k_top_p_mask(torch.log(probs), k=6)
    assert torch.equal(flashinfer.top_k_renorm_probs(probs, 6) > 0, mask_k)
    with pytest.raises(ValueError, match="NaN"):
        bad = probs.clone()
        bad[1, 2] = float("nan")
        flashinfer.top_k_top_p_sampling_from_probs(bad, 6, 0.8, check_nan=True)


def test_flashinfer_top_k_mask_logits_keeps_the_dtype_and_the_input():
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x = X.to(dtype)
        out = flashinfer.top_k_mask_logits(x, 7)
        assert out.dtype == dtype and out.data_ptr() != x.data_ptr()
        assert (torch.isfinite(out).sum(-1) == 7).all() and torch.isfinite(x).all()


def test_the_documented_differences_hold():
    """The examples of docs/PYTHON.md, "Where the semantics differ", and docs/SEMANTICS.md,
    "Probabilities"."""
    ties = torch.tensor([[2.0, 1.0, 1.0, 0.0]])
    assert topkp.top_k_top_p_mask(ties, k=2).tolist() == [[True, True, False, False]]
    boundary = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    assert topkp.top_k_top_p_mask(boundary, p=0.75).tolist() == [[True, True, False]]
    nan = torch.tensor([[2.0, float("nan"), 1.0, 0.0]])
    assert topkp.top_k_top_p_mask(nan, k=2).tolist() == [[True, False, True, False]]
    a = np.float32(1e-6)
    probs = torch.tensor([[a, np.nextafter(a, np.float32(1))]])
    assert flashinfer.top_k_renorm_probs(probs, 1).tolist() == [[1.0, 0.0]]
    zero = torch.tensor([[0.0, 0.0, 0.0]])
    s, valid = flashinfer.top_k_top_p_sampling_from_probs(zero, 2, 0.9, seed=0, return_valid=True)
    assert s.tolist() == [0] and valid.tolist() == [False]  # FlashInfer's answer there


def test_flashinfer_rows_with_nothing_to_draw_get_0_and_not_valid():
    """A poisoned row (all NaN, all -inf) draws 0 with valid False, as FlashInfer's kernels
    write; the rows beside it draw what topkp draws."""
    x = torch.from_numpy(logits(batch=6, vocab=64, seed=5)) * 5
    x[0], x[1], x[2] = float("nan"), float("-inf"), float("inf")
    probs = torch.softmax(x, dim=-1)  # row 2, all +inf, is NaN there
    probs[0], probs[1] = float("nan"), 0.0
    for k, p in ((50, 1.0), (64, 0.9), (50, 0.9)):
        s = flashinfer.top_k_top_p_sampling_from_logits(x, k, p, seed=4,
                                                         indices=torch.arange(6))
        lx = torch.cat([x[:3], torch.log(torch.softmax(x[3:], dim=-1))])  # NaN, +inf rows kept
        want = topkp.sample(lx, k=k, p=p, seed=4)[:, 0]
        assert s.dtype == torch.int64 and s[:2].tolist() == [0, 0]
        assert want[:2].tolist() == [-1, -1] and torch.equal(s[2:], want[2:])
    samplers = [lambda q, **kw: flashinfer.sampling_from_probs(q, **kw),
                lambda q, **kw: flashinfer.top_k_sampling_from_probs(q, 5, **kw),
                lambda q, **kw: flashinfer.top_p_sampling_from_probs(q, 0.9, **kw),
                lambda q, **kw: flashinfer.min_p_sampling_from_probs(q, 0.1, **kw),
                lambda q, **kw: flashinfer.top_k_top_p_sampling_from_probs(q, 5, 0.9, **kw)]
    for draw in samplers:
        s, valid = draw(probs, seed=2, return_valid=True)
        assert s.dtype == torch.int32 and s[:3].tolist() == [0, 0, 0]
        assert valid.tolist() == [False] * 3 + [True] * 3


def test_flashinfer_single_filter_samplers_draw_from_their_kept_sets():
    """sampling_from_* (no filter), top_k_ / top_p_ / min_p_sampling_from_probs: topkp's draws
    with that one filter, FlashInfer's dtypes and return_valid."""
    probs = torch.softmax(X, dim=-1)
    lp = torch.log(probs)
    cases = [(flashinfer.sampling_from_probs(probs, seed=9), {}),
             (flashinfer.top_k_sampling_from_probs(probs, 3, seed=9), {"k": 3}),
             (flashinfer.top_p_sampling_from_probs(probs, torch.full((4,), 0.5), seed=9),
              {"p": 0.5}),
             (flashinfer.min_p_sampling_from_probs(probs, 0.2, seed=9), {"min_p": 0.2})]
    for got, filt in cases:
        assert got.shape == (4,) and got.dtype == torch.int32
        assert torch.equal(got.long(), topkp.sample(lp, seed=9, **filt)[:, 0]), filt
        kept = topkp.top_k_top_p_mask(lp, **filt) if filt else torch.isfinite(lp)
        assert bool(kept.gather(1, got.long()[:, None]).all()), filt
    s = flashinfer.sampling_from_logits(X, seed=9, indices=torch.tensor([1, 1, 2]))
    assert s.dtype == torch.int64 and torch.equal(s, topkp.sample(LX[[1, 1, 2]], seed=9)[:, 0])
    with pytest.raises(ValueError, match="min_p"):
        flashinfer.min_p_sampling_from_probs(probs, torch.full((3,), 0.1))


def test_flashinfer_one_element_seed_keys_each_row():
    """A [1] seed or offset is per-row keying, left on its device (a captured graph replays
    with what it holds), as a [B] one; an int keys the batch; a float tensor is refused."""
    one = flashinfer.top_k_top_p_sampling_from_logits(X, 20, 0.9, seed=torch.tensor([11]),
                                                       offset=torch.tensor([4]))
    rows = flashinfer.top_k_top_p_sampling_from_logits(X, 20, 0.9, seed=torch.full((4,), 11),
                                                        offset=4)
    want = topkp.sample(LX, k=20, p=0.9, seeds=torch.full((4,), 11), offsets=torch.full((4,), 4))
    assert torch.equal(one.long(), want[:, 0]) and torch.equal(rows.long(), want[:, 0])
    batch = flashinfer.top_k_top_p_sampling_from_logits(X, 20, 0.9, seed=11, offset=4)
    assert torch.equal(batch.long(), topkp.sample(LX, k=20, p=0.9, seed=11, offset=4)[:, 0])
    with pytest.raises(topkp.TopkpError, match="integer tensor"):
        flashinfer.sampling_from_logits(X, seed=torch.tensor([1.5]))


def test_flashinfer_softmax_is_torchs_with_temperature():
    t = torch.tensor([0.5, 1.0, 2.0, 4.0])
    assert torch.allclose(flashinfer.softmax(X), torch.softmax(X, -1))
    assert torch.allclose(flashinfer.softmax(X, temperature=0.7), torch.softmax(X / 0.7, -1))
    assert torch.allclose(flashinfer.softmax(X, temperature=t), torch.softmax(X / t[:, None], -1))


def test_flashinfer_logits_and_their_softmax_draw_alike():
    """A sampler over logits draws what the one over torch.softmax(logits) draws, bit for bit
    (FlashInfer's samplers over logits take the softmax first; its tests compare the two).
    Row 0 of generator 28 (k = 16000, p = 0.1) and row 4 of generator 32 (k = 3200, p = 0.5)
    are rows where ranking the logits themselves draws another token (per-row keys: the
    draw does not depend on the row's place)."""
    key = dict(seed=torch.full((8,), 5), offset=torch.zeros(8, dtype=torch.int64))
    for gen, k, p in ((28, 16000, 0.1), (32, 3200, 0.5)):
        x = torch.rand(8, 32000, generator=torch.Generator().manual_seed(gen)) * 5
        probs = torch.softmax(x, dim=-1)
        for order in ("joint", "top_k_first"):
            a = flashinfer.top_k_top_p_sampling_from_logits(x, k, p, filter_apply_order=order,
                                                             **key)
            b = flashinfer.top_k_top_p_sampling_from_probs(probs, k, p,
                                                            filter_apply_order=order, **key)
            assert torch.equal(a, b), (gen, order)
        assert torch.equal(flashinfer.sampling_from_logits(x, **key),
                           flashinfer.sampling_from_probs(probs, **key))


def test_empty_batches_pass_through_the_adapters():
    """A batch of no rows (an engine step with nothing to sample): empty results, no error."""
    x = torch.empty(0, 50)
    assert vllm.apply_top_k_top_p(x, torch.empty(0, dtype=torch.long), torch.empty(0)) is x
    s, valid = flashinfer.sampling_from_probs(x, seed=1, return_valid=True)
    assert s.shape == (0,) and s.dtype == torch.int32 and valid.shape == (0,)
    assert flashinfer.top_k_top_p_sampling_from_logits(x, 5, 0.9, seed=1).shape == (0,)
    assert flashinfer.top_k_renorm_probs(x, 5).shape == (0, 50)
    assert flashinfer.top_k_mask_logits(x, 5).shape == (0, 50)


def _speculative_case(rows, n, vocab, seed):
    """One draft row and one target row per position, repeated over `rows` rows; each row's
    drafts drawn from the draft rows (as a draft model draws them)."""
    g = torch.Generator().manual_seed(seed)
    draft = torch.rand(n, vocab, generator=g) ** 3
    draft /= draft.sum(-1, keepdim=True)
    target = torch.rand(n + 1, vocab, generator=g) ** 3
    target /= target.sum(-1, keepdim=True)
    ids = torch.multinomial(draft, rows, replacement=True, generator=g).T.to(torch.int32)
    return draft, target, ids.contiguous()


def test_flashinfer_chain_speculative_sampling_shapes_prefix_and_counts():
    draft, target, ids = _speculative_case(300, 3, 16, seed=5)
    d, t = draft.expand(300, 3, 16), target.expand(300, 4, 16)
    acc0 = torch.full((300,), 2, dtype=torch.int32)
    emi0 = torch.full((300,), 1, dtype=torch.int32)
    out, acc, emi = flashinfer.chain_speculative_sampling(d, ids, t, acc0, emi0, seed=9)
    assert out.shape == (300, 4) and out.dtype == torch.int32
    assert acc is acc0 and emi is emi0  # added in place
    stop = emi - 1
    assert torch.equal(emi, (out != -1).sum(dim=1).int())  # emitted + 1 tokens, from 1 + 1
    assert bool((acc - 2 >= stop).all()) and bool((acc - 2 <= 3).all())
    pos = torch.arange(4)[None]
    assert torch.equal(out[:, :3][pos[:, :3] < stop[:, None]], ids[pos[:, :3] < stop[:, None]])
    assert bool((out[pos > stop[:, None]] == -1).all())
    drawn = out[torch.arange(300), stop.long()]
    assert bool(((drawn >= 0) & (drawn < 16)).all())
    again = flashinfer.chain_speculative_sampling(d, ids, t, seed=9)[0]
    assert torch.equal(again, out)  # an int seed repeats the call


def test_flashinfer_chain_speculative_sampling_keeps_a_target_that_agrees():
    """FlashInfer's own check: a one-hot target equal to the drafts keeps them all and draws
    its bonus token."""
    g = torch.Generator().manual_seed(2)
    b, n, vocab = 50, 5, 111
    draft = torch.rand(b, n, vocab, generator=g)
    draft /= draft.sum(-1, keepdim=True)
    ids = torch.randint(vocab, (b, n), generator=g)
    want = torch.randint(vocab, (b, n + 1), generator=g)
    want[:, :n] = ids
    target = torch.zeros(b, n + 1, vocab).scatter_(2, want[..., None], 1)
    out, acc, emi = flashinfer.chain_speculative_sampling(draft, ids, target,
                                                          generator=torch.Generator())
    assert torch.equal(out.long(), want) and bool((acc == n).all()) and bool((emi == n).all())


def test_flashinfer_chain_speculative_sampling_draws_from_the_target():
    """Speculative sampling's promise: whatever the draft, the first token follows the target's
    first row; the chain's length follows the acceptance rates sum(min(draft, target)) and the
    token drawn where it stops follows the residual there (the last target row after a whole
    chain). Frequencies within 5 standard errors over 40000 rows."""
    rows, vocab = 40000, 8
    draft, target, ids = _speculative_case(rows, 2, vocab, seed=11)
    out, _, emi = flashinfer.chain_speculative_sampling(
        draft.expand(rows, 2, vocab), ids, target.expand(rows, 3, vocab), seed=17)

    def follows(tokens, probs, what):
        freq = torch.bincount(tokens.long(), minlength=probs.numel()).double() / tokens.numel()
        se = (probs.double() * (1 - probs.double()) / tokens.numel()).sqrt() + 1e-4
        worst = ((freq - probs.double()).abs() / se).max().item()
        assert worst < 5, f"{what} (seed 11/17): {worst:.1f} standard errors off"

    follows(out[:, 0], target[0], "first token against target row 0")
    a = torch.minimum(draft, target[:2]).sum(-1)
    follows(emi, torch.stack([1 - a[0], a[0] * (1 - a[1]), a[0] * a[1]]), "chain length")
    for stop in range(3):
        w = target[stop] if stop == 2 else (target[stop] - draft[stop]).clamp_min(0)
        follows(out[emi == stop, stop], w / w.sum(), f"token drawn at position {stop}")

"""test_vllm_client.py — scripts/vllm_sampler_client.py (docs/PYTHON.md, "A real client"): its
chi-square tests on counts whose answer is known (always), and the script on a tiny batch
through vLLM's own Sampler, with our op and with a wrong op that it must refuse (only where
scripts/vllm-sampler-files.sh has assembled the vLLM files; CI has none, and says so)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import vllm_sampler_client as client  # noqa: E402

SRC = os.environ.get("TOPKP_VLLM_SRC") or os.path.join(ROOT, ".vllm-src")
TINY = ["--vllm-src", SRC, "--logits", "none", "--batch", "12", "--vocab", "300",
        "--draws", "1500", "--chunk", "500", "--reps", "2", "--warmup", "1", "--device", "cpu"]


def test_chi2_sf_matches_the_tables():
    assert client.chi2_sf(torch, 3.841459, 1) == pytest.approx(0.05, abs=1e-5)
    assert client.chi2_sf(torch, 18.307038, 10) == pytest.approx(0.05, abs=1e-5)
    assert client.chi2_sf(torch, 5.0, 0) == 1.0


def test_two_sample_accepts_equal_counts_and_refuses_shifted_ones():
    same = torch.tensor([500, 300, 150, 50, 3, 2])
    _, df, p = client.two_sample(torch, same, same.clone())
    assert df == 4 and p == pytest.approx(1.0)  # the two small bins pool into one
    _, _, p = client.two_sample(torch, same, torch.tensor([300, 500, 150, 50, 3, 2]))
    assert p < 1e-6


def test_goodness_of_fit_tells_the_right_probabilities_from_wrong_ones():
    counts = torch.tensor([510, 290, 200])
    assert client.goodness(torch, counts, torch.tensor([0.5, 0.3, 0.2]))[2] > 0.5
    assert client.goodness(torch, counts, torch.tensor([0.4, 0.4, 0.2]))[2] < 1e-6


def _vllm_files():
    path = os.path.join(SRC, "vllm", "v1", "sample", "sampler.py")
    if not os.path.isfile(path):
        pytest.skip(f"no vLLM Sampler files ({path} is missing): assemble them with "
                    "scripts/vllm-sampler-files.sh, docs/PYTHON.md \"A real client\"")


@pytest.fixture
def isolated(monkeypatch):
    """main() prepends --vllm-src to sys.path and sets VLLM_USE_FLASHINFER_SAMPLER: undone."""
    _vllm_files()
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("VLLM_USE_FLASHINFER_SAMPLER", "0")
    return monkeypatch


def test_the_sampler_with_our_op_passes_every_check(isolated, capsys):
    assert client.main(TINY) == 0
    out = capsys.readouterr().out
    for line in ("(a) greedy rows 2", "(b) filtered rows 8", "(c) PASS",
                 "(d) CPU wall time", "vllm_sampler_client: PASS"):
        assert line in out, out


def test_a_wrong_op_in_the_sampler_fails_the_kept_set_check(isolated, capsys):
    from topkp.compat import vllm as compat
    right = compat.apply_top_k_top_p

    def one_fewer(logits, k, p, *args, **kwargs):  # top-k keeps k - 1 tokens
        k = torch.where(k < logits.shape[1], (k - 1).clamp(min=1), k)
        return right(logits, k, p)
    isolated.setattr(compat, "apply_top_k_top_p", one_fewer)
    assert client.main(TINY) == 1
    out = capsys.readouterr().out
    assert "with our op  FAIL" in out and "vllm_sampler_client: FAIL" in out, out

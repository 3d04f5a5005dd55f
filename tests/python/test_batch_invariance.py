"""test_batch_invariance.py — scripts/batch-invariance.py, the check run on the GPU against
FlashInfer's samplers and ours (docs/SEMANTICS.md, "Sampling: two keying modes"), catches a
sampler whose draw depends on the batch: our per-row-keyed samplers read `invariant` on every
check, the batch-keyed form and a sampler keyed by the row's position read `varies`."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "batch_invariance", os.path.join(ROOT, "scripts", "batch-invariance.py"))
bi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bi)


def verdicts(call, filters="k p"):
    x, rows = bi.make_rows(48, 512, "cpu", filters, 7)
    return {check: equal == n for check, n, equal in bi.checks(call, x, rows, 7)}


@pytest.mark.parametrize("algo", ["naive_sort", "cake", "rejection"])
def test_per_row_keys_are_invariant_and_the_batch_key_is_not(algo):
    keyed, batch_keyed = bi.topkp_sampler(algo)
    assert verdicts(keyed) == {"permute": True, "others": True, "alone": True}
    assert verdicts(keyed, "k p min_p") == {"permute": True, "others": True, "alone": True}
    batch = verdicts(batch_keyed)
    assert not batch["permute"]  # 48 rows: all the same by chance is out of reach


def test_a_sampler_keyed_by_position_is_caught():
    keyed, _ = bi.topkp_sampler("rejection")

    def by_position(x, rows):  # the row's seed replaced by its index in the batch
        rows = dict(rows, seed=torch.arange(x.shape[0], dtype=torch.int64))
        return keyed(x, rows)
    v = verdicts(by_position)
    assert not v["permute"] and v["others"]

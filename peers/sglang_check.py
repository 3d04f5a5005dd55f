#!/usr/bin/env python3
"""sglang_check.py — checks, without a GPU, SGLang or FlashInfer, that `sglang.via_flashinfer`
makes the call SGLang 0.5.23's sampler makes on CUDA (docs/PEERS.md, "SGLang"), with the
stand-in modules of cast_check.py: one call of flashinfer.sampling's
top_k_top_p_sampling_from_probs per repetition, on float32 contiguous probabilities equal to
torch's softmax of the logits, int32 top_ks (2**30 where top-k is off), float32 top_ps,
filter_apply_order="joint" and no other keyword but the generator; input=softmax's in-place
softmax undone by reset() between repetitions; the cell's logits untouched; and the cells
where SGLang's sampler calls no kernel `unsupported`. Prints one line per failure and `ok N`
at the end; exit 1 on any failure. Used by tests/test_peers.c."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cast_check  # noqa: E402
from cell import SMALLEST_P, Cell, Unsupported  # noqa: E402

KERNEL = "flashinfer.sampling.top_k_top_p_sampling_from_probs"
TOP_K_ALL = 1 << 30
VOCAB = 64


def call_problems(h, cell):
    """What differs between one recorded call and SGLang's."""
    want_k = cell.k if cell.topk_on else TOP_K_ALL
    want_p = (cell.p if cell.p > 0 else SMALLEST_P) if cell.topp_on else 1.0
    ks, ps = (h.args + (None, None))[:2]
    checks = [
        (h.name == KERNEL, f"called {h.name}"),
        (h.x.dtype == torch.float32 and h.x.is_contiguous(), f"probs {h.x.dtype}, not contiguous float32"),
        (torch.equal(h.x, torch.softmax(cell.logits.float(), dim=-1)), "probs are not torch.softmax of the logits"),
        (len(h.args) == 2 and ks.dtype == torch.int32 and ks.tolist() == [want_k] * cell.batch,
         f"top_ks {ks} (want int32 {want_k})"),
        (ps is not None and torch.equal(ps, torch.full((cell.batch,), want_p, dtype=torch.float32)),
         f"top_ps {ps} (want float32 {want_p})"),
        (set(h.kwargs) == {"filter_apply_order", "generator"}, f"keywords {sorted(h.kwargs)}"),
        (h.kwargs.get("filter_apply_order") == "joint", f"order {h.kwargs.get('filter_apply_order')}"),
    ]
    return [why for ok, why in checks if not ok]


def check_cell(dtype, options, k, p):
    logits = torch.randn(3, VOCAB).to(dtype)
    pristine = logits.clone()
    cell = Cell(torch, logits, k, p, 1, options)
    call = sglang_peer().prepare(cell)
    cast_check.handed.clear()
    for _ in range(2):  # two repetitions, as the worker runs them: reset, then the timed call
        call.reset()
        call.run()
    problems = [] if len(cast_check.handed) == 2 else [f"{len(cast_check.handed)} library calls for 2 runs"]
    for h in cast_check.handed:
        problems += call_problems(h, cell)
    if not torch.equal(logits, pristine):
        problems.append("wrote into the cell's logits")
    return problems


def check_refused(k, p, reason):
    cell = Cell(torch, torch.randn(3, VOCAB), k, p, 1, {})
    try:
        sglang_peer().prepare(cell)
    except Unsupported as e:
        return [] if reason in str(e) else [f"refused without naming {reason!r}: {e}"]
    return [f"k={k} p={p} should be unsupported ({reason})"]


def sglang_peer():
    import catalog  # after the stand-ins are installed
    return catalog.find("sglang.via_flashinfer")


def main():
    cast_check.install_stand_ins()
    failures = checked = 0
    cases = [(8, 0.9), (8, 1.0), (0, 0.9), (50, 0.0), (VOCAB, 0.5)]
    for dtype in (torch.float32, torch.bfloat16):
        for options in ({"input": "probs"}, {"input": "softmax"}):
            for k, p in cases:
                for why in check_cell(dtype, options, k, p):
                    failures += 1
                    print(f"{options} {dtype} k={k} p={p}: {why}")
                checked += 1
    for k, p, reason in ((1, 0.9, "greedy"), (1, 1.0, "greedy"), (0, 1.0, "multinomial")):
        for why in check_refused(k, p, reason):
            failures += 1
            print(why)
        checked += 1
    print(f"ok {checked}" if not failures else f"{failures} problems in {checked} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

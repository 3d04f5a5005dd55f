#!/usr/bin/env python3
"""cast_check.py — checks, without a GPU or the peer libraries, that each library peer does
with a 16-bit cell what its catalog entry says (docs/PEERS.md, "16-bit logits"): stand-in
modules for vLLM and FlashInfer record the element type of the tensor each of
their functions is handed; a `native` peer must hand its library the 16-bit logits, a
`float32` peer float32 only. The torch peers call torch itself and are checked by running
them (tests/test_peers.c). Prints one line per mismatch and `ok N` at the end; exit 1 on any
mismatch. Used by tests/test_peers.c."""
import os
import sys
import types
from collections import namedtuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Every stand-in call: the function's name, a copy of its first tensor, its other arguments.
Handed = namedtuple("Handed", "name x args kwargs")
handed = []


def stand_in(name, result):
    def call(x, *args, **kwargs):
        handed.append(Handed(name, x.clone(), args, kwargs))
        return result(x)
    return call


def draws(x):
    return torch.zeros(x.shape[0], dtype=torch.int64)


def same(x):
    return x


def install_stand_ins():
    """Fake modules under the import names the peers use (peer.Peer.modules)."""
    def module(name, **functions):
        m = types.ModuleType(name)
        for fn, result in functions.items():
            setattr(m, fn, stand_in(f"{name}.{fn}", result))
        sys.modules[name] = m
        return m
    module("vllm.v1.sample.ops.topk_topp_sampler", apply_top_k_top_p=same,
           apply_top_k_top_p_pytorch=same)
    module("vllm.v1.sample.ops.topk_topp_triton")
    module("flashinfer.sampling", top_k_top_p_sampling_from_logits=draws,
           top_k_top_p_sampling_from_probs=draws, top_p_sampling_from_probs=draws,
           top_k_sampling_from_probs=draws, min_p_sampling_from_probs=draws,
           top_k_mask_logits=same, top_k_renorm_probs=same,
           top_p_renorm_probs=same, softmax=lambda x: torch.softmax(x, dim=-1))
    module("flashinfer.topk", top_k=lambda x: (x[:, :2], torch.zeros(x.shape[0], 2, dtype=torch.int64)))
    cake = module("flashinfer.cake_sampling", top_k_top_p_sampling_from_probs=draws)
    cake.cake_sampling_route = stand_in("flashinfer.cake_sampling.route", lambda x: "pipeline")


def main():
    install_stand_ins()
    import catalog
    from cell import Cell
    from peer import NATIVE
    bad = checked = 0
    for peer in catalog.PEERS:
        if peer.package == "torch":
            continue
        for dtype in (torch.bfloat16, torch.float16):
            for options in ({"input": "probs"}, {"input": "softmax"}):
                top_k_alone = peer.name in ("flashinfer.top_k_mask", "flashinfer.topk")
                min_p_alone = peer.name == "flashinfer.min_p"
                cell = Cell(torch, torch.randn(3, 64).to(dtype), 0 if min_p_alone else 8,
                            1.0 if top_k_alone or min_p_alone else 0.9, 1, options,
                            {"min_p": "0.1"} if min_p_alone else None)
                handed.clear()
                call = peer.prepare(cell)
                call.reset()
                call.run()
                want = dtype if peer.cast == NATIVE else torch.float32
                wrong = [f"{h.name} got {h.x.dtype}" for h in handed if h.x.dtype != want]
                checked += 1
                if not handed or wrong:
                    bad += 1
                    print(f"{peer.name} {options} on {dtype} (cast {peer.cast}): "
                          f"{'; '.join(wrong) or 'no library call'}")
    print(f"ok {checked}" if not bad else f"{bad} of {checked} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""sglang_peers.py — the top-k / top-p kernel SGLang's sampler calls on CUDA, called the way
SGLang calls it (docs/PEERS.md, "SGLang"). SGLang 0.5.23's `Sampler._sample_from_probs`
(python/sglang/srt/layers/sampler.py) takes `top_k_top_p_sampling_from_probs` from
`flashinfer.sampling`, not from sgl-kernel, and calls it on the softmax of its float32 logits
with per-row top_ks (int32; 2**30 is "whole vocabulary") and top_ps (float32),
filter_apply_order="joint" and FlashInfer's other defaults. So `sglang.via_flashinfer` times
the binary of the installed flashinfer-python, not an sgl-kernel build. Where that sampler
calls no such kernel (top_k = 1 on every row: its greedy torch.argmax path; neither filter on:
torch.multinomial) the cell is `unsupported` and says so. input=softmax times what the sampler
does from float32 logits: torch.softmax written back into the logits (`logits[:] = ...`), then
the call; input=probs the call alone. Draws use the cell's generator (SGLang passes none)."""
import sys

from peer import FLOAT32, Peer
from cell import Call, Unsupported

SAMPLING = "flashinfer.sampling"
TOP_K_ALL = 1 << 30  # SGLang's top_k for "no top-k" (sglang/srt/sampling/sampling_params.py)


def refuse_where_no_kernel_is_called(cell):
    """SGLang's sampler reaches the kernel only when some row filters and not every row is
    greedy (Sampler.forward: is_all_greedy, simple_sampling_case)."""
    if cell.topk_on and cell.k == 1:
        raise Unsupported("SGLang's sampler takes its greedy path (torch.argmax) when every row "
                          "has top_k = 1: it calls no top-k / top-p kernel")
    if not cell.topk_on and not cell.topp_on:
        raise Unsupported("with no top-k, top-p or min-p SGLang's sampler draws with "
                          "torch.multinomial: it calls no top-k / top-p kernel")


def top_ks(cell):
    """int32 [B]: k, or SGLang's TOP_K_ALL where top-k is off (not the vocabulary size)."""
    k = cell.k if cell.topk_on else TOP_K_ALL
    return cell.torch.full((cell.batch,), k, dtype=cell.torch.int32, device=cell.device)


def softmax_in_place(cell):
    """(probs(), reset): the sampler's `logits[:] = torch.softmax(logits, dim=-1)` on float32
    logits. A float32 cell works on a copy of its logits, refilled outside the timed region; a
    16-bit cell's cast (SGLang's logits processor's x.float()) is timed and is the copy."""
    softmax = cell.torch.softmax
    if cell.sixteen_bit:
        def cast_then_softmax():
            x = cell.float32()
            x[:] = softmax(x, dim=-1)
            return x
        return cast_then_softmax, None
    work = cell.logits.clone()

    def softmax_into_work():
        work[:] = softmax(work, dim=-1)
        return work
    return softmax_into_work, lambda: work.copy_(cell.logits)


def prepare(cell):
    refuse_where_no_kernel_is_called(cell)
    fn = sys.modules[SAMPLING].top_k_top_p_sampling_from_probs
    ks, ps, g = top_ks(cell), cell.p_rows(), cell.generator()
    if cell.option("input", "probs") == "probs":
        precomputed = cell.probs()
        probs, reset = (lambda: precomputed), None
    else:
        probs, reset = softmax_in_place(cell)
    return Call(lambda: fn(probs().contiguous(), ks, ps, filter_apply_order="joint", generator=g),
                reset=reset, sample=lambda out: out)


PEERS = [Peer("sglang.via_flashinfer", "flashinfer-python", [SAMPLING], ("cuda",), prepare,
              FLOAT32, "float32 probabilities: input=probs casts and softmaxes outside the timed "
              "region, input=softmax times x.float() (SGLang's logits processor), torch's "
              "softmax and its copy back into the logits")]

"""sglang_peers.py — SGLang's sampling path on CUDA (docs/PEERS.md): its sampler calls
sgl-kernel's `top_k_top_p_sampling_from_probs` on the softmax of the logits; `sglang.sampling`
calls the same function. Where sgl-kernel cannot be imported the peer is `unsupported` and
the row says why. The kernel takes float32 probabilities: on a 16-bit cell input=softmax times
x.float() with the softmax, input=probs has both outside the timed region."""
import sys

from peer import FLOAT32, Peer
from cell import Call


def prepare(cell):
    sgl = sys.modules["sgl_kernel"]
    probs = cell.probs() if cell.option("input", "probs") == "probs" else None
    k, p, g = cell.k_rows(), cell.p_rows(), cell.generator()

    def run():
        pr = probs if probs is not None else cell.torch.softmax(cell.float32(), dim=-1)
        return sgl.top_k_top_p_sampling_from_probs(pr, k, p, generator=g)

    return Call(run, sample=lambda out: out)


PEERS = [Peer("sglang.sampling", "sgl-kernel", ["sgl_kernel"], ("cuda",), prepare, FLOAT32,
              "float32 probabilities: input=probs casts and softmaxes outside the timed region, "
              "input=softmax times x.float() and torch's softmax")]

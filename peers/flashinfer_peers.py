"""flashinfer_peers.py — FlashInfer's top-k / top-p kernels (docs/PEERS.md), deterministic
where the call offers it, k and p as per-row tensors (the form vLLM's FlashInfer path passes).
Peers that take probabilities have the option `input`: `probs` times the kernel alone on a
softmax computed outside the timed region; `softmax` times FlashInfer's softmax and the kernel
together, what a from-logits pipeline pays. Samplers draw with a torch generator seeded by the
cell's seed; set peers hand back their kept mask (masked logits != -inf, or renormalised
probability > 0)."""
import sys

from peer import Peer
from cell import Call, Unsupported

SAMPLING, TOPK, CAKE = "flashinfer.sampling", "flashinfer.topk", "flashinfer.cake_sampling"


def fi(name):
    return sys.modules[name]


def probs_input(cell):
    """A function returning the kernel's probabilities: precomputed, or softmax in the call."""
    if cell.option("input", "probs") == "probs":
        probs = cell.probs()
        return lambda: probs
    return lambda: fi(SAMPLING).softmax(cell.logits)


def order_of(cell):
    return cell.option("order", "top_k_first")


def prepare_sampling_logits(cell):
    k, p, g = cell.k_rows(), cell.p_rows(), cell.generator()
    fn = fi(SAMPLING).top_k_top_p_sampling_from_logits
    return Call(lambda: fn(cell.logits, k, p, filter_apply_order=order_of(cell),
                           deterministic=True, generator=g),
                sample=lambda out: out)


def prepare_sampling_probs(cell):
    """top_k_top_p_sampling_from_probs; with entry=single and one filter on, FlashInfer's
    single-filter sampler instead (top_p_sampling_from_probs / top_k_sampling_from_probs)."""
    k, p, g, probs = cell.k_rows(), cell.p_rows(), cell.generator(), probs_input(cell)
    sampling = fi(SAMPLING)
    single = cell.option("entry", "joint") == "single"
    if single and cell.topp_on and not cell.topk_on:
        return Call(lambda: sampling.top_p_sampling_from_probs(probs(), p, deterministic=True,
                                                               generator=g),
                    sample=lambda out: out)
    if single and cell.topk_on and not cell.topp_on:
        return Call(lambda: sampling.top_k_sampling_from_probs(probs(), k, deterministic=True,
                                                               generator=g),
                    sample=lambda out: out)
    fn = sampling.top_k_top_p_sampling_from_probs
    return Call(lambda: fn(probs(), k, p, filter_apply_order=order_of(cell),
                           deterministic=True, generator=g),
                sample=lambda out: out)


def prepare_top_k_mask(cell):
    if not cell.topk_on or cell.topp_on:
        raise Unsupported("top_k_mask_logits does top-k alone")
    k = cell.k_rows()
    return Call(lambda: fi(SAMPLING).top_k_mask_logits(cell.logits, k),
                kept=lambda out: out != float("-inf"))


def prepare_renorm(cell):
    """top_k_renorm_probs, then top_p_renorm_probs on its output: FlashInfer's own top-k-first
    chain of set-returning calls."""
    k, p, probs = cell.k_rows(), cell.p_rows(), probs_input(cell)
    sampling = fi(SAMPLING)

    def run():
        x = probs()
        if cell.topk_on:
            x = sampling.top_k_renorm_probs(x, k, is_deterministic=True)
        if cell.topp_on:
            x = sampling.top_p_renorm_probs(x, p, is_deterministic=True)
        return x

    return Call(run, kept=lambda out: out > 0)


def prepare_topk(cell):
    if not cell.topk_on or cell.topp_on:
        raise Unsupported("flashinfer.topk.top_k does top-k alone")
    fn = fi(TOPK).top_k
    return Call(lambda: fn(cell.logits, cell.k, deterministic=True),
                kept=lambda out: cell.mask_of_indices(out[1]))


def prepare_cake(cell):
    cake = fi(CAKE)
    k, p, g, probs = cell.k_rows(), cell.p_rows(), cell.generator(), probs_input(cell)
    route = cake.cake_sampling_route(cell.logits, k, cell.k_int)  # same shape and layout as probs
    if route != "pipeline":
        raise Unsupported(f"the cake pipeline does not serve this cell ({route}; it needs "
                          f"1 <= k <= 1024 and k < V); its fallback is another sampler")
    return Call(lambda: cake.top_k_top_p_sampling_from_probs(probs(), k, p, top_k_max=cell.k_int,
                                                             generator=g),
                sample=lambda out: out)


def drop_caches():
    cake = sys.modules.get(CAKE)
    if cake is not None and hasattr(cake, "_WORKSPACES"):
        cake._WORKSPACES.clear()
    utils = sys.modules.get("flashinfer.utils")
    for name in ("_cache_buf", "_cache_buf_retired"):
        if utils is not None and hasattr(utils, name):
            getattr(utils, name).clear()


GPU = ("cuda",)
PEERS = [
    Peer("flashinfer.sampling", "flashinfer-python", [SAMPLING], GPU, prepare_sampling_logits),
    Peer("flashinfer.sampling_probs", "flashinfer-python", [SAMPLING], GPU, prepare_sampling_probs),
    Peer("flashinfer.top_k_mask", "flashinfer-python", [SAMPLING], GPU, prepare_top_k_mask),
    Peer("flashinfer.renorm", "flashinfer-python", [SAMPLING], GPU, prepare_renorm),
    Peer("flashinfer.topk", "flashinfer-python", [TOPK], GPU, prepare_topk),
    Peer("flashinfer.cake", "flashinfer-python", [SAMPLING, CAKE], GPU, prepare_cake),
]

"""flashinfer_peers.py — FlashInfer's top-k / top-p kernels (docs/PEERS.md), deterministic
where the call offers it, k and p as per-row tensors (the form vLLM's FlashInfer path passes).
Peers that take probabilities have the option `input`: `probs` times the kernel alone on a
softmax computed outside the timed region; `softmax` times FlashInfer's softmax and the kernel
together, what a from-logits pipeline pays. Samplers draw with a torch generator seeded by the
cell's seed; set peers hand back their kept mask (masked logits != -inf, or renormalised
probability > 0). On a 16-bit cell the top-k mask and the radix top-k read the 16-bit logits;
the samplers and the renorm chain work on float32, so their timed call starts with x.float()
(with input=probs the cast, like the softmax, is outside the timed region)."""
import sys

from peer import FLOAT32, NATIVE, Peer
from cell import Call, Unsupported

SAMPLING, TOPK, CAKE = "flashinfer.sampling", "flashinfer.topk", "flashinfer.cake_sampling"


def fi(name):
    return sys.modules[name]


def probs_input(cell):
    """A function returning the kernel's probabilities: precomputed, or softmax in the call."""
    if cell.option("input", "probs") == "probs":
        probs = cell.probs()
        return lambda: probs
    return lambda: fi(SAMPLING).softmax(cell.float32())


def row_keys(cell):
    """With row_keys=1 (docs/SEMANTICS.md, "Sampling: two keying modes"): FlashInfer's
    per-request form, each row's seed (the cell's seed + r) and offset 0 as int64 tensors, and
    no generator; else the cell's generator. Keyword arguments of FlashInfer's samplers. Its
    Philox stream is its own: the kept set and the distribution are judged, not the tokens."""
    if cell.request.get("row_keys", "0") != "1":
        return {"generator": cell.generator()}
    torch = cell.torch
    return {"seed": cell.seed + torch.arange(cell.batch, dtype=torch.int64, device=cell.device),
            "offset": torch.zeros(cell.batch, dtype=torch.int64, device=cell.device)}


def order_of(cell):
    return cell.option("order", "top_k_first")


def prepare_sampling_logits(cell):
    k, p, keys = cell.k_rows(), cell.p_rows(), row_keys(cell)
    fn = fi(SAMPLING).top_k_top_p_sampling_from_logits
    return Call(lambda: fn(cell.float32(), k, p, filter_apply_order=order_of(cell),
                           deterministic=True, **keys),
                sample=lambda out: out)


def prepare_sampling_probs(cell):
    """top_k_top_p_sampling_from_probs; with entry=single and one filter on, FlashInfer's
    single-filter sampler instead (top_p_sampling_from_probs / top_k_sampling_from_probs)."""
    k, p, keys, probs = cell.k_rows(), cell.p_rows(), row_keys(cell), probs_input(cell)
    sampling = fi(SAMPLING)
    single = cell.option("entry", "joint") == "single"
    if single and cell.topp_on and not cell.topk_on:
        return Call(lambda: sampling.top_p_sampling_from_probs(probs(), p, deterministic=True,
                                                               **keys),
                    sample=lambda out: out)
    if single and cell.topk_on and not cell.topp_on:
        return Call(lambda: sampling.top_k_sampling_from_probs(probs(), k, deterministic=True,
                                                               **keys),
                    sample=lambda out: out)
    fn = sampling.top_k_top_p_sampling_from_probs
    return Call(lambda: fn(probs(), k, p, filter_apply_order=order_of(cell),
                           deterministic=True, **keys),
                sample=lambda out: out)


def prepare_min_p(cell):
    """min_p_sampling_from_probs: min-p alone (docs/SEMANTICS.md, "min-p"), min_p as a per-row
    tensor from the cell's min_p axis; with row_keys=1 each row's seed (the cell's seed + r)
    and offset 0 as tensors, FlashInfer's per-request form (its Philox stream is its own, so
    only the kept set and the distribution are judged, never the tokens)."""
    min_p = float(cell.request.get("min_p", "0"))
    if not min_p > 0 or cell.topk_on or cell.topp_on:
        raise Unsupported("min_p_sampling_from_probs does min-p alone (min_p > 0, no top-k or "
                          "top-p)")
    torch, probs, keys = cell.torch, probs_input(cell), row_keys(cell)
    rows = torch.full((cell.batch,), min(min_p, 1.0), dtype=torch.float32, device=cell.device)
    fn = fi(SAMPLING).min_p_sampling_from_probs
    return Call(lambda: fn(probs(), rows, deterministic=True, **keys), sample=lambda out: out)


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
    route = cake.cake_sampling_route(cell.float32_like(), k, cell.k_int)  # probs' shape and type
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
PKG = "flashinfer-python"
FROM_LOGITS = "x.float() timed, as vLLM converts the logits to float32 before calling it"
FROM_PROBS = ("float32 probabilities: input=probs casts and softmaxes outside the timed region, "
              "input=softmax times x.float() and the softmax")
PEERS = [
    Peer("flashinfer.sampling", PKG, [SAMPLING], GPU, prepare_sampling_logits, FLOAT32, FROM_LOGITS,
         row_keys=True),
    Peer("flashinfer.sampling_probs", PKG, [SAMPLING], GPU, prepare_sampling_probs, FLOAT32,
         FROM_PROBS, row_keys=True),
    Peer("flashinfer.min_p", PKG, [SAMPLING], GPU, prepare_min_p, FLOAT32, FROM_PROBS,
         row_keys=True),
    Peer("flashinfer.top_k_mask", PKG, [SAMPLING], GPU, prepare_top_k_mask, NATIVE,
         "top_k_mask_logits reads float16 and bfloat16 logits"),
    Peer("flashinfer.renorm", PKG, [SAMPLING], GPU, prepare_renorm, FLOAT32, FROM_PROBS),
    Peer("flashinfer.topk", PKG, [TOPK], GPU, prepare_topk, NATIVE,
         "the radix top-k reads float16 and bfloat16"),
    Peer("flashinfer.cake", PKG, [SAMPLING, CAKE], GPU, prepare_cake, FLOAT32, FROM_PROBS),
]

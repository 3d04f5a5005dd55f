"""torch_peers.py — the plain-PyTorch peers, on the CPU and the GPU (docs/PEERS.md):
`torch.sort`, the textbook sort-based filter (one descending stable sort, the k-th position,
a float32 softmax and cumulative sum over the sorted row, the mask scattered back);
`torch.sample`, the same filter followed by torch.multinomial over the kept probabilities;
and `torch.topk`, torch's own top-k as a reference for top-k alone. All three read a 16-bit
cell's logits as they are: the sort and torch.topk take them, the softmax widens what it sums
to float32 (exactly), so a 16-bit row gives what its float32 upcast gives."""
from peer import NATIVE, Peer
from cell import Call, Unsupported


def sort_filter(cell):
    """A function returning the kept mask, bool [B, V]."""
    torch = cell.torch

    def run():
        x = cell.logits
        values, order = torch.sort(x, dim=-1, descending=True, stable=True)
        keep = torch.ones_like(values, dtype=torch.bool)
        if cell.topk_on:
            keep[:, cell.k:] = False
        if cell.topp_on:
            probs = torch.softmax(values.masked_fill(~keep, float("-inf")).float(), dim=-1)
            before = torch.cumsum(probs, dim=-1) - probs   # mass strictly before each token
            keep &= before < cell.p_float
            keep[:, 0] = True
        keep &= values > float("-inf")   # -inf and NaN are never kept
        return torch.zeros_like(keep).scatter_(1, order, keep)

    return run


def prepare_sort(cell):
    return Call(sort_filter(cell), kept=lambda out: out)


def prepare_sample(cell):
    torch = cell.torch
    kept, g = sort_filter(cell), cell.generator()

    def run():
        mask = kept()
        probs = torch.softmax(cell.logits.masked_fill(~mask, float("-inf")).float(), dim=-1)
        valid = mask.any(dim=-1)
        probs[~valid] = 1.0  # a row with nothing kept draws -1 below
        drawn = torch.multinomial(probs, 1, generator=g).squeeze(1)
        return torch.where(valid, drawn, torch.full_like(drawn, -1))

    return Call(run, sample=lambda out: out)


def prepare_topk(cell):
    torch = cell.torch
    if not cell.topk_on or cell.topp_on:
        raise Unsupported("torch.topk does top-k alone")

    def run():
        return torch.topk(cell.logits, cell.k, dim=-1)

    return Call(run, kept=lambda out: cell.mask_of_indices(out.indices))


BOTH = ("cpu", "cuda")
PEERS = [
    Peer("torch.sort", "torch", ["torch"], BOTH, prepare_sort, NATIVE,
         "sorts the 16-bit logits; the sorted values are widened to float32 for the softmax"),
    Peer("torch.sample", "torch", ["torch"], BOTH, prepare_sample, NATIVE,
         "torch.sort's filter; the kept logits are widened to float32 for the softmax"),
    Peer("torch.topk", "torch", ["torch"], BOTH, prepare_topk, NATIVE,
         "torch.topk on the 16-bit logits"),
]

#!/usr/bin/env python3
"""batch-invariance.py [--device cuda|cpu] [--batch B] [--vocab V] [--out FILE.tsv] — is a
sampler's draw for a row a function of that row alone (docs/SEMANTICS.md, "Sampling: two keying
modes")? Runs the same three checks on our samplers (the Python package, topkp.sample with
per-row seeds and offsets) and on FlashInfer's (seed and offset tensors, its per-request form;
where the peers kit imports), each also in its batch-keyed form (one seed for the batch, or a
torch generator) as the contrast:
  permute   the rows permuted (with their k, p, min_p, seed, offset): the draws must permute;
  others    every other row replaced by new logits: the rows kept must draw what they drew;
  alone     rows drawn alone (B = 1) must draw what they drew inside the batch.
Writes one line per (sampler, keying, check): the rows compared, how many drew the same, and
`invariant` or `varies` (or `error`, the sampler's refusal printed). Exit status 1 when a
per-row-keyed sampler varies or any sampler refuses."""
import argparse
import sys

import torch

SEED0 = 20261205


def topkp_sampler(algo):
    """(row-keyed call, batch-keyed call) of topkp.sample with module `algo`."""
    import topkp

    def keyed(x, rows):
        return topkp.sample(x, k=rows["k"], p=rows["p"], min_p=rows["min_p"],
                            seeds=rows["seed"], offsets=rows["offset"], algo=algo)[:, 0]

    def batch_keyed(x, rows):
        return topkp.sample(x, k=rows["k"], p=rows["p"], min_p=rows["min_p"], seed=SEED0,
                            offset=0, algo=algo)[:, 0]
    return keyed, batch_keyed


def flashinfer_sampler(name):
    """(row-keyed call, generator call) of FlashInfer's sampler `name` (flashinfer.sampling):
    seed and offset as int64 tensors, or a torch generator seeded alike on every call."""
    import flashinfer.sampling as fs

    def args(x, rows):
        probs = torch.softmax(x.float(), dim=-1)
        table = {
            "top_k_top_p_sampling_from_logits": (x.float(), rows["k"], rows["p"]),
            "top_k_top_p_sampling_from_probs": (probs, rows["k"], rows["p"]),
            "top_k_sampling_from_probs": (probs, rows["k"]),
            "top_p_sampling_from_probs": (probs, rows["p"]),
            "min_p_sampling_from_probs": (probs, rows["min_p"]),
        }
        return table[name]
    fn = getattr(fs, name)

    def keyed(x, rows):
        return fn(*args(x, rows), deterministic=True, seed=rows["seed"].long(),
                  offset=rows["offset"].long())

    def batch_keyed(x, rows):
        g = torch.Generator(device=x.device).manual_seed(SEED0)
        return fn(*args(x, rows), deterministic=True, generator=g)
    return keyed, batch_keyed


# (label, maker, argument, filters the sampler applies: which rows of k, p, min_p are on; k50:
# one k = 50 for every row, a Python integer, as cake's GPU plan takes it, docs/PYTHON.md "CUDA")
SAMPLERS = [
    ("topkp.naive_sort", topkp_sampler, "naive_sort", "k p"),
    ("topkp.cake", topkp_sampler, "cake", "k50 p"),
    ("topkp.rejection", topkp_sampler, "rejection", "k p"),
    ("topkp.rejection+min_p", topkp_sampler, "rejection", "k p min_p"),
    ("flashinfer.top_k_top_p_sampling_from_logits", flashinfer_sampler,
     "top_k_top_p_sampling_from_logits", "k p"),
    ("flashinfer.top_k_top_p_sampling_from_probs", flashinfer_sampler,
     "top_k_top_p_sampling_from_probs", "k p"),
    ("flashinfer.top_k_sampling_from_probs", flashinfer_sampler, "top_k_sampling_from_probs", "k"),
    ("flashinfer.top_p_sampling_from_probs", flashinfer_sampler, "top_p_sampling_from_probs", "p"),
    ("flashinfer.min_p_sampling_from_probs", flashinfer_sampler, "min_p_sampling_from_probs",
     "min_p"),
]


def make_rows(batch, vocab, device, filters, seed):
    """Seeded logits and per-row filters (varied from row to row, so that a permutation moves
    them) and per-row keys (seeds spread over 64 bits, offsets that wrap near 2^64)."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(batch, vocab, generator=g) * 3).to(device)
    r, on = torch.arange(batch), filters.split()
    rows = {
        "k": (10 + r % 90).int() if "k" in on else torch.zeros(batch, dtype=torch.int32),
        "p": (0.5 + 0.45 * (r % 7) / 6).float() if "p" in on else torch.ones(batch),
        "min_p": (0.02 + 0.1 * (r % 5) / 4).float() if "min_p" in on else torch.zeros(batch),
        "seed": torch.randint(-2**63, 2**63 - 1, (batch,), generator=g, dtype=torch.int64),
        "offset": torch.randint(0, 2**20, (batch,), generator=g, dtype=torch.int64),
    }
    rows = {n: v.to(device) for n, v in rows.items()}
    if "k50" in on:
        rows["k"] = 50
    return x, rows


def take(x, rows, idx):
    return x[idx], {n: v[idx] if torch.is_tensor(v) else v for n, v in rows.items()}


def checks(call, x, rows, seed):
    """[(check, rows compared, rows equal)] for one sampler call."""
    batch = x.shape[0]
    base = call(x, rows).cpu()
    g = torch.Generator().manual_seed(seed + 1)
    perm = torch.randperm(batch, generator=g).to(x.device)
    permuted = call(*take(x, rows, perm)).cpu()
    out = [("permute", batch, int((permuted == base[perm.cpu()]).sum()))]
    others = torch.arange(1, batch, 2, device=x.device)
    y = x.clone()
    y[others] = torch.randn(len(others), x.shape[1], generator=g).to(x.device) * 3
    changed = call(y, rows).cpu()
    kept = torch.arange(0, batch, 2)
    out.append(("others", len(kept), int((changed[kept] == base[kept]).sum())))
    alone = [0, batch // 2, batch - 1]
    same = sum(int(call(*take(x, rows, torch.tensor([r], device=x.device))).cpu()[0] == base[r])
               for r in alone)
    out.append(("alone", len(alone), same))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--out", default="-")
    ap.add_argument("--only", default="", help="comma-separated labels (default: all)")
    a = ap.parse_args()
    lines, bad = ["sampler\tkeying\tcheck\trows\tequal\tverdict"], 0
    for label, maker, arg, filters in SAMPLERS:
        if a.only and label not in a.only.split(","):
            continue
        try:
            keyed, batch_keyed = maker(arg)
        except ImportError as e:
            print(f"{label}: skipped ({e})", file=sys.stderr)
            continue
        x, rows = make_rows(a.batch, a.vocab, a.device, filters, SEED0)
        for keying, call in (("per-row", keyed), ("batch", batch_keyed)):
            try:
                found = checks(call, x, rows, SEED0)
            except Exception as e:  # a refusal is reported, and the other samplers still run
                print(f"{label} ({keying}): {type(e).__name__}: {e}", file=sys.stderr)
                lines.append(f"{label}\t{keying}\t-\t0\t0\terror")
                bad += 1
                continue
            for check, n, equal in found:
                verdict = "invariant" if equal == n else "varies"
                bad += keying == "per-row" and verdict == "varies"
                lines.append(f"{label}\t{keying}\t{check}\t{n}\t{equal}\t{verdict}")
    text = "\n".join(lines) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)
        sys.stdout.write(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""minp-cost.py — what per-row seeds and min-p cost each sampler, from two runs of
configs/sampling/minp_seeds.lua in one device call: OLD, the build before the kernels read the
per-row arrays (its cells with row_keys = 1 or min_p > 0 are `unsupported`), and NEW, this one.
One line per (sweep, algo, batch): the old build's median with both off, the new build's medians
with both off, per-row keys on, min-p on and both on, and each new one over the old off
(docs/SEMANTICS.md, "min-p" and "Sampling: two keying modes").

    python3 scripts/minp-cost.py OLD.h5 NEW.h5 > cost.tsv"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import topkp_results  # noqa: E402

VARIANTS = [("off", 0.0, 0), ("keys", 0.0, 1), ("minp", 0.05, 0), ("both", 0.05, 1)]


def medians(path):
    """(sweep, algo, batch, min_p, row_keys) -> median_us of the ok cells of a results file."""
    rows = topkp_results.load(path)
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    out = {}
    for r in rows:
        if r["status"] == "ok":
            key = (r["sweep"], r["algo"], int(r["batch"]), round(float(r["min_p"]), 6),
                   int(r["row_keys"]))
            out[key] = float(r["median_us"])
    return out


def main(old_path, new_path):
    old, new = medians(old_path), medians(new_path)
    names = [name for name, _, _ in VARIANTS]
    print("\t".join(["sweep", "algo", "batch", "old_off_us"] + [f"new_{n}_us" for n in names]
                    + [f"new_{n}/old_off" for n in names]))
    for sweep, algo, batch in sorted({k[:3] for k in old} | {k[:3] for k in new}):
        base = old.get((sweep, algo, batch, 0.0, 0))
        times = [new.get((sweep, algo, batch, round(m, 6), rk)) for _, m, rk in VARIANTS]
        ratios = [f"{t / base:.3f}" if t and base else "-" for t in times]
        cells = [f"{t:.2f}" if t else "-" for t in [base] + times]
        print("\t".join([sweep, algo, str(batch)] + cells + ratios))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

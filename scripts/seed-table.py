"""seed-table.py — our cake against FlashInfer's cake kernel (probabilities in) on every cell of
the cake seed's H100 table (configs/paper/cake_seed.lua's results file): each cell's medians,
eager and CUDA graph, ours over FlashInfer's, the seed's published cake time for the cell
(paper/cake_h100.tsv) and ours over it; then, per mode, the cells where ours is at or below
each. With OLD (the same config at an earlier commit), ours over FlashInfer's there too.

    python3 scripts/seed-table.py NEW.h5 [OLD.h5] > table.tsv"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topkp_results  # noqa: E402

PUBLISHED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "paper",
                         "cake_h100.tsv")


def medians(path):
    """(V, B, k, graph, 'ours' | 'flashinfer') -> median us of the ok cells that are ours
    (top-p fused) or FlashInfer's cake with probabilities in."""
    rows = topkp_results.load(path)
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    out = {}
    for r in rows:
        opts = str(r["options"])
        who = ("ours" if r["algo"] == "cake" and "topp_launch=fused" in opts else
               "flashinfer" if r["algo"] == "flashinfer.cake" and "input=probs" in opts else None)
        if who and r["status"] == "ok":
            key = (int(r["vocab"]), int(r["batch"]), int(r["k"]), int(r["graph"]), who)
            out[key] = float(r["median_us"])
    return out


def published():
    """(V, B, k, graph) -> the seed's cake time (us)."""
    out = {}
    with open(PUBLISHED) as f:
        lines = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    head = lines[0]
    for fields in lines[1:]:
        row = dict(zip(head, fields))
        cell = (int(row["V"]), int(row["B"]), int(row["k"]))
        out[cell + (0,)] = float(row["cake_us"])
        out[cell + (1,)] = float(row["graph_cake_us"])
    return out


def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "-"


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    new = medians(argv[1])
    old = medians(argv[2]) if len(argv) == 3 else {}
    seed = published()
    print("vocab\tbatch\tk\tgraph\tours_us\tflashinfer_us\tours/flashinfer\tseed_us\tours/seed"
          "\told_ours/old_flashinfer")
    wins = {}
    for cell in sorted({key[:4] for key in new}):
        ours, fi = new.get(cell + ("ours",)), new.get(cell + ("flashinfer",))
        if ours is None or fi is None:
            continue
        pub = seed.get(cell)
        tally = wins.setdefault(cell[3], [0, 0, 0, 0])
        tally[0] += 1
        tally[1] += ours <= fi
        tally[2] += pub is not None
        tally[3] += pub is not None and ours <= pub
        print("\t".join(str(x) for x in cell) + f"\t{ours:.2f}\t{fi:.2f}\t{ratio(ours, fi)}\t"
              + (f"{pub:.1f}" if pub else "-") + f"\t{ratio(ours, pub)}\t"
              + ratio(old.get(cell + ("ours",)), old.get(cell + ("flashinfer",))))
    for graph, (n, fi_wins, n_pub, pub_wins) in sorted(wins.items()):
        print(f"# {'graph' if graph else 'eager'}: ours <= FlashInfer's cake in {fi_wins} of "
              f"{n} cells; <= the seed's published time in {pub_wins} of {n_pub}")


if __name__ == "__main__":
    main(sys.argv)

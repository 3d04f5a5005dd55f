"""heavy-cut.py — how well qrita's heavy_n=auto rules pick between its two hand-offs, from a
run of configs/h100/batch_variants.lua (qrita with heavy_n=0, heavy_n=4096 and auto, one cell
each): for each rule, the cells whose pick is more than 1 % slower than the faster of the two,
with the ratio (algos/qrita/README.md, "Past B = #SMs"). The rules are restated here from
algos/qrita/qrita.c (qrita_block_rows_per_sm): `twice` is 561bba8's, `vk` this one's.

    python3 scripts/heavy-cut.py results/h100-2026-12-06/batch_variants.h5 [SMS]"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import topkp_results  # noqa: E402


def rows_per_sm_twice(vocab, k):
    return 2


def rows_per_sm_vk(vocab, k):
    return 4 if 256 < k < vocab and vocab * k > 1 << 27 else 2


RULES = [("twice", rows_per_sm_twice), ("vk", rows_per_sm_vk)]


def cells(path):
    """(dtype, vocab, k, p, batch) -> {heavy_n: median_us} of the ok qrita cells."""
    rows = topkp_results.load(path)
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    out = {}
    for r in rows:
        if r["algo"] != "qrita" or r["status"] != "ok":
            continue
        given = [o for o in str(r["options"]).split(",") if o.startswith("heavy_n=")]
        if given:
            key = (r["dtype"], int(r["vocab"]), int(r["k"]), round(float(r["p"]), 3),
                   int(r["batch"]))
            out.setdefault(key, {})[int(given[0].split("=")[1])] = float(r["median_us"])
    return out


def main(path, sms=132):
    table = {key: t for key, t in cells(path).items() if 0 in t and 4096 in t}
    if not table:
        sys.exit(f"heavy-cut.py: {path}: no qrita cells with both heavy_n=0 and heavy_n=4096")
    print("rule\tdtype\tvocab\tk\tp\tbatch\tpick\tover_best")
    for name, rule in RULES:
        missed = 0
        for key in sorted(table):
            dtype, vocab, k, p, batch = key
            t = table[key]
            pick = 0 if batch <= rule(vocab, k) * sms else 4096
            ratio = t[pick] / min(t.values())
            if ratio > 1.01:
                missed += 1
                print(f"{name}\t{dtype}\t{vocab}\t{k}\t{p}\t{batch}\t{pick}\t{ratio:.3f}")
        print(f"# {name}: {missed} of {len(table)} cells more than 1 % over the faster hand-off")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 132)

"""floor-table.py NEW.tsv[+AGAIN.tsv][,MORE.tsv...] [OLD.tsv[...]] — the memory-floor targets
of qrita, cake and rejection (algos/*/README.md) from `topkp export` of a floor_grid.lua run
(and of floor_grid_modules.lua run with the build before, for the no-regression check; MORE
files, comma-separated, replace NEW's rows of the same cell and algorithm, e.g. a later run of
one module; AGAIN, joined by '+', is a repeat of the same build, its medians and NEW's averaged
geometrically, e.g. the two runs of an A B A order; OLD takes the same forms): one line per cell
with each module's median, its peer's and the ratio, the floors, and a summary of every
target's misses. The floors of a cell are those measured in the same files by floor.read and
floor.copy (its `floors` sweep; docs/PEERS.md, "Memory floors": read, and read plus mask write
= read + (copy - read) / element size, one byte written a logit); a cell without them falls
back on the H200 reference of docs/H200-PEERS.md (B >= 128, f32; a 16-bit cell: the read floor
of the f32 cell with as many bytes (V, B/2) when the table has it, else the f32 one scaled by
the bytes, plus the same mask write). The `floors from` column says which. Target 4 (bf16 >=
1.6x faster than float32 at B = 1024) reads the cells of a sweep timed in both dtypes. Prints
Markdown."""
import csv
import math
import sys

# docs/H200-PEERS.md ("Memory floors", the 2026-11-30 reference), top-k k = 50: read floor, copy floor (us) at the batches >= 128.
FLOORS = {
    (128256, 128): (33.8, 34.9), (128256, 256): (51.5, 66.1), (128256, 1024): (139.3, 249.5),
    (151936, 128): (37.5, 40.9), (151936, 256): (57.1, 77.2), (151936, 1024): (161.8, 296.9),
    (201088, 128): (44.8, 53.1), (201088, 256): (68.5, 100.4), (201088, 1024): (205.0, 388.4),
    (262144, 128): (52.2, 67.5), (262144, 256): (82.4, 129.0), (262144, 1024): (258.1, 507.0),
}


ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}


def reference_floors(V, B, dtype):
    """The read and read+mask floors (us) of a cell of `dtype` from the H200 reference table
    (f32), by bytes."""
    fl = FLOORS.get((V, B))
    if not fl:
        return None, None
    size = ELEMENT_BYTES[dtype]
    same_bytes = FLOORS.get((V, B * size // 4))
    read = same_bytes[0] if same_bytes else fl[0] * size / 4
    return read, read + (fl[1] - fl[0]) / 4


def measured_floors(rows):
    """(V, B, dtype) -> (read, read + mask write) from the floor.read and floor.copy cells of
    the same files (docs/PEERS.md, "Memory floors"): the mask's one byte a logit costs
    (copy - read) / element size."""
    out = {}
    for (sweep, V, B, dtype), cell in rows.items():
        read, copy = med(cell, "floor.read"), med(cell, "floor.copy")
        if read and copy:
            out[(V, B, dtype)] = (read, read + (copy - read) / ELEMENT_BYTES[dtype])
    return out


def floors_of(V, B, dtype, measured):
    """The cell's floors and where they come from: this run's, else the H200 reference's."""
    if (V, B, dtype) in measured:
        return measured[(V, B, dtype)] + ("run",)
    read, read_mask = reference_floors(V, B, dtype)
    return read, read_mask, "H200 ref" if read else "—"


def load(paths):
    """The rows of NEW or OLD: comma-separated groups, a later group's rows replacing an earlier
    one's of the same cell and algorithm; a group's files joined by '+' are repeated runs of one
    build (an A B A order), each median the geometric mean of theirs."""
    out = {}
    for group in paths.split(","):
        runs = [load_file(path) for path in group.split("+")]
        for cell, algos in runs[0].items():
            for name, row in algos.items():
                if len(runs) > 1:  # one file: its median as exported, not through log and exp
                    meds = [float(run[cell][name]["median_us"]) for run in runs
                            if name in run.get(cell, {})]
                    mean = math.exp(sum(math.log(m) for m in meds) / len(meds))
                    row = dict(row, median_us=str(mean))
                out.setdefault(cell, {})[name] = row
    return out


def load_file(path):
    out = {}
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["status"] != "ok":
                continue
            cell = (row["sweep"], int(row["vocab"]), int(row["batch"]), row.get("dtype") or "f32")
            name = row["algo"] + ("" if "entry=single" not in row["options"] else ":single")
            if "order=joint" in row["options"]:
                name = row["algo"] + ":joint"
            out.setdefault(cell, {})[name] = row
    return out


def med(cell, name):
    row = cell.get(name)
    return float(row["median_us"]) if row else None


def bf16_speedups(rows, misses):
    """Target 4: each module's float32 time over its bf16 time, at least 1.6 at B = 1024, on the
    cells timed in both dtypes in one sweep. Prints one line a pair; returns how many."""
    pairs = 0
    for (sweep, V, B, dtype), c in sorted(rows.items()):
        twin = rows.get((sweep, V, B, "f32"))
        if dtype != "bf16" or B != 1024 or not twin:
            continue
        for m in ("cake", "rejection", "qrita"):
            a, b = med(twin, m), med(c, m)
            if not (a and b):
                continue
            if not pairs:
                print("\nbf16 against float32 at B = 1024 (target 4):")
            pairs += 1
            print(f"- {sweep} {m} V={V} B={B}: float32 {a:.1f} us, bf16 {b:.1f} us: {a / b:.2f}x")
            if a < 1.6 * b:
                misses.append(f"{sweep} {m} V={V} B={B}: bf16 {a / b:.2f}x faster than float32")
    return pairs


def main():
    new = load(sys.argv[1])
    old = load(sys.argv[2]) if len(sys.argv) > 2 else {}
    measured = measured_floors(new)
    misses = {1: [], 2: [], 3: [], 4: [], 5: []}
    print("| mode | V | B | dtype | cake | FI cake | cake/FI | cake/floor | rejection | FI best | rej/FI |"
          " rej/floor | qrita | vLLM Triton | vLLM/qrita | qrita/(read+mask) | read floor | floors from |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(new, key=lambda c: (c[0], c[1], c[2], c[3])):
        sweep, V, B, dtype = key
        label = sweep if dtype == "f32" else f"{sweep} {dtype}"
        c = new[key]
        if set(c) <= {"floor.read", "floor.copy"}:
            continue  # the floors' own cells: in the columns of the others
        read, read_mask, source = floors_of(V, B, dtype, measured)
        cake, ficake = med(c, "cake"), med(c, "flashinfer.cake")
        rej = med(c, "rejection")
        fis = [m for m in (med(c, "flashinfer.sampling_probs:single"),
                           med(c, "flashinfer.sampling_probs:joint")) if m]
        fibest = min(fis) if fis else None
        q, vt = med(c, "qrita"), med(c, "vllm.triton")
        cells = [sweep, V, B, dtype]

        def r(a, b):
            return f"{a / b:.2f}" if a and b else "—"

        def n(a):
            return f"{a:.1f}" if a else "—"
        cells += [n(cake), n(ficake), r(cake, ficake), r(cake, read) if cake else "—"]
        cells += [n(rej), n(fibest), r(rej, fibest), r(rej, read) if rej else "—"]
        cells += [n(q), n(vt), r(vt, q), r(q, read_mask) if q else "—", n(read), source]
        print("| " + " | ".join(str(x) for x in cells) + " |")
        if cake and ficake and cake > ficake:
            misses[1].append(f"{label} V={V} B={B}: cake {cake:.1f} vs FI {ficake:.1f}")
        if cake and read and B >= 128 and cake > 1.15 * read:
            misses[1].append(f"{label} V={V} B={B}: cake {cake / read:.2f}x read floor")
        if rej and fibest and rej > fibest:
            misses[2].append(f"{label} V={V} B={B}: rejection {rej:.1f} vs FI {fibest:.1f}")
        if rej and read and B >= 128 and rej > 1.15 * read:
            misses[2].append(f"{label} V={V} B={B}: rejection {rej / read:.2f}x read floor")
        if q and vt and vt < 2 * q:
            misses[3].append(f"{label} V={V} B={B}: vLLM/qrita {vt / q:.2f}")
        if q and read_mask and B >= 128 and q > 1.3 * read_mask:
            misses[3].append(f"{label} V={V} B={B}: qrita {q / read_mask:.2f}x read+mask floor")
        for m in ("qrita", "cake", "rejection"):
            a, b = med(c, m), med(old.get(key, {}), m)
            if a and b and a > 1.03 * b:
                misses[5].append(f"{label} {m} V={V} B={B}: {a:.1f} vs {b:.1f} ({a / b:.3f})")
    bf16_checked = bf16_speedups(new, misses[4])
    ws = [(int(row["workspace_bytes"]), key) for key, c in new.items()
          for m, row in c.items() if m == "qrita" and key[1] == 262144 and key[2] == 1024]
    print()
    for b, key in sorted(ws, key=lambda x: x[1]):
        print(f"- qrita workspace {key[0]} V={key[1]} B={key[2]}: {b / 2**20:.2f} MiB")
    for t in (1, 2, 3, 4, 5):
        if t == 4 and not bf16_checked:
            print("\nTarget 4: not checked (no cell timed in float32 and bf16 at B = 1024)")
            continue
        if t == 5 and not old:
            print("\nTarget 5: not checked (no OLD file: the build before the issue)")
            continue
        print(f"\nTarget {t}: {len(misses[t])} misses")
        for line in misses[t]:
            print(f"- {line}")


main()

"""ncu-lines.py — the source page that scripts/ncu-source.sh writes (NAME-sass.csv: each SASS
instruction with its CUDA source line) summed per source line: warp instructions executed and
warp stall samples, most samples first, as a TSV on stdout. ncu attributes an inlined
instruction to more than one line (the callee's and lines of its call chain: a call site can
carry the same counts as the line it inlines), so the lines' sums exceed the kernel's totals:
read a line's share against the details page, and never add lines of one call chain.
usage: python3 scripts/ncu-lines.py NAME-sass.csv [TITLE]   (TITLE: a '# ' line above the header)
"""
import collections
import csv
import sys


def per_line(path):
    """{(file, line): [instructions, samples, source]} from ncu's --csv source page."""
    lines, name, header = {}, None, None
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "File Path":
                name = row[1].rsplit("/", 1)[-1]
            elif row[0] == "Line No":
                header = row
            elif header and row[0].strip().isdigit():
                extra = len(row) - len(header)  # a source line's quotes can split its cell
                source = ",".join(row[1:2 + extra]).strip()
                cell = dict(zip(header[2:], row[2 + extra:]))
                entry = lines.setdefault((name, int(row[0])), [0, 0, source])
                entry[0] += int(cell.get("Instructions Executed") or 0)
                entry[1] += int(cell.get("Warp Stall Sampling (All Samples)") or 0)
    return lines


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    lines = per_line(argv[1])
    if len(argv) == 3:
        print("# " + argv[2])
    print("file\tline\twarp_instructions\tstall_samples\tsource")
    order = sorted(lines.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
    for (name, line), (instructions, samples, source) in order:
        if instructions or samples:
            print(f"{name}\t{line}\t{instructions}\t{samples}\t{source}")


if __name__ == "__main__":
    main(sys.argv)

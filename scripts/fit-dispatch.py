#!/usr/bin/env python3
"""fit-dispatch.py — the dispatch table of one GPU from a run of configs/h100/dispatch_fit.lua
(docs/DESIGN.md, "Variants and the dispatch table").

    python3 scripts/fit-dispatch.py RESULTS.h5 SLUG > dispatch/SLUG.tsv
    python3 scripts/fit-dispatch.py RESULTS.h5 SLUG --check    # the held-out cells

A variant of a module is the options its cells of the fit sweep differ in (cluster=4). For
each fit cell (module, dtype, B, V, k) the variant with the smallest median time wins, and the
table gets one row per fit cell, in ascending (B, V, k) order per module and dtype, so that a
cell takes the smallest fitted grid point at or above it (harness/module/dispatch.h). With
--check, each held-out cell (sweep dispatch_heldout) is printed with the variant the table gives
it and that variant's time over the cell's fastest; the exit status is 1 when one is above 1.05
or has no row. RESULTS may be a `topkp export` TSV (scripts/topkp_results.py, records)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topkp_results  # noqa: E402

FIT, HELDOUT, SLACK = "dispatch_fit", "dispatch_heldout", 1.05
HEADER = "module\tdtype\tbatch_max\tvocab_max\tk_max\toptions"


def _options(text):
    return [tuple(o.split("=", 1)) for o in str(text).split(",") if "=" in o]


def variant_names(cells):
    """{module: the option names its fit cells differ in}, in the module's option order."""
    seen = {}
    for c in cells:
        for name, value in _options(c["options"]):
            seen.setdefault(c["algo"], {}).setdefault(name, set()).add(value)
    return {m: [n for n, vals in opts.items() if len(vals) > 1] for m, opts in seen.items()}


def grid(cells, names):
    """{(module, dtype, B, V, k): {variant: median us}} over the timed cells."""
    out = {}
    for c in cells:
        t = c["median_us"]
        if c["status"] != "ok" or not isinstance(t, (int, float)) or math.isnan(t):
            continue
        opts = dict(_options(c["options"]))
        variant = ",".join("%s=%s" % (n, opts[n]) for n in names.get(c["algo"], []) if n in opts)
        point = (c["algo"], c["dtype"], int(c["batch"]), int(c["vocab"]), int(c["k"]))
        out.setdefault(point, {})[variant] = float(t)
    return out


def fit(points):
    """The table's rows: (module, dtype, B, V, k, fastest variant), ascending per module, dtype."""
    rows = [key + (min(times, key=times.get),) for key, times in points.items() if times]
    rows = [r for r in rows if r[5]]  # a module with one variant has nothing to dispatch
    return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3], r[4]))


def lookup(rows, module, dtype, batch, vocab, k):
    """The first row holding the cell, as harness/module/dispatch.c's tkp_dispatch_lookup."""
    for r in rows:
        if r[0] == module and r[1] in (dtype, "*") and batch <= r[2] and vocab <= r[3] \
                and k <= r[4]:
            return r
    return None


def check(rows, points, out):
    """Print every held-out cell; returns how many are past SLACK or have no row."""
    bad = 0
    out.write("module\tdtype\tbatch\tvocab\tk\tvariant\tfastest\tratio\n")
    for (module, dtype, b, v, k), times in sorted(points.items()):
        row = lookup(rows, module, dtype, b, v, k)
        fastest = min(times, key=times.get)
        given = row[5] if row else "(no row)"
        ratio = times[given] / times[fastest] if given in times else float("inf")
        bad += ratio > SLACK
        out.write("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%.3f\n"
                  % (module, dtype, b, v, k, given, fastest, ratio))
    return bad


def main(argv):
    args = [a for a in argv[1:] if a != "--check"]
    if len(args) != 2:
        sys.stderr.write("usage: fit-dispatch.py RESULTS SLUG [--check]\n")
        return 2
    path, slug = args
    cells = topkp_results.records(path)
    fit_cells = [c for c in cells if c["sweep"] == FIT]
    if not fit_cells:
        sys.stderr.write("%s: no cells of sweep %s\n" % (path, FIT))
        return 1
    names = variant_names(fit_cells)
    rows = fit(grid(fit_cells, names))
    if "--check" in argv:
        held = grid([c for c in cells if c["sweep"] == HELDOUT], names)
        bad = check(rows, held, sys.stdout)
        sys.stderr.write("%d held-out cells, %d past %.2f x their fastest\n"
                         % (len(held), bad, SLACK))
        return 1 if bad or not held else 0
    print("# %s: fitted by scripts/fit-dispatch.py from %s" % (slug, os.path.basename(path)))
    print(HEADER)
    for r in rows:
        print("%s\t%s\t%d\t%d\t%d\t%s" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""fit-dispatch.py — the dispatch table of one GPU from a run of configs/h100/dispatch_fit.lua
(docs/DESIGN.md, "Variants and the dispatch table").

    python3 scripts/fit-dispatch.py RESULTS.h5 SLUG > dispatch/SLUG.tsv
    python3 scripts/fit-dispatch.py RESULTS.h5 SLUG --check [--topkp BIN]   # held-out cells

A variant of a module is the options its cells of the fit sweep differ in (cluster=4). The
table holds every timed variant's median at every fit grid point (module, dtype, B, V, k); a
cell takes the variant whose time, interpolated log-log between the grid points around it, is
the smallest (lookup below, harness/module/dispatch.c's tkp_dispatch_lookup step for step).
--check prints each held-out cell (sweeps dispatch_heldout and dispatch_heldout_*), the
variant the rule gives it, the cell's fastest and the one over the other, then a '#' line
counting those above 1.05 (or with none): the exit status is then 1. With --topkp, the variant
is the binary's (a `run --dry-run --backend gpu` of the held-out cells with
TKP_DISPATCH_SLUG=SLUG: its compiled-in table and its C lookup), and a cell where it differs
from this file's rule on the fit is an error (a stale table). The fit cells are those of
sweeps dispatch_fit and dispatch_fit_* (the config has a sweep a batch).
RESULTS may be a `topkp export` TSV (scripts/topkp_results.py, records)."""
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topkp_results  # noqa: E402

FIT, HELDOUT, SLACK = "dispatch_fit", "dispatch_heldout", 1.05
HEADER = "module\tdtype\tbatch\tvocab\tk\toptions\tus"


def _options(text):
    return [tuple(o.split("=", 1)) for o in str(text).split(",") if "=" in o]


def of_sweep(cell, name):
    """Is the cell of sweep `name`, or of one named name_... (the config's sweep a batch)?"""
    return cell["sweep"] == name or str(cell["sweep"]).startswith(name + "_")


def variant_names(cells):
    """{module: the option names its fit cells differ in}, in the module's option order."""
    seen = {}
    for c in cells:
        for name, value in _options(c["options"]):
            seen.setdefault(c["algo"], {}).setdefault(name, set()).add(value)
    return {m: [n for n, vals in opts.items() if len(vals) > 1] for m, opts in seen.items()}


def variant_of(module, options, names):
    opts = dict(_options(options))
    return ",".join("%s=%s" % (n, opts[n]) for n in names.get(module, []) if n in opts)


def grid(cells, names):
    """{(module, dtype, B, V, k): {variant: median us}} over the timed cells, in cell order."""
    out = {}
    for c in cells:
        t = c["median_us"]
        if c["status"] != "ok" or not isinstance(t, (int, float)) or math.isnan(t) or t <= 0:
            continue
        point = (c["algo"], c["dtype"], int(c["batch"]), int(c["vocab"]), int(c["k"]))
        out.setdefault(point, {})[variant_of(c["algo"], c["options"], names)] = float(t)
    return out


def fit(points):
    """The table's rows (module, dtype, B, V, k, variant, us), ascending grid points, each
    point's variants in the sweep's order; a module with one variant has nothing to dispatch."""
    return [key + (v, round(t, 4)) for key, times in sorted(points.items())
            for v, t in times.items() if v]


def _log_k(k):
    return math.log(float(max(k, 1)))


def _neighbours(values, x):
    lo, hi = [g for g in values if g <= x], [g for g in values if g >= x]
    return (max(lo) if lo else min(values)), (min(hi) if hi else max(values))


def _log_weight(x, lo, hi):
    if lo == hi:
        return 0.0
    return (math.log(float(x)) - math.log(float(lo))) / (math.log(float(hi)) - math.log(float(lo)))


def lookup(rows, module, dtype, batch, vocab, k):
    """The variant the cell takes, or None: tkp_dispatch_lookup (harness/module/dispatch.h)."""
    table = [r for r in rows if r[0] == module and r[1] in (dtype, "*")]
    if not table:
        return None
    gk = -1
    for r in table:
        d, bd = abs(_log_k(r[4]) - _log_k(k)), abs(_log_k(gk) - _log_k(k))
        if r[4] != gk and (gk < 0 or d < bd or (d == bd and r[4] > gk)):
            gk = r[4]
    at_k = [r for r in table if r[4] == gk]
    b = _neighbours({r[2] for r in at_k}, batch)
    v = _neighbours({r[3] for r in at_k}, vocab)
    wb, wv = _log_weight(batch, b[0], b[1]), _log_weight(vocab, v[0], v[1])
    w = ((1 - wb) * (1 - wv), (1 - wb) * wv, wb * (1 - wv), wb * wv)
    times = {(r[2], r[3], r[5]): r[6] for r in reversed(at_k)}  # the first row wins
    best, best_log = None, 0.0
    for r in at_k:
        if (r[2], r[3]) != (b[0], v[0]):
            continue
        corners = [times.get((b[j >> 1], v[j & 1], r[5])) for j in range(4)]
        if any(t is None for t in corners):
            continue
        lt = 0.0
        for j in range(4):
            lt += w[j] * math.log(corners[j])
        if best is None or lt < best_log:
            best, best_log = r[5], lt
    return best


def binary_variants(topkp, slug, cells, names):
    """{cell: variant} from `topkp run --dry-run --backend gpu` with TKP_DISPATCH_SLUG=slug."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as cfg:
        for i, (module, dtype, b, v, k) in enumerate(cells):
            cfg.write('sweep "c%d" { algos = { "%s" }, dataset = "gaussian", batch = %d, '
                      'vocab = %d, k = %d, dtype = "%s" }\n' % (i, module, b, v, k, dtype))
    try:
        env = dict(os.environ, TKP_DISPATCH_SLUG=slug)
        out = subprocess.run([topkp, "run", cfg.name, "--dry-run", "--backend", "gpu"], env=env,
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(cfg.name)
    got = {}
    for line in out.splitlines()[1:]:
        f = line.split("\t")
        cell = cells[int(f[0][1:])]
        got[cell] = variant_of(cell[0], f[2], names) or None
    return got


def check(rows, points, out, given=None):
    """Print every held-out cell; returns how many are past SLACK, have no variant or (given:
    the binary's variants) take another variant than lookup's."""
    bad = 0
    out.write("module\tdtype\tbatch\tvocab\tk\tvariant\tfastest\tratio\n")
    for cell, times in sorted(points.items()):
        variant = lookup(rows, *cell)
        if given is not None and given.get(cell) != variant:
            sys.stderr.write("%s: the binary takes %s, the fit %s (is dispatch/ stale?)\n"
                             % (" ".join(map(str, cell)), given.get(cell), variant))
            bad += 1
        fastest = min(times, key=times.get)
        ratio = times[variant] / times[fastest] if variant in times else float("inf")
        bad += ratio > SLACK
        out.write("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%.3f\n"
                  % (cell + (variant or "(none)", fastest, ratio)))
    return bad


def main(argv):
    args, topkp = list(argv[1:]), None
    if "--topkp" in args and args.index("--topkp") + 1 < len(args):
        topkp = args.pop(args.index("--topkp") + 1)
        args.remove("--topkp")
    checking = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) != 2:
        sys.stderr.write("usage: fit-dispatch.py RESULTS SLUG [--check [--topkp BIN]]\n")
        return 2
    path, slug = args
    cells = topkp_results.records(path)
    fit_cells = [c for c in cells if of_sweep(c, FIT)]
    if not fit_cells:
        sys.stderr.write("%s: no cells of sweep %s or %s_*\n" % (path, FIT, FIT))
        return 1
    names = variant_names(fit_cells)
    rows = fit(grid(fit_cells, names))
    if checking:
        held = grid([c for c in cells if of_sweep(c, HELDOUT)], names)
        given = binary_variants(topkp, slug, sorted(held), names) if topkp else None
        bad = check(rows, held, sys.stdout, given)
        print("# %d held-out cells, %d past %.2f x their fastest%s"
              % (len(held), bad, SLACK, " or not the binary's" if topkp else ""))
        return 1 if bad or not held else 0
    print("# %s: fitted by scripts/fit-dispatch.py from %s" % (slug, os.path.basename(path)))
    print(HEADER)
    for r in rows:
        print("%s\t%s\t%d\t%d\t%d\t%s\t%.4f" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

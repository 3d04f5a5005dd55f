"""claims.py — judge every claim of paper/claims.tsv on a campaign folder (docs: CAMPAIGN's
results/<gpu>-<date>/) or a list of results files, and write OUT/claims.tsv and LaTeX fragments
OUT/claims-<section>.tex (one longtable per section) and OUT/claims-rules.tex (the rules below).

    /usr/bin/python3 scripts/claims.py OUT FOLDER|FILE.h5... [gpu_tests.log | --tests LOG]

paper/claims.tsv, one row per claim (a row with `per` stands for one claim per value of
`name=v1,v2 ...` (a product when several) or per row of paper/<per>.tsv; `{name}` in the id,
statement, published and methods takes that value):
  published  a number, or arithmetic over numbers, `{column}` of the data file and
             `table:key:metric` of paper/published.tsv (the paper's tables, kept once there)
  ref, dir   the reference of the direction verdict and the paper's side of it: `<` or `>`;
             `=` (a size claim: no direction), `bool` (a test outcome), `fitted` (agrees by
             construction: shown, not judged)
  band       the size verdict's band on the paper's card (H100), band_other on any other card
  primary    how ours is computed; second the same claim on the second subject (the report's
             second column). A method and selectors `sweep{col=value;col~substring}` (cells of
             that sweep in any input file, status ok):
               time S           S's median time (us), with its 95 % order-statistic interval
               ratio S1 S2      t(S1) / t(S2) of two cells
               diff S1 S2       t(S1) - t(S2) in ms;   share S1 S2 S3   (t(S1) - t(S2)) / t(S3)
               speedup S B      t(B) / t(S) over the cells S and B share (dataset, vocab, batch, k,
                                p, dtype): the geometric mean; speedup_min/_median/_max S B the
                                statistic over those cells
               bytes S B        workspace_bytes(S) / workspace_bytes(B), geometric mean over the
                                cells they share
               exact S          rows exact / rows checked, summed over the cells
               hits S           the truncation hit rate over the rows of the cells
               mean S column    column's mean over the rows of the cells
               tests NAME...    1 when every named test is `ok` in gpu_tests.log, 0 when one fails
               none             not reproduced (note says why)

Intervals (95 %). A median time: the distribution-free order-statistic interval of
harness/store/compare.c (tkp_median_interval). A combination of m medians (ratio, diff, share): each
median's interval at 1 - 0.05/m and interval arithmetic, which for a ratio is compare.c's
tkp_compare_samples: [lo_a / hi_b, hi_a / lo_b] from two 97.5 % intervals, >= 95 %. Over many
cells (speedup, speedup_*): the same statistic of the cells' lower and of their upper bounds
(each cell at >= 95 %; not a simultaneous interval). Rates: Clopper-Pearson (exact binomial).
Bytes, means of counts and test outcomes: exact, no interval. A median needs >= 7 samples
for an interval at 97.5 % (fewer: no interval, verdicts inconclusive).

Every section's cells must come from one build: the (git_commit, binary_id) of each cell's run
(/runs/<run>, else the file's root attributes), and in a campaign folder the (commit,
binary_sha256) of campaign.tsv's ok chunks; two builds in one section exit 1 naming both.
A declared claim missing from the output is an error (exit 1). The intervals are in
scripts/claims_stats.py, the LaTeX in scripts/claims_tex.py."""
import ast
import glob
import itertools
import math
import operator
import os
import re
import sys

import h5py
import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topkp_results  # noqa: E402
from claims_stats import clopper_pearson, median_interval, ratio_interval  # noqa: E402,F401
from claims_tex import write_tex  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PAPER = os.path.join(os.path.dirname(HERE), "paper")
PAPER_CARD = "H100"  # the paper's card and the cake seed's table's
SECTIONS = {  # the report's sections and the sweeps whose cells they show (docs: CAMPAIGN)
    "fig2": ["fig2", "fig2_bf16", "fig2_real"],
    "table1": ["table1", "table1_unfitted", "table1_real"],
    "fig4": ["fig4"],
    "table4": ["table4", "table4_peers"],
    "exactness": ["exactness", "exactness_16bit"],
    "cake": ["cake_seed"],
    "notrep": [],
}
RULES = [
    ("direction", "the paper's side of the reference (below it for <, above it for >): holds "
     "when our whole 95 % interval lies on that side, does not hold when it lies wholly on the "
     "other side, inconclusive when it contains the reference or there is no interval; n/a for "
     "a claim of size only (=)."),
    ("size", "holds when the published value lies inside our 95 % interval widened by the "
     "row's band (times, ratios, bytes, counts: [lo / (1 + band), hi (1 + band)]; rates: "
     "[lo - band, hi + band]); the band is larger on a card other than the paper's H100; "
     "does not hold outside it; inconclusive without an interval; n/a with no published number."),
    ("other", "no data: the cells are absent (the missing cells are named); by construction: "
     "a fitted profile, shown and not judged; not reproduced: the reason is given. Test "
     "outcomes (bool) hold when every named test passed."),
]
TIMER = {"gpu": "CUDA events, L2 flushed, median", "cpu": "host clock, median (CPU backend)"}
TIME_KINDS = ("time", "time ratio")


class NoData(Exception):
    """The cells a claim needs are absent or not ok; the message names them."""


# ---- the cells ----

class Cells:
    """Every cell of the inputs, by sweep, with its file and its build."""

    def __init__(self, paths):
        self.by_sweep, self.samples, self.files = {}, {}, {}
        for path in paths:
            try:
                h5py.File(path, "r").close()
            except OSError as e:
                sys.exit("claims.py: %s is not a results file: %s" % (path, e))
            with h5py.File(path, "r") as f:
                root = {k: _text(v) for k, v in f.attrs.items()}
                runs = {int(n): {k: _text(v) for k, v in g.attrs.items()}
                        for n, g in f["runs"].items()} if "runs" in f else {}
            self.files[path] = root
            for sweep in topkp_results.sweeps(path):
                rows = topkp_results.load(path, sweep)
                rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
                for row in rows:
                    run = runs.get(int(row.get("run", 0) or 0), root)
                    row["_file"], row["_sweep"] = path, sweep
                    row["_build"] = (run.get("git_commit", root.get("git_commit", "?")),
                                     run.get("binary_id", root.get("binary_id", "")))
                    row["_device"] = run.get("device_name", root.get("device_name", ""))
                    row["_backend"] = root.get("backend", "")
                self.by_sweep.setdefault(sweep, []).extend(rows)

    def check_builds(self):
        """Exit 1 when a section's cells come from two builds (naming both and their files)."""
        for section, sweeps in SECTIONS.items():
            seen = {}
            for sweep in sweeps:
                for c in self.by_sweep.get(sweep, []):
                    seen.setdefault(c["_build"], set()).add("%s (%s)" % (c["_file"], sweep))
            if len(seen) > 1:
                (a, fa), (b, fb) = sorted(seen.items())[:2]
                sys.exit("claims.py: section %s mixes two builds: commit %s binary %s in %s, and "
                         "commit %s binary %s in %s" % (section, a[0], a[1] or "(none recorded)",
                                                        ", ".join(sorted(fa)), b[0],
                                                        b[1] or "(none recorded)", ", ".join(sorted(fb))))

    @staticmethod
    def check_campaign(path):
        """The same for campaign.tsv's chunks (reproduce.sh: file, sweep, commit, binary_sha256,
        ...): the ok chunks of one section name one commit and one binary sha256."""
        if not path:
            return
        seen = {}
        for r in read_tsv(path):
            if not r.get("status", "").startswith("ok"):
                continue
            for sweep in (r.get("sweep") or "").split(","):  # a chunk may run several sweeps
                for section, sweeps in SECTIONS.items():
                    if sweep in sweeps:
                        seen.setdefault(section, {}).setdefault(
                            (r.get("commit"), r.get("binary_sha256")), []).append(
                            "%s (%s)" % (r.get("file"), sweep))
        for section, builds in seen.items():
            if len(builds) > 1:
                (a, fa), (b, fb) = sorted(builds.items())[:2]
                sys.exit("claims.py: %s: section %s mixes two builds: commit %s binary sha256 %s in %s, "
                         "and commit %s binary sha256 %s in %s" % (path, section, a[0], a[1], ", ".join(fa),
                                                                    b[0], b[1], ", ".join(fb)))

    def select(self, selector):
        """The cells of `sweep{col=value;col~substring}`; NoData naming what is missing."""
        m = re.fullmatch(r"(\w+)\{(.*)\}", selector)
        if not m:
            raise ValueError("bad selector %r" % selector)
        sweep, conds = m.group(1), [c for c in m.group(2).split(";") if c]
        cells = self.by_sweep.get(sweep)
        if cells is None:
            raise NoData("no sweep %s in the inputs" % sweep)
        for cond in conds:
            col, op, want = re.fullmatch(r"(\w+)([=~])(.*)", cond).groups()
            cells = [c for c in cells if _matches(c.get(col), op, want)]
        if not cells:
            raise NoData("no cell %s" % selector)
        ok = [c for c in cells if c.get("status") == "ok"]
        if not ok:
            raise NoData("%s: %d cells, none ok (%s: %s)" % (selector, len(cells), cells[0].get("status"),
                                                             cells[0].get("message", "")[:80]))
        return ok

    def one(self, selector):
        cells = self.select(selector)
        if len(cells) > 1:
            raise ValueError("selector %s matches %d cells (make it name one)" % (selector, len(cells)))
        return cells[0]

    def times(self, cell):
        """The cell's repetition times (us), read once per file and sweep."""
        key = (cell["_file"], cell["_sweep"])
        if key not in self.samples:
            with h5py.File(key[0], "r") as f:
                self.samples[key] = f["sweeps"][key[1]]["samples"][()]
        n, off = int(cell["n_samples"]), int(cell["samples_offset"])
        return self.samples[key][off:off + n].tolist()


def _text(v):
    return v.decode() if isinstance(v, bytes) else (v.item() if hasattr(v, "item") else v)


def _matches(value, op, want):
    if op == "~":
        return want in str(value)
    if isinstance(value, float):
        try:
            return abs(value - float(want)) <= 1e-6 * max(1.0, abs(value))
        except ValueError:
            return False
    return str(value) == want


def cell_key(c):
    return (c.get("dataset"), c.get("vocab"), c.get("batch"), c.get("k"), round(float(c.get("p", 0)), 4),
            c.get("dtype", ""))


# ---- the methods: each returns (value, lo, hi, cells[, a detail for the reader]) ----

def _medians(cells, sels):
    """The cells' medians (us) with intervals at 1 - 0.05/m (m = the number of medians)."""
    picked = [cells.one(s) for s in sels]
    alpha = 0.05 / len(picked)
    out = []
    for c in picked:
        iv = median_interval(cells.times(c), alpha)
        out.append((float(c["median_us"]), iv))
    return out, picked


def m_time(cells, s):
    [(t, iv)], picked = _medians(cells, [s])
    return t, iv and iv[0], iv and iv[1], picked


def _div(a, b):
    if a[1] is None or b[1] is None or not b[1][0] > 0:
        return None
    cands = [x / y for x in a[1] for y in b[1]]
    return min(cands), max(cands)


def m_ratio(cells, s1, s2):
    a, b = cells.one(s1), cells.one(s2)
    iv = ratio_interval(cells.times(a), cells.times(b))
    return float(a["median_us"]) / float(b["median_us"]), iv and iv[0], iv and iv[1], [a, b]


def m_diff(cells, s1, s2):
    (a, b), picked = _medians(cells, [s1, s2])
    iv = a[1] and b[1] and ((a[1][0] - b[1][1]) / 1e3, (a[1][1] - b[1][0]) / 1e3)
    return (a[0] - b[0]) / 1e3, iv and iv[0], iv and iv[1], picked


def m_share(cells, s1, s2, s3):
    (a, b, c), picked = _medians(cells, [s1, s2, s3])
    d = (a[0] - b[0], a[1] and b[1] and (a[1][0] - b[1][1], a[1][1] - b[1][0]))
    iv = _div(d, c)
    return d[0] / c[0], iv and iv[0], iv and iv[1], picked


def _pairs(cells, subject, base):
    """The cells of `subject` and `base` that share a cell key, as (subject, base) pairs."""
    subj, bases = {}, {}
    for name, sel, into in (("subject", subject, subj), ("base", base, bases)):
        for c in cells.select(sel):
            if cell_key(c) in into:
                raise ValueError("%s %s has two cells at %s (make it name one)" % (name, sel, cell_key(c)))
            into[cell_key(c)] = c
    pairs = [(subj[k], bases[k]) for k in subj if k in bases]
    if not pairs:
        raise NoData("%s and %s share no cell" % (subject, base))
    return pairs


def _speedups(cells, subject, base):
    """Per shared cell: t(base) / t(subject) and its interval (ratio_interval)."""
    out, used = [], []
    for s, b in _pairs(cells, subject, base):
        out.append((float(b["median_us"]) / float(s["median_us"]), ratio_interval(cells.times(b), cells.times(s))))
        used += [s, b]
    return out, used


def _stat_of(stat, rs):
    lo = None if any(iv is None for _, iv in rs) else stat([iv[0] for _, iv in rs])
    hi = None if lo is None else stat([iv[1] for _, iv in rs])
    return stat([r for r, _ in rs]), lo, hi


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _beyond_one(rs):
    """How the cells' speed-ups fall: faster or slower beyond their interval, of how many."""
    faster = sum(1 for _, iv in rs if iv and iv[0] > 1)
    slower = sum(1 for _, iv in rs if iv and iv[1] < 1)
    return "%d cells: faster in %d, slower in %d (interval beyond 1)" % (len(rs), faster, slower)


def m_speedup(cells, subject, base):
    rs, used = _speedups(cells, subject, base)
    return _stat_of(geomean, rs) + (used, _beyond_one(rs))


def _speedup_stat(stat):
    def method(cells, subject, base):
        rs, used = _speedups(cells, subject, base)
        return _stat_of(stat, rs) + (used, _beyond_one(rs))
    return method


def m_bytes(cells, subject, base):
    pairs = _pairs(cells, subject, base)
    if any(float(b["workspace_bytes"]) <= 0 for _, b in pairs):
        raise NoData("%s records no workspace in a shared cell: no ratio" % base)
    each = [max(float(s["workspace_bytes"]), 1.0) / float(b["workspace_bytes"]) for s, b in pairs]
    r = geomean(each)
    return r, r, r, [c for p in pairs for c in p], "%d cells, %.3g to %.3g" % (len(each), min(each), max(each))


def m_exact(cells, s):
    cs = [c for c in cells.select(s) if int(c.get("rows_checked", 0)) > 0]
    if not cs:
        raise NoData("%s: no rows checked" % s)
    x, n = sum(int(c["rows_exact"]) for c in cs), sum(int(c["rows_checked"]) for c in cs)
    lo, hi = clopper_pearson(x, n)
    return x / n, lo, hi, cs, "%d of %d rows" % (x, n)


def m_hits(cells, s):
    cs = [c for c in cells.select(s) if not math.isnan(float(c.get("hit_rate", math.nan)))]
    if not cs:
        raise NoData("%s: no hit rate recorded" % s)
    n = sum(int(c["batch"]) for c in cs)
    x = int(round(sum(float(c["hit_rate"]) * int(c["batch"]) for c in cs)))
    lo, hi = clopper_pearson(x, n)
    return x / n, lo, hi, cs, "%d of %d rows" % (x, n)


def m_mean(cells, s, column):
    cs = [c for c in cells.select(s) if not math.isnan(float(c.get(column, math.nan)))]
    if not cs:
        raise NoData("%s: no %s recorded" % (s, column))
    v = sum(float(c[column]) * int(c["batch"]) for c in cs) / sum(int(c["batch"]) for c in cs)
    return v, v, v, cs


METHODS = {"time": m_time, "ratio": m_ratio, "diff": m_diff, "share": m_share,
           "speedup": m_speedup, "speedup_min": _speedup_stat(min),
           "speedup_median": _speedup_stat(lambda xs: float(numpy.median(xs))),
           "speedup_max": _speedup_stat(max), "bytes": m_bytes, "exact": m_exact,
           "hits": m_hits, "mean": m_mean}


def read_tests(path):
    """{test name: 'ok' | 'FAIL' | 'skip'} from a topkp-tests log."""
    out = {}
    if path and os.path.exists(path):
        for line in open(path, errors="replace"):
            m = re.match(r"(ok|FAIL|skip)\s+(\S+)", line)
            if m:
                out[m.group(2)] = m.group(1)
    return out


def evaluate(cells, tests, tests_path, method):
    """(value, lo, hi, cells used[, detail]) of a method line; NoData when its cells are absent."""
    words = method.split()
    if words[0] == "tests":
        if not tests:
            raise NoData("no gpu_tests.log (the GPU test run) in the inputs")
        absent = [t for t in words[1:] if t not in tests]
        if absent:
            raise NoData("%s has no result for %s" % (tests_path, ", ".join(absent)))
        bad = [t for t in words[1:] if tests[t] != "ok"]
        v = float(not bad)
        detail = "%d tests ok" % len(words[1:]) if not bad else "not ok: " + ", ".join(bad)
        return v, v, v, [{"_file": tests_path, "_build": ("", ""), "_device": "", "_backend": ""}], detail
    return METHODS[words[0]](cells, *words[1:])


# ---- the declared table ----

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def published_value(text, published):
    """A published expression: numbers, table:key:metric of published.tsv, + - * / ( )."""
    if text == "":
        return None
    expr = re.sub(r"(\w+):(\w+):(\w+)", lambda m: repr(published[(m.group(1), m.group(2), m.group(3))]), text)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError("published %r: not arithmetic" % text)
    return ev(ast.parse(expr, mode="eval"))


def read_tsv(path):
    lines = [l.rstrip("\n") for l in open(path) if not l.startswith("#") and l.strip()]
    header = lines[0].split("\t")
    return [dict(zip(header, l.split("\t"))) for l in lines[1:]]


def expand(row):
    """The claims a declared row stands for: (row with {name} filled in)."""
    per = row["per"]
    if not per:
        return [dict(row)]
    if "=" in per:
        names, values = zip(*[(p.split("=")[0], p.split("=")[1].split(",")) for p in per.split()])
        combos = [dict(zip(names, vs)) for vs in itertools.product(*values)]
    else:
        combos = read_tsv(os.path.join(PAPER, per + ".tsv"))
    out = []
    for combo in combos:
        filled = {}
        for k, v in row.items():
            for name, val in combo.items():
                v = v.replace("{%s}" % name, val)
            filled[k] = v
        out.append(filled)
    return out


def declared(published):
    rows = [c for r in read_tsv(os.path.join(PAPER, "claims.tsv")) for c in expand(r)]
    ids = [r["id"] for r in rows]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit("claims.py: paper/claims.tsv declares %s twice" % ", ".join(sorted(dup)))
    for r in rows:
        r["_published"] = published_value(r["published"], published)
    return rows


# ---- verdicts ----

def verdicts(claim, value, lo, hi, other_card):
    d, kind, pub = claim["dir"], claim["kind"], claim["_published"]
    if d == "fitted":
        return "by construction", "by construction"
    if d == "bool":
        return ("holds" if value == 1 else "does not hold"), "n/a"
    direction = "n/a"
    if d in "<>":
        ref = float(claim["ref"])
        if lo is None:
            direction = "inconclusive"
        else:
            below, above = hi < ref, lo > ref
            paper_side = below if d == "<" else above
            other_side = above if d == "<" else below
            direction = "holds" if paper_side else "does not hold" if other_side else "inconclusive"
    if pub is None:
        return direction, "n/a"
    if lo is None:
        return direction, "inconclusive"
    band = float(claim["band_other"] if other_card else claim["band"])
    if kind == "rate":
        inside = lo - band <= pub <= hi + band
    else:
        inside = min(lo / (1 + band), lo * (1 + band)) <= pub <= max(hi * (1 + band), hi / (1 + band))
    return direction, ("holds" if inside else "does not hold")


def judge(claim, method, cells, tests, tests_path):
    """{ours, lo, hi, direction, size, cells, builds, devices, missing} of one method."""
    if not method:
        return None
    if method == "none":
        return {"direction": "not reproduced", "size": "not reproduced"}
    try:
        result = evaluate(cells, tests, tests_path, method)
        value, lo, hi, used = result[:4]
    except NoData as e:
        return {"direction": "no data", "size": "no data", "missing": str(e)}
    devices = sorted({c["_device"] for c in used if c["_device"]})
    other = not devices or any(PAPER_CARD not in d for d in devices)
    direction, size = verdicts(claim, value, lo, hi, other)
    backends = sorted({c["_backend"] for c in used})
    cells_used = [c for c in used if "status" in c]
    return {"ours": value, "lo": lo, "hi": hi, "direction": direction, "size": size,
            "detail": result[4] if len(result) > 4 else "",
            "cells": len(cells_used), "noisy": sum(int(c.get("noisy", 0) or 0) for c in cells_used),
            "builds": sorted({"%s/%s" % c["_build"] for c in cells_used}),
            "devices": devices, "files": sorted({os.path.basename(c["_file"]) for c in used}),
            "timer": "; ".join(TIMER.get(b, b) for b in backends) if claim["kind"] in TIME_KINDS else "-"}


def fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return "%.4g" % x


COLUMNS = ["id", "section", "source", "kind", "statement", "published", "ref", "dir", "band",
           "band_other", "ours", "lo", "hi", "direction", "size", "ours2", "lo2", "hi2",
           "direction2", "size2", "detail", "detail2", "cells", "noisy", "timer", "published_timer", "build", "device",
           "files", "missing", "note"]


def published_timer(claim):
    if claim["kind"] not in TIME_KINDS:
        return "-"
    return "CUPTI kernel time (bench_gpu_time), median" if claim["source"].startswith("cake") else "not stated (the paper)"


def row_of(claim, a, b):
    out = {k: claim.get(k, "") for k in COLUMNS}
    out["published"] = fmt(claim["_published"])
    for suffix, r in (("", a), ("2", b)):
        r = r or {}
        for k in ("ours", "lo", "hi"):
            out[k + suffix] = fmt(r.get(k))
        out["direction" + suffix] = r.get("direction", "")
        out["detail" + suffix] = r.get("detail", "")
        out["size" + suffix] = r.get("size", "")
    src = a or {}
    out["cells"] = str(src.get("cells", ""))
    out["noisy"] = str(src.get("noisy", ""))
    out["timer"] = src.get("timer", "")
    out["published_timer"] = published_timer(claim)
    out["build"] = " ".join(src.get("builds", []))
    out["device"] = " ".join(src.get("devices", []))
    out["files"] = " ".join(src.get("files", []))
    missing = [x for x in ((a or {}).get("missing"), (b or {}).get("missing")) if x]
    out["missing"] = "; ".join(sorted(set(missing), key=missing.index))
    return out


# ---- main ----

def inputs(args):
    """(results files, gpu_tests.log or None, campaign.tsv or None) of a campaign folder or a
    list of files."""
    tests = campaign = None
    if "--tests" in args:
        i = args.index("--tests")
        tests = args[i + 1]
        args = args[:i] + args[i + 2:]
    files = []
    for a in args:
        if os.path.isdir(a):
            files += sorted(glob.glob(os.path.join(a, "*.h5")))
            if tests is None and os.path.exists(os.path.join(a, "gpu_tests.log")):
                tests = os.path.join(a, "gpu_tests.log")
            if os.path.exists(os.path.join(a, "campaign.tsv")):
                campaign = os.path.join(a, "campaign.tsv")
        elif a.endswith(".log"):
            tests = a
        else:
            files.append(a)
    for f in files:
        if not os.access(f, os.R_OK):
            sys.exit("claims.py: cannot read %s" % f)
    return files, tests, campaign


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    out_dir = argv[1]
    files, tests_path, campaign = inputs(argv[2:])
    published = {(r["table"], r["key"], r["metric"]): float(r["value"])
                 for r in read_tsv(os.path.join(PAPER, "published.tsv"))}
    claims = declared(published)
    cells = Cells(files)
    cells.check_builds()
    cells.check_campaign(campaign)
    tests = read_tests(tests_path)
    rows = []
    for c in claims:
        if c["section"] not in SECTIONS:
            sys.exit("claims.py: claim %s: unknown section %s" % (c["id"], c["section"]))
        try:
            a = judge(c, c["primary"], cells, tests, tests_path)
            b = judge(c, c["second"], cells, tests, tests_path)
        except (ValueError, KeyError, TypeError) as e:
            sys.exit("claims.py: claim %s: %s" % (c["id"], e))
        rows.append(row_of(c, a, b))
    missing = [c["id"] for c in claims if c["id"] not in {r["id"] for r in rows}]
    if missing:
        sys.exit("claims.py: declared claims missing from the output: %s" % ", ".join(missing))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "claims.tsv"), "w") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            f.write("\t".join(str(r[k]).replace("\t", " ") for k in COLUMNS) + "\n")
    write_tex(out_dir, rows, SECTIONS, RULES)
    counts = {}
    for r in rows:
        counts[r["direction"]] = counts.get(r["direction"], 0) + 1
    print("claims.py: %d claims into %s/claims.tsv (direction: %s)" % (
        len(rows), out_dir, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

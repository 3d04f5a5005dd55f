"""claims_tex.py — the LaTeX fragments of scripts/claims.py: the verdict rules
(claims-rules.tex) and one longtable per report section (claims-<section>.tex), each claim a row:
its id, statement (with what is missing and its note, once per section), the published value
with the size bands, ours with its 95 % interval and verdicts, the second column likewise."""
import os
import re


# Each character LaTeX reads as markup, as text (paper/build.sh's TEX_FN, docs/ROBUSTNESS.md,
# "Outputs"); a control character as \\xHH, as the exported TSV shows it.
TEX_CHARS = {"\\": "\\textbackslash{}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
             "<": "$<$", ">": "$>$", **{c: "\\" + c for c in "_%&#${}"}}


def tex_chars(s):
    """s with every LaTeX special as text."""
    return "".join(TEX_CHARS.get(c) or ("\\textbackslash{}x%02X" % ord(c) if ord(c) < 32 or c == "\x7f" else c)
                   for c in s)


def tex(s):
    """LaTeX text of s: specials escaped, breaks allowed after the ';' of a selector."""
    return "$\\to$".join(tex_chars(part) for part in s.split("->")).replace(";", ";\\allowbreak{}")


def cell_tex(r, suffix):
    """Ours (or the second column): the value, its interval when it has one, the detail."""
    v = r["ours" + suffix]
    if not v:
        return "--"
    if r["lo" + suffix] and r["lo" + suffix] != v:
        v = "%s [%s, %s]" % (v, r["lo" + suffix], r["hi" + suffix])
    detail = r.get("detail" + suffix, "")
    return v + (" {\\tiny %s}" % tex(detail) if detail else "")


def tex_id(claim_id):
    """A claim id that may break after its dots and underscores."""
    return tex(claim_id).replace(".", ".\\allowbreak{}").replace("\\_", "\\_\\allowbreak{}")


def verdicts_tex(r, suffix):
    d, z = r["direction" + suffix], r["size" + suffix]
    if not d:
        return "--"
    return d if d == z else "%s / %s" % (d, z)


def published_tex(r):
    """The published value and the size verdict's bands (the paper's card / another)."""
    if not r["published"]:
        return "--"
    if not r["band"]:
        return r["published"]
    return "%s {\\tiny(%s/%s)}" % (r["published"], r["band"], r["band_other"])


# the claims tables' columns (fractions of the text width; with the column gaps they fill it):
# claim, statement, published, ours, its verdicts, the second column, its verdicts
WIDTHS = (0.13, 0.23, 0.08, 0.11, 0.11, 0.11, 0.11)


def write_tex(out_dir, rows, sections, rules):
    with open(os.path.join(out_dir, "claims-rules.tex"), "w") as f:
        f.write("\\begin{description}\n")
        for name, text in rules:
            f.write("\\item[%s] %s\n" % (tex(name), tex(text)))
        f.write("\\end{description}\n")
    for section in sections:
        mine = [r for r in rows if r["section"] == section]
        with open(os.path.join(out_dir, "claims-%s.tex" % section), "w") as f:
            f.write("{\\scriptsize\\setlength{\\tabcolsep}{3pt}\\begin{longtable}"
                    "{%s}\n" % "".join(">{\\raggedright\\arraybackslash}p{%.3f\\textwidth}" % w for w in WIDTHS))
            f.write("\\toprule claim & statement & published (band) & ours [95\\,\\%] & direction / size & "
                    "second [95\\,\\%] & direction / size \\\\ \\midrule\\endhead\n")
            shown = set()  # a note once per section (a family's rows share theirs)
            for r in mine:
                missing = " \\emph{(%s)}" % tex(r["missing"]) if r["missing"] else ""
                note = " \\emph{%s.}" % tex(r["note"]) if r["note"] and r["note"] not in shown else ""
                shown.add(r["note"])
                f.write("\\texttt{%s} & %s%s%s & %s & %s & %s & %s & %s \\\\\n" % (
                    tex_id(r["id"]), tex(r["statement"]), missing, note, published_tex(r),
                    cell_tex(r, ""), verdicts_tex(r, ""), cell_tex(r, "2"), verdicts_tex(r, "2")))
            f.write("\\bottomrule\\end{longtable}}\n")

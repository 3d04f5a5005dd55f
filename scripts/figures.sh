#!/usr/bin/env bash
# figures.sh RESULTS.h5 [OUTDIR] — draw every figure kind that the results file's cells allow,
# as PNG and PDF (FIGURE_FORMATS="png pdf svg" adds SVG), labelled with the run's device,
# backend and git commit:
#   <stem>.png             median time against batch, every ok cell (what `make run` promises)
#   <stem>-throughput      rows/s against batch per vocabulary and mode   (paper Figure 2)
#   <stem>-speedup         speed-up over $BASELINE (default naive_sort)    when it and others ran
#   <stem>-vs-peers        each module's speed-up over the fastest peer of the same cell
#                          (sweep, dataset, vocab, batch, k, p)            when both ran
#   <stem>-memory          workspace bytes against batch                   (paper Figure 4)
#   <stem>-ablation        bars per variant of ablation sweeps             (paper Table 4)
#   <stem>-hitrate         truncation hit rate and outliers                (paper Table 1)
# Peers are the external libraries of the results file (an algo name with a '.', such as
# vllm.triton or flashinfer.cake); every figure that draws modules draws them after the modules
# in a style of their own (plots/common.gp). A line is named by its algo, ":variant" for
# ablation cells, then the options whose values differ among that algo's cells in the file
# ("flashinfer.cake input=softmax").
# OUTDIR (default plots/out) also receives the TSVs the figures read, all from `topkp export`:
# <stem>-all.tsv (every cell), <stem>.tsv (ok cells + series, panel, rows_per_s, speedup, line,
# peer, best_peer, best_peer_us, vs_peer), <stem>-vs-peers.tsv (module cells against the best
# peer), <stem>-exact.tsv (rows exact / rows checked per line, every cell), <stem>-ablation.tsv,
# <stem>-hitrate.tsv, and <stem>-info.tsv (`topkp info`); <stem>-kinds.txt lists the kinds
# drawn. paper/build.sh reads the same files.
set -euo pipefail
res=${1:?usage: figures.sh RESULTS.h5 [OUTDIR]}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TOPKP:-$top/build/topkp}
baseline=${BASELINE:-naive_sort}
formats=${FIGURE_FORMATS:-png pdf}
out=${2:-$top/plots/out}
stem=$(basename "$res" .h5)
base=$out/$stem
mkdir -p "$out"

"$bin" export "$res" > "$base-all.tsv"
"$bin" info "$res" > "$base-info.tsv"

# The algorithms of the file in drawing order: modules in registry order, then modules the
# registry does not know, then peers.
registry=$("$bin" list --no-probe | awk '/^algorithms:/ { f = 1; next } /^[a-z]/ { f = 0 } f && /^  [a-z]/ { print $1 }')
present=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "algo") c = i; next } !s[$c]++ { print $c }' "$base-all.tsv")
algos=$( { grep -Fxf <(echo "$present") <<< "$registry" || true; grep -vFxf <(echo "$registry") <<< "$present" || true; } |
         awk '!/\./ { print; next } { p[++n] = $0 } END { for (i = 1; i <= n; i++) print p[i] }' | tr '\n' ' ')

# ok cells, with a series name (lines), a panel name (dataset/V=vocab), throughput, the speed-up
# over the baseline's cell of the same sweep, dataset, shape and mode, and for a module the
# fastest ok peer of that cell; each series contiguous and sorted by batch, so gnuplot draws it
# as one line. The first pass learns which options vary per algo, the baseline's times and the
# best peers; the second also sums rows exact / checked per line over every cell.
: > "$base-exact.body"
awk -F'\t' -v OFS='\t' -v baseline="$baseline" -v algos="$algos" -v exact="$base-exact.body" '
    BEGIN { n = split(algos, A, " "); for (i = 1; i <= n; i++) rank[A[i]] = i }
    function parse(o,   n, i, m, kv, e) {   # "a=1,b=2" into K[1..m], V[1..m]
        delete K; delete V; n = split(o, kv, ","); m = 0
        for (i = 1; i <= n; i++) if ((e = index(kv[i], "=")) > 0) { K[++m] = substr(kv[i], 1, e - 1); V[m] = substr(kv[i], e + 1) }
        return m
    }
    function note(a, o,   n, i, g) {       # the options of one plain cell of algo a
        cells[a]++; n = parse(o)
        for (i = 1; i <= n; i++) { g = a SUBSEP K[i]; have[g]++
            if (!(g in val)) val[g] = V[i]; else if (val[g] != V[i]) vary[g] = 1 }
    }
    # a cell whose timer stopped at its cap before the spread settled (files before the flag: none)
    function noisy() { return ("noisy" in col) && $col["noisy"] == 1 }
    function name(a, variant, o,   n, i, s, g) {
        if (variant != "") return a ":" variant
        s = a; n = parse(o)
        for (i = 1; i <= n; i++) { g = a SUBSEP K[i]; if ((g in vary) || have[g] < cells[a]) s = s " " K[i] "=" V[i] }
        return s
    }
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; if (NR == 1) next
               print "series", "sortkey", "panel", $0, "rows_per_s", "speedup", "line", "peer",
                     "best_peer", "best_peer_us", "vs_peer"; next }
    { a = $col["algo"]; variant = $col["variant"]; peer = index(a, ".") > 0; t = $col["median_us"] + 0
      key = $col["sweep"] SUBSEP $col["dataset"] SUBSEP $col["vocab"] SUBSEP $col["batch"] SUBSEP $col["k"] SUBSEP $col["p"] }
    NR == FNR {
        if (variant == "") note(a, $col["options"])
        if ($col["status"] != "ok" || variant != "") next
        if (a == baseline) ref[key] = $col["median_us"]
        if (peer && t > 0 && (!(key in best) || t < best[key])) { best[key] = t; bestname[key] = a SUBSEP $col["options"] }
        next
    }
    { s = name(a, variant, $col["options"])
      if (!(s in ncell)) { lrank[s] = rank[a]; lalgo[s] = a; lopts[s] = $col["options"]; lpeer[s] = peer }
      ncell[s]++; nok[s] += $col["status"] == "ok"; checked[s] += $col["rows_checked"]; exact_rows[s] += $col["rows_exact"] }
    $col["status"] != "ok" { next }
    noisy() { unsettled++ }
    {
        panel = $col["dataset"] "/V=" $col["vocab"]
        bp = ""; bu = vp = "NaN"
        if (!peer && (key in best) && t > 0) { split(bestname[key], b, SUBSEP); bp = name(b[1], "", b[2]); bu = best[key]; vp = bu / t }
        print s "/" $col["mode"] "/" panel, rank[a], panel, $0, \
              (t > 0 ? $col["batch"] * 1e6 / t : "NaN"), \
              ((key in ref) && t > 0 && a != baseline ? ref[key] / t : "NaN"), s, peer, bp, bu, vp
    }
    END { for (s in ncell) print lrank[s], s, lalgo[s], lopts[s], lpeer[s], ncell[s], nok[s], checked[s], exact_rows[s] > exact
          if (unsettled) printf "figures.sh: %d of the cells drawn are noisy (the timer stopped at its cap before the spread settled; column noisy)\n", unsettled > "/dev/stderr" }' \
    "$base-all.tsv" "$base-all.tsv" |
    { IFS= read -r header; echo "$header"
      batch=$(awk -F'\t' -v h="$header" 'BEGIN { n = split(h, f, "\t"); for (i = 1; i <= n; i++) if (f[i] == "batch") print i }')
      LC_ALL=C sort -t $'\t' -k2,2n -k1,1 -k"$batch,$batch"n; } > "$base.tsv"
{ printf 'line\talgo\toptions\tpeer\tcells\tok_cells\trows_checked\trows_exact\n'
  LC_ALL=C sort -t $'\t' -k1,1n -k2,2 "$base-exact.body" | cut -f2-; } > "$base-exact.tsv"
rm -f "$base-exact.body"

if [ "$(wc -l < "$base.tsv")" -lt 2 ]; then
    echo "figures.sh: $res has no ok cells to draw ($(($(wc -l < "$base-all.tsv") - 1)) cells, none ok)" >&2
    exit 1
fi

# awk preamble over $base.tsv: ix[name] is a column's index, c[name] its value in this row.
rows='NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next } { for (n in ix) c[n] = $ix[n] }'
# The distinct values of column $1 over the rows where the awk condition $2 holds, one a line,
# in the file's order (modules in registry order, then peers).
values() { awk -F'\t' -v want="$1" "$rows"' ('"${2:-1}"') && !seen[c[want]]++ { print c[want] }' "$base.tsv"; }
words() { tr '\n' ' ' | sed 's/ $//'; }
# style[name]: the style number of each distinct value of column $1 where $2 holds, for
# common.gp's lt_of: modules 1, 2, ..., peers -1, -2, ...; numbered once over the whole file, so
# a line looks the same in every figure.
declare -A style
number() {
    local name n
    while IFS=$'\t' read -r name n; do style[$name]=$n; done < <(awk -F'\t' -v want="$1" "$rows"'
        ('"$2"') && !seen[c[want]]++ { print c[want] "\t" (c["peer"] == "1" ? -(++np) : ++nm) }' "$base.tsv")
}

info() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$base-info.tsv"; }
label="$(info device_name) ($(info backend)), commit $(info git_commit), $(basename "$res")"
plain='c["variant"] == ""'
panels=$(awk -F'\t' 'NR > 1 { split($3, a, "=") ; print a[2] "\t" $3 }' "$base.tsv" | sort -u -t $'\t' -k1,1n -k2,2 | cut -f2 | words)
modes=$(for m in topk topp topk_topp none; do values mode "$plain && c[\"mode\"] == \"$m\"" | head -1; done | words)
number line "$plain"
number series 1
kinds=(time)

# The number of cells of a figure's data file flagged noisy (0 when it has no such column): the
# figures ring them (plots/common.gp, `noisy_mark`).
noisy_cells() {
    awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "noisy") c = i; next }
                 c && $c == 1 { n++ } END { print n + 0 }' "$1"
}

# draw FIGURE.gp OUTBASE DATAFILE NAMES [var=value ...]: gnuplot with the common variables, the
# figure's, and the lines to draw: `lines` (NAMES, one a line, as quoted gnuplot words, since a
# name may hold spaces) and their `styles` (style[]).
draw() {
    local gp=$1 outbase=$2 data=$3 names=$4 n lines="" styles=""; shift 4
    while IFS= read -r n; do
        if [ -n "$n" ]; then lines+="${lines:+ }\"$n\""; styles+="${styles:+ }${style[$n]}"; fi
    done <<< "$names"
    local vars="dir='$top/plots'; datafile='$data'; outbase='$outbase'; label='$label'; formats='$formats'"
    vars="$vars; noisy_cells=$(noisy_cells "$data")"
    vars="$vars; lines='$lines'; styles='$styles'"
    for v in "$@"; do vars="$vars; $v"; done
    gnuplot -e "$vars" "$top/plots/$gp"
}
# Panels (panel|mode words) where column $1 has a value > 0 for a plain cell, except $2's.
combos() {
    awk -F'\t' -v y="$1" -v skip="${2:-}" "$rows"' c["variant"] == "" && c["algo"] != skip && c[y] != "NaN" &&
        c[y] + 0 > 0 && !seen[c["panel"] "|" c["mode"]]++ { printf "%s|%s ", c["panel"], c["mode"] }' "$base.tsv"
}
# grid FIGURE.gp KIND COLUMN NAMES [SKIP [var=value ...]]: a panel grid of COLUMN for the lines
# NAMES, drawn (and listed in kinds) when some plain cell other than SKIP's has a value.
grid() {
    local gp=$1 kind=$2 y=$3 names=$4 skip=${5:-}; shift $(($# < 5 ? $# : 5))
    local present
    present=$(combos "$y" "$skip")
    [ -n "$present" ] || return 0
    draw "$gp" "$base-$kind" "$base.tsv" "$names" "panels='$panels'" "modes='$modes'" "present='$present'" "$@"
    kinds+=("$kind")
}

draw time_vs_batch.gp "$base" "$base.tsv" "$(values series)"

# Module cells against the fastest peer of the same cell (empty but for its header when none).
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i
        print "module", "sweep", "dataset", "vocab", "panel", "mode", "batch", "k", "p", "module_us",
              "best_peer", "best_peer_us", "ratio"; next }
    $ix["vs_peer"] != "NaN" { print $ix["line"], $ix["sweep"], $ix["dataset"], $ix["vocab"], $ix["panel"], $ix["mode"],
              $ix["batch"], $ix["k"], $ix["p"], $ix["median_us"], $ix["best_peer"], $ix["best_peer_us"], $ix["vs_peer"] }' \
    "$base.tsv" > "$base-vs-peers.tsv"

if [ -n "$(combos rows_per_s)" ]; then
    grid throughput.gp throughput rows_per_s "$(values line "$plain")"
    grid speedup.gp speedup speedup "$(values line "$plain && c[\"algo\"] != \"$baseline\"")" "$baseline" "baseline='$baseline'"
    grid vs_peers.gp vs-peers vs_peer "$(values line "$plain && c[\"peer\"] == \"0\"")"
    grid memory.gp memory workspace_bytes "$(values line "$plain")"
fi

# Ablation bars: one group per sweep and shape (in order of appearance), a bar per variant
# (sorted by label), a gap between groups; rel = time / the group's first variant.
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
    $ix["variant"] != "" {
        g = $ix["sweep"] " " $ix["dataset"] " V=" $ix["vocab"] " B=" $ix["batch"] " k=" $ix["k"] " p=" sprintf("%g", $ix["p"])
        if (!(g in gi)) gi[g] = ++ng
        print gi[g], g, $ix["variant"], $ix["sweep"], $ix["algo"], $ix["options"], $ix["median_us"] / 1e3,
              $ix["q1_us"] / 1e3, $ix["q3_us"] / 1e3, $ix["hit_rate"]
    }' "$base.tsv" | sort -t $'\t' -k1,1n -k3,3 > "$base-ablation.tmp"
awk -F'\t' -v OFS='\t' 'BEGIN { print "x", "label", "group", "variant", "sweep", "algo", "options",
                                   "median_ms", "q1_ms", "q3_ms", "hit_rate", "rel" }
    NR == FNR { ng = $1; next }
    $1 != g { x += FNR > 1; g = $1; first = $7 }
    { print x++, (ng > 1 ? $1 ":" $3 : $3), $2, $3, $4, $5, $6, $7, $8, $9, $10, (first > 0 ? $7 / first : "NaN") }' \
    "$base-ablation.tmp" "$base-ablation.tmp" > "$base-ablation.tsv"
rm -f "$base-ablation.tmp"
if [ "$(wc -l < "$base-ablation.tsv")" -ge 2 ]; then
    draw ablation.gp "$base-ablation" "$base-ablation.tsv" "" \
        "nbars=$(tail -n 1 "$base-ablation.tsv" | cut -f1)+1" \
        "groups='$(tail -n +2 "$base-ablation.tsv" | cut -f3 | awk '!s[$0]++ { g[++n] = $0 }
            END { for (i = 1; i <= n; i++) printf "%s%s%s", (i > 1 ? ";  " : ""), (n > 1 ? i ": " : ""), g[i] }')'"
    kinds+=(ablation)
fi

# Hit rate: plain cells of algorithms that gather outliers, per algo/mode and dataset/vocab,
# means weighted by rows (batch).
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
    $ix["variant"] == "" && $ix["outliers"] + 0 > 0 {
        s = $ix["algo"] "/" $ix["mode"]; c = $ix["panel"]; g = s SUBSEP c; w = $ix["batch"]
        if (!(g in rows)) { order[++n] = g; ser[g] = s; cat[g] = c; v[g] = $ix["vocab"]
                            a[g] = $ix["algo"]; m[g] = $ix["mode"]; d[g] = $ix["dataset"]; k[g] = $ix["k"]; p[g] = $ix["p"] }
        rows[g] += w; hit[g] += w * $ix["hit_rate"]; nt[g] += w * $ix["outliers"]; st[g] += w * $ix["outlier_mass"]
    }
    END { for (i = 1; i <= n; i++) { g = order[i]
            print v[g], cat[g], ser[g], a[g], m[g], d[g], k[g], p[g], rows[g], hit[g] / rows[g], nt[g] / rows[g], st[g] / rows[g] } }' \
    "$base.tsv" | sort -t $'\t' -k1,1n -k2,2 -k3,3 > "$base-hitrate.body"
if [ -s "$base-hitrate.body" ]; then
    cats=$(cut -f2 "$base-hitrate.body" | awk '!s[$0]++' | words)
    hseries=$(cut -f3 "$base-hitrate.body" | sort -u | words)
    awk -F'\t' -v OFS='\t' -v cats="$cats" -v hs="$hseries" '
        BEGIN { nc = split(cats, C, " "); ns = split(hs, S, " "); for (i = 1; i <= nc; i++) ci[C[i]] = i - 1
                for (i = 1; i <= ns; i++) si[S[i]] = i
                print "x", "vocab", "panel", "series", "algo", "mode", "dataset", "k", "p", "rows", "hit_rate", "outliers", "outlier_mass" }
        { print ci[$2] + (si[$3] - (ns + 1) / 2) * 0.8 / ns, $0 }' "$base-hitrate.body" > "$base-hitrate.tsv"
    draw hitrate.gp "$base-hitrate" "$base-hitrate.tsv" "" "cats='$cats'" "hseries='$hseries'"
    kinds+=(hitrate)
else
    printf 'x\tvocab\tpanel\tseries\talgo\tmode\tdataset\tk\tp\trows\thit_rate\toutliers\toutlier_mass\n' > "$base-hitrate.tsv"
fi
rm -f "$base-hitrate.body"

echo "${kinds[@]}" > "$base-kinds.txt"
exts="{${formats// /,}}"
echo "figures.sh: drew ${kinds[*]} into $out ($stem.$exts and $stem-<kind>.$exts)"

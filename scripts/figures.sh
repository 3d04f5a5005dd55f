#!/usr/bin/env bash
# figures.sh RESULTS.h5 [OUTDIR] [X=axis] [BY=axis,...] [FACET=axis,...|none] — draw every
# figure kind that the results file's cells allow, as PNG and PDF (FIGURE_FORMATS="png pdf svg"
# adds SVG), labelled with the run's device, backend and git commit (README.md, "Figures"):
#   <stem>.png             median time (q1-q3 bars) against X, every ok plain cell
#   <stem>-throughput      rows/s against X                                (paper Figure 2)
#   <stem>-speedup         speed-up over $BASELINE (default naive_sort)    when it and others ran
#   <stem>-vs-peers        each module's speed-up over the fastest peer of the same cell
#                          (sweep, dataset, vocab, batch, k, p)            when both ran
#   <stem>-memory          workspace bytes against X, 0 B on a marked floor (paper Figure 4)
#   <stem>-peak-memory     peak device bytes against X                     when any was measured
#   <stem>-ablation        bars per variant of ablation sweeps             (paper Table 4)
#   <stem>-hitrate         truncation hit rate and outliers                (paper Table 1)
# The line figures share one layout (scripts/figures-layout.awk): x = X (batch, vocab, k or p;
# default batch, or the axis that varies when batch does not), a panel per value of the FACET
# axes (default: the sweep, dataset and vocabulary that vary, and a column per mode when X is
# batch or vocab), a series per line (algo, ":variant", and the options whose values differ
# among that algo's cells: "flashinfer.cake input=softmax") split by the BY axes and by every
# other axis that still varies inside a panel, so that a series is a function of x. The axes:
# sweep, dataset, vocab, batch, k, p, mode, algo. X, BY, FACET, BASELINE and FIGURE_FORMATS are
# read from the environment or from NAME=value arguments. Each line keeps the colour and point
# type of plots/palette.tsv in every figure (scripts/figures-style.awk); peers (an algo name
# with a '.', docs/PEERS.md) are dashed with open markers.
# OUTDIR (default plots/out) also receives the TSVs the figures read, all from `topkp export`:
# <stem>-all.tsv (every cell), <stem>.tsv (ok cells + series, panel, rows_per_s, speedup, line,
# peer, best_peer, best_peer_us, vs_peer), <stem>-lines.tsv (the ok plain cells with their x,
# panel and series: fx, frow, fcol, ri, ci, skey, level), <stem>-layout.txt and
# <stem>-styles.tsv (the layout and each series' colour, point and dash), <stem>-vs-peers.tsv
# (module cells against the best peer), <stem>-exact.tsv (rows exact / rows checked per line,
# every cell), <stem>-ablation.tsv, <stem>-hitrate.tsv, and <stem>-info.tsv (`topkp info`);
# <stem>-kinds.txt lists the kinds drawn. paper/build.sh reads the same files.
set -euo pipefail
pos=()
for a in "$@"; do
    case $a in
        X=*|BY=*|FACET=*|BASELINE=*|FIGURE_FORMATS=*) export "${a%%=*}=${a#*=}" ;;
        *) pos+=("$a") ;;
    esac
done
set -- "${pos[@]}"
res=${1:?usage: figures.sh RESULTS.h5 [OUTDIR] [X=batch|vocab|k|p] [BY=axis,...] [FACET=axis,...|none]}
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
                     "best_peer", "best_peer_us", "vs_peer", "cell"; next }
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
              ((key in ref) && t > 0 && a != baseline ? ref[key] / t : "NaN"), s, peer, bp, bu, vp, FNR - 1
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

# awk preamble over a TSV: ix[name] is a column's index, c[name] its value in this row.
rows='NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next } { for (_n in ix) c[_n] = $ix[_n] }'
words() { tr '\n' ' ' | sed 's/ $//'; }
# A root attribute of the file (the lines of `topkp info` before its first run record).
info() { awk -F'\t' -v k="$1" '/^run / { exit } $1 == k { print $2; exit }' "$base-info.tsv"; }
label="$(info device_name) ($(info backend)), commit $(info git_commit), $(basename "$res")"
kinds=()

# The layout of the line figures (scripts/figures-layout.awk) over the ok plain cells, and each
# series' style from plots/palette.tsv (scripts/figures-style.awk).
awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "variant") v = i; print; next } $v == ""' "$base.tsv" > "$base-plain.tsv"
layout_ok=1
if [ "$(wc -l < "$base-plain.tsv")" -ge 2 ]; then
    # the sweeps in declaration order: the first run record's first_rows ("sweep=row,...")
    awk -F'\t' '/^run / { n++ } n == 1 && $1 == "first_rows" { k = split($2, f, ","); for (i = 1; i <= k; i++) { sub(/=[0-9]*$/, "", f[i]); print f[i] }; exit }' \
        "$base-info.tsv" > "$base-sweeps.txt"
    # the sweep axes of harness/axes.c, as `topkp list` prints them: "name:number" or "name:name",
    # then ":default" when the axis has one (what an empty column of an older export means)
    axes=$("$bin" list --no-probe | awk '/^sweep axes:/ { f = 1; next } /^[a-z]/ { f = 0 }
        f && /^  [a-z]/ { d = match($0, /; default [^ ]+$/) ? ":" substr($0, RSTART + 10) : ""
                          print $1 ":" ($0 ~ /: (integers|numbers|an integer|a number)/ ? "number" : "name") d }' | tr '\n' ' ')
    awk -v X="${X:-}" -v BY="${BY:-}" -v FACET="${FACET:-}" -v axes="$axes" -v meta="$base-layout.txt" -v sweeps="$base-sweeps.txt" \
        -f "$top/scripts/figures-layout.awk" "$base-plain.tsv" > "$base-lines.tsv" || exit 2
    rm -f "$base-sweeps.txt"
    awk -f "$top/scripts/figures-style.awk" "$top/plots/palette.tsv" "$base-layout.txt" > "$base-styles.tsv"
else
    layout_ok=0
    : > "$base-layout.txt"; : > "$base-styles.tsv"; cp "$base-plain.tsv" "$base-lines.tsv"
fi
rm -f "$base-plain.tsv"
meta() { awk -F'\t' -v k="$1" '$1 == k { sub(/^[^\t]*\t/, ""); print; exit }' "$base-layout.txt"; }
declare -A colour point dash
while IFS=$'\t' read -r n c p d; do colour[$n]=$c; point[$n]=$p; dash[$n]=$d; done < "$base-styles.tsv"

# The series of the line figures where the awk condition $1 holds for some row, in drawing order.
series_of() {
    awk -F'\t' -v meta="$base-layout.txt" "$rows"' ('"${1:-1}"') { have[c["skey"]] = 1 }
        END { while ((getline l < meta) > 0) { split(l, f, "\t"); if (f[1] == "series" && (f[2] in have)) print f[2] } }' \
        "$base-lines.tsv"
}
# The number of cells of a figure's data file flagged noisy (0 when it has no such column): the
# figures ring them (plots/common.gp, `noisy_style`).
noisy_cells() {
    awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "noisy") c = i; next }
                 c && $c == 1 { n++ } END { print n + 0 }' "$1"
}
# A gnuplot string of a shell value: in single quotes, a quote doubled.
gq() { printf "'%s'" "${1//\'/\'\'}"; }

# draw FIGURE.gp OUTBASE DATAFILE NAMES [var=value ...]: gnuplot with the common variables, the
# figure's, and the lines to draw: `lines` (NAMES, one a line, as quoted gnuplot words, since a
# name may hold spaces) with their `colours`, `points` and `dashes`.
draw() {
    local gp=$1 outbase=$2 data=$3 names=$4 n lines="" cols="" pts="" dts=""; shift 4
    while IFS= read -r n; do
        [ -n "$n" ] || continue
        lines+="${lines:+ }\"${n//\"/\'}\""; cols+="${cols:+ }${colour[$n]:-#777777}"
        pts+="${pts:+ }${point[$n]:-7}"; dts+="${dts:+ }${dash[$n]:-1}"
    done <<< "$names"
    local vars="dir=$(gq "$top/plots"); datafile=$(gq "$data"); outbase=$(gq "$outbase"); label=$(gq "$label")"
    vars="$vars; formats=$(gq "$formats"); noisy_cells=$(noisy_cells "$data")"
    vars="$vars; lines=$(gq "$lines"); colours=$(gq "$cols"); points=$(gq "$pts"); dashes=$(gq "$dts")"
    for v in "$@"; do vars="$vars; $v"; done
    gnuplot -e "$vars" "$top/plots/$gp"
}
# Panels ("row|column" index words) where column $1 has a value for a row where $2 holds:
# > 0, or >= 0 when $3 is "zero" (memory: a zero sits on the floor).
present_of() {
    awk -F'\t' -v y="$1" -v zero="${3:-}" "$rows"' ('"${2:-1}"') && c[y] != "NaN" && c[y] != "" &&
        (c[y] + 0 > 0 || (zero != "" && c[y] + 0 == 0)) && !seen[c["ri"] "|" c["ci"]]++ { printf "%s|%s ", c["ri"], c["ci"] }' \
        "$base-lines.tsv"
}
# "lo hi": the decades of the smallest and largest value > 0 of column $1 where $2 holds.
decades_of() {
    awk -F'\t' -v y="$1" "$rows"' ('"${2:-1}"') && c[y] + 0 > 0 { v = c[y] + 0; if (!n++ || v < lo) lo = v; if (v > hi) hi = v }
        END { if (!n) { lo = hi = 1 }; l = int(log(lo) / log(10) + 1e-9); if (lo < 1) l--; h = int(log(hi) / log(10) - 1e-9) + 1
              print l, (h > l ? h : l + 1) }' "$base-lines.tsv"
}
# grid FIGURE.gp KIND COLUMN CONDITION [zero|-] [var=value ...]: a panel grid of COLUMN for the
# series with a row where CONDITION holds, drawn (and listed in kinds) when one has a value;
# with "zero", zero values are drawn on a "0 B" floor a decade below the smallest value.
grid() {
    local gp=$1 kind=$2 y=$3 cond=$4 zero=${5:--}; shift $(($# < 5 ? $# : 5))
    local present names extra=()
    present=$(present_of "$y" "$cond" "${zero#-}")
    names=$(series_of "$cond")
    [ -n "$present" ] && [ -n "$names" ] || return 0
    if [ "$zero" = zero ]; then
        local d
        d=$(decades_of "$y" "$cond")
        extra=("ydecades='$d'" "floor=10.0**(${d% *} - 1)")
    fi
    local note
    note=$(meta dropped)
    draw "$gp" "$base${kind:+-$kind}" "$base-lines.tsv" "$names" "present='$present'" \
        "frows=$(gq "$(meta rows)")" "fcols=$(gq "$(meta cols)")" "xlab=$(gq "$(meta xlab)")" \
        "xlog=$(meta xlog)" "nx=$(meta nx)" "xvals='$(meta xvals)'" "fixed=$(gq "$(fixed_line)")" "note=$(gq "$note")" \
        "${extra[@]}" "$@"
    kinds+=("${kind:-time}")
}
# The subtitle of the line figures: what every cell drawn shares, and how the series split.
fixed_line() {
    local f b
    f=$(meta fixed); b=$(meta by)
    printf '%s%s%s' "${f:+every cell: $f}" "${f:+${b:+;  }}" "${b:+series split by ${b// /, }}"
}

if [ "$layout_ok" = 1 ]; then
    grid time_vs_batch.gp "" median_us 1
fi

# Module cells against the fastest peer of the same cell (empty but for its header when none).
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i
        print "module", "sweep", "dataset", "vocab", "panel", "mode", "batch", "k", "p", "module_us",
              "best_peer", "best_peer_us", "ratio"; next }
    $ix["vs_peer"] != "NaN" { print $ix["line"], $ix["sweep"], $ix["dataset"], $ix["vocab"], $ix["panel"], $ix["mode"],
              $ix["batch"], $ix["k"], $ix["p"], $ix["median_us"], $ix["best_peer"], $ix["best_peer_us"], $ix["vs_peer"] }' \
    "$base.tsv" > "$base-vs-peers.tsv"

if [ "$layout_ok" = 1 ]; then
    grid throughput.gp throughput rows_per_s 1
    grid speedup.gp speedup speedup "c[\"algo\"] != \"$baseline\"" - "baseline=$(gq "$baseline")"
    grid vs_peers.gp vs-peers vs_peer 'c["peer"] == "0"'
    grid memory.gp memory workspace_bytes 1 zero
    if [ -n "$(present_of peak_device_bytes 1)" ]; then
        grid peak_memory.gp peak-memory peak_device_bytes 1 zero
    fi
fi

# Ablation bars (scripts/figures-ablation.awk): a panel per sweep and shape, a bar per variant in
# declaration order (the run record's ablation:<sweep>, else the order of the rows), each
# labelled with its time over the baseline variant's (`baseline = ...`, else the first).
awk -F'\t' '/^run / { run = $0; sub(/^run /, "", run) }
            $1 ~ /^ablation:/ && run != "" { s = substr($1, 10); if (!(s in r) || run + 0 >= r[s]) { r[s] = run + 0; v[s] = $2 } }
            END { for (s in v) print s "\t" v[s] }' "$base-info.tsv" > "$base-ablation.order"
awk -v orders="$base-ablation.order" -f "$top/scripts/figures-ablation.awk" "$base.tsv" > "$base-ablation.tsv"
rm -f "$base-ablation.order"
if [ "$(wc -l < "$base-ablation.tsv")" -ge 2 ]; then
    names=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "algo") a = i; next } !s[$a]++ { print $a }' "$base-ablation.tsv")
    while IFS=$'\t' read -r n c p d; do colour[$n]=$c; point[$n]=$p; dash[$n]=$d; done < <(
        while IFS= read -r n; do printf 'series\t%s\t%s\t1\t1\n' "$n" "$n"; done <<< "$names" |
        awk -f "$top/scripts/figures-style.awk" "$top/plots/palette.tsv" -)
    # per group: its title (and baseline), bars, log axis; the key: each sweep's variants and
    # what they set, then what they all share
    ab() { awk -F'\t' "$rows $1" "$base-ablation.tsv"; }
    # a group's title: the words of its name that differ among the groups; the others once
    gwords='!s[c["gi"]]++ { g[++n] = c["group"]; b[n] = c["baseline"] }
        END { m = split(g[1], w0, " "); for (j = 1; j <= m; j++) same[j] = 1
              for (i = 2; i <= n; i++) { split(g[i], w, " "); for (j = 1; j <= m; j++) if (w[j] != w0[j]) same[j] = 0 }'
    gtitles=$(ab "$gwords"' for (i = 1; i <= n; i++) { split(g[i], w, " "); t = ""
                for (j = 1; j <= m; j++) if (!same[j] || n == 1) t = t (t == "" ? "" : " ") w[j]
                printf "%s\"%s  (baseline %s)\"", (i > 1 ? " " : ""), t, b[i] } }')
    gcommon=$(ab "$gwords"' if (n > 1) { t = ""; for (j = 1; j <= m; j++) if (same[j]) t = t (t == "" ? "" : " ") w0[j]
                printf "every bar: %s", t } }')
    gbars=$(ab '{ b[c["gi"]]++; if (c["gi"] > ng) ng = c["gi"] } END { for (g = 1; g <= ng; g++) printf "%s%d", (g > 1 ? " " : ""), b[g] }')
    glog=$(ab '!s[c["gi"]]++ { printf "%s%d", (n++ ? " " : ""), c["ylog"] }')
    keylines=$(ab '{ if (!(c["sweep"] in ns)) { ns[c["sweep"]] = 1; sw[++n] = c["sweep"]; com[n] = c["common"] }
                     if (!seen[c["sweep"], c["variant"]]++) { k[n, ++nk[n]] = c["variant"] ":  " c["key"] } }
        END { for (i = 1; i <= n; i++) { pre = n > 1 ? sw[i] " " : ""
                for (j = 1; j <= nk[i]; j++) printf "%s\"%s%s\"", (out++ ? " " : ""), pre, k[i, j]
                if (com[i] != "") printf " \"%sall variants:  %s\"", pre, com[i] } }')
    bargroup=$(ab '{ printf "%s%s", (NR > 2 ? " " : ""), c["gi"] }')
    barx=$(ab '{ printf "%s%s", (NR > 2 ? " " : ""), c["x"] }')
    barlabels=$(ab '{ printf "%s\"%s\"", (NR > 2 ? " " : ""), c["variant"] }')
    draw ablation.gp "$base-ablation" "$base-ablation.tsv" "$names" "gtitles=$(gq "$gtitles")" \
        "gbars='$gbars'" "glog='$glog'" "keylines=$(gq "$keylines")" "bargroup='$bargroup'" \
        "barx='$barx'" "barlabels=$(gq "$barlabels")" "gcommon=$(gq "$gcommon")"
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
    # each algo/mode bar in its algo's colour, lighter for the earlier modes
    while IFS=$'\t' read -r n c p d; do colour[$n]=$c; point[$n]=$p; dash[$n]=$d; done < <(
        for s in $hseries; do echo "$s"; done | awk -F/ -v OFS='\t' '{ a[NR] = $1; s[NR] = $0; if (!($1 in n)) n[$1] = 0; i[NR] = ++n[$1] }
            END { for (j = 1; j <= NR; j++) print "series", s[j], a[j], i[j], n[a[j]] }' |
        awk -f "$top/scripts/figures-style.awk" "$top/plots/palette.tsv" -)
    draw hitrate.gp "$base-hitrate" "$base-hitrate.tsv" "$(for s in $hseries; do echo "$s"; done)" \
        "cats='$cats'" "hseries='$hseries'"
    kinds+=(hitrate)
else
    printf 'x\tvocab\tpanel\tseries\talgo\tmode\tdataset\tk\tp\trows\thit_rate\toutliers\toutlier_mass\n' > "$base-hitrate.tsv"
fi
rm -f "$base-hitrate.body"

echo "${kinds[@]}" > "$base-kinds.txt"
exts="{${formats// /,}}"
echo "figures.sh: drew ${kinds[*]} into $out ($stem.$exts and $stem-<kind>.$exts)"

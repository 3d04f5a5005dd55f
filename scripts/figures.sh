#!/usr/bin/env bash
# figures.sh RESULTS.h5 [OUTDIR] [X=axis] [BY=axis,...] [FACET=axis,...|none] — draw every
# figure kind that the results file's cells allow, as PNG and PDF (FIGURE_FORMATS="png pdf svg"
# adds SVG), labelled with the run's device, backend and git commit (docs/FIGURES.md, "Figures"):
#   <stem>.png             median time (q1-q3 bars) against X, every ok plain cell
#   <stem>-throughput      rows/s against X                                (paper Figure 2)
#   <stem>-speedup         speed-up over $BASELINE (default naive_sort)    when it and others ran
#   <stem>-vs-peers        like with like: each module's speed-up over the fastest peer of the
#                          same cell (sweep, dataset, vocab, batch, k, p) that writes the same
#                          output (mask or draws) and takes logits in      when both ran
#   <stem>-softmax         a peer's softmax as its own cost (input=softmax less input=probs)
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
# peer, best_peer, best_peer_us, vs_peer, input, like_set_peer, like_set_us, vs_like_set,
# like_sample_peer, like_sample_us, vs_like_sample, softmax_us), <stem>-lines.tsv (the ok plain
# cells with their x, panel and series: fx, frow, fcol, ri, ci, skey, level), <stem>-layout.txt
# and <stem>-styles.tsv (the layout and each series' colour, point, dash, width, key title and
# lighter colour), <stem>-vs-peers.tsv (module cells against the best peer of any kind),
# <stem>-vs-peers-like.tsv (module cells against the best logits-in peer of each output they
# write: module, output, peer_class, best_like_peer, best_like_peer_us, ratio),
# <stem>-softmax.tsv (peers timed with input=softmax and input=probs: softmax_us,
# softmax_share), <stem>-like-lines.tsv (the vs-peers figure's data), <stem>-exact.tsv (rows
# exact / rows checked per line, every cell), <stem>-ablation.tsv (with paper_rel: the paper's
# time of the run over its run A, from paper/published.tsv), <stem>-hitrate.tsv, and
# <stem>-info.tsv (`topkp info`);
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
listing=$("$bin" list --no-probe)
registry=$(awk '/^algorithms:/ { f = 1; next } /^[a-z]/ { f = 0 } f && /^  [a-z]/ { print $1 }' <<< "$listing")
# What each module and peer of `topkp list` outputs and takes in, for the like-with-like
# comparison: "algo<TAB>outputs (set, sample or both)<TAB>input" where input is the default of
# its input option (probs: a softmax done outside the timed region), else logits.
classes=$(awk -v OFS='\t' '/^(algorithms|peers):/ { f = 1; next } /^[a-z]/ { f = 0 }
    function flush() { if (a != "") print a, o, i }
    f && /^  [a-z]/ { flush(); a = $1; o = ""; i = "logits"; next }
    f && a != "" && match($0, /outputs=[a-z,]+/) { o = substr($0, RSTART + 8, RLENGTH - 8) }
    f && a != "" && /--set input=/ && match($0, /\(default [a-z]+\)/) { i = substr($0, RSTART + 9, RLENGTH - 10) }
    END { flush() }' <<< "$listing")
present=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "algo") c = i; next } !s[$c]++ { print $c }' "$base-all.tsv")
algos=$( { grep -Fxf <(echo "$present") <<< "$registry" || true; grep -vFxf <(echo "$registry") <<< "$present" || true; } |
         awk '!/\./ { print; next } { p[++n] = $0 } END { for (i = 1; i <= n; i++) print p[i] }' | tr '\n' ' ')

# ok cells, with a series name (lines), a panel name (dataset/V=vocab), throughput, the speed-up
# over the baseline's cell of the same sweep, dataset, shape and mode, and for a module the
# fastest ok peer of that cell; each series contiguous and sorted by batch, so gnuplot draws it
# as one line. Like with like: for each output the module writes (set: a mask, sample: draws;
# `topkp list`), the fastest ok peer of the cell with that output that takes logits in (input
# = probs starts after a softmax outside its timed region: no such peer is a logits-in one);
# and for a peer timed with input=softmax beside its input=probs twin (same other options),
# the softmax as its own cost, the difference of their medians. The first pass learns which
# options vary per algo, the baseline's times and the best peers; the second also sums rows
# exact / checked per line over every cell.
: > "$base-exact.body"
awk -F'\t' -v OFS='\t' -v baseline="$baseline" -v algos="$algos" -v exact="$base-exact.body" -v classes="$classes" '
    BEGIN { n = split(algos, A, " "); for (i = 1; i <= n; i++) rank[A[i]] = i
            n = split(classes, C, "\n"); for (i = 1; i <= n; i++) { split(C[i], f, "\t"); outs[f[1]] = f[2]; input0[f[1]] = f[3] } }
    function writes(a, o) { return index("," outs[a] ",", "," o ",") > 0 }
    # what peer a takes in with options o: "probs", "softmax" (logits, a softmax timed with it) or
    # "logits"; and o without its input option
    function input_of(a, o,   w) { w = "," o ","; return match(w, /,input=[a-z]+,/) ? substr(w, RSTART + 7, RLENGTH - 8) : (a in input0) ? input0[a] : "logits" }
    function sans_input(o) { o = "," o ","; sub(/,input=[a-z]+,/, ",", o); gsub(/^,|,$/, "", o); return o }
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
                     "best_peer", "best_peer_us", "vs_peer", "cell", "input", "like_set_peer", "like_set_us", "vs_like_set",
                     "like_sample_peer", "like_sample_us", "vs_like_sample", "softmax_us"; next }
    { a = $col["algo"]; variant = $col["variant"]; peer = index(a, ".") > 0; t = $col["median_us"] + 0
      floor = a ~ /^floor\./ # a memory floor (docs/PEERS.md): a peer, never the best peer of a module
      key = $col["sweep"] SUBSEP $col["dataset"] SUBSEP $col["vocab"] SUBSEP $col["batch"] SUBSEP $col["k"] SUBSEP $col["p"] }
    NR == FNR {
        if (variant == "") note(a, $col["options"])
        if ($col["status"] != "ok" || variant != "") next
        if (a == baseline) ref[key] = $col["median_us"]
        if (peer && !floor && t > 0 && (!(key in best) || t < best[key])) { best[key] = t; bestname[key] = a SUBSEP $col["options"] }
        if (peer && !floor && t > 0) { inp = input_of(a, $col["options"]); twin[key, a, sans_input($col["options"]), inp] = t
            for (j = 1; j <= 2; j++) { o = j == 1 ? "set" : "sample"; g = key SUBSEP o
                if (inp != "probs" && writes(a, o) && (!(g in like) || t < like[g])) { like[g] = t; likename[g] = a SUBSEP $col["options"] } } }
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
        inp = peer ? input_of(a, $col["options"]) : "logits"; likes = ""
        for (j = 1; j <= 2; j++) { o = j == 1 ? "set" : "sample"; g = key SUBSEP o; lp = ""; lu = lv = "NaN"
            if (!peer && writes(a, o) && (g in like) && t > 0) { split(likename[g], b, SUBSEP); lp = name(b[1], "", b[2]); lu = like[g]; lv = lu / t }
            likes = likes OFS lp OFS lu OFS lv }
        tw = key SUBSEP a SUBSEP sans_input($col["options"]) SUBSEP "probs"
        sm = peer && inp == "softmax" && (tw in twin) ? t - twin[tw] : "NaN"
        print s "/" $col["mode"] "/" panel, rank[a], panel, $0, \
              (t > 0 ? $col["batch"] * 1e6 / t : "NaN"), \
              ((key in ref) && t > 0 && a != baseline ? ref[key] / t : "NaN"), s, peer, bp, bu, vp, FNR - 1, inp likes, sm
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
    # the sweep axes of harness/plan/axes.c, as `topkp list` prints them: "name:number" or "name:name",
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
declare -A colour point dash width title light
# style NAME COLOUR POINT DASH [WIDTH TITLE LIGHT]: a series' style (a line of figures-style.awk)
style() { colour[$1]=$2; point[$1]=$3; dash[$1]=$4; width[$1]=${5:-1.5}; title[$1]=${6:-$1}; light[$1]=${7:-$2}; }
while IFS=$'\t' read -r n c p d w t l; do style "$n" "$c" "$p" "$d" "$w" "$t" "$l"; done < "$base-styles.tsv"

# The line figures read $lines_tsv: the ok plain cells with their place (figures-layout.awk),
# or a file derived from them (the like-with-like comparison: series "<series> [mask]" and
# "<series> [sampler]").
lines_tsv=$base-lines.tsv
# The series of the line figures where the awk condition $1 holds for some row, in drawing
# order (a derived series after the one it comes from, [mask] before [sampler]).
series_of() {
    awk -F'\t' -v meta="$base-layout.txt" "$rows"' ('"${1:-1}"') { have[c["skey"]] = 1 }
        END { while ((getline l < meta) > 0) { split(l, f, "\t"); if (f[1] != "series") continue
                  if (f[2] in have) print f[2]; for (j = 1; j <= 2; j++) if ((f[2] (j == 1 ? " [mask]" : " [sampler]")) in have) print f[2] (j == 1 ? " [mask]" : " [sampler]") } }' \
        "$lines_tsv"
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
# name may hold spaces) with their `colours`, `points`, `dashes`, `widths` and key `titles`.
# With emphasis=1 (the paper's Figure 2) a line of the palette's own width (the paper's kernel)
# stands out: when one is drawn, the others are lighter and thinner.
draw() {
    local gp=$1 outbase=$2 data=$3 names=$4 n lines="" cols="" pts="" dts="" wds="" tts="" heavy=0; shift 4
    if [ "${emphasis:-0}" = 1 ]; then
        while IFS= read -r n; do [ "${width[$n]:-1.5}" = 1.5 ] || heavy=1; done <<< "$names"
    fi
    while IFS= read -r n; do
        [ -n "$n" ] || continue
        local c=${colour[$n]:-#777777} w=${width[$n]:-1.5} t=${title[$n]:-$n}
        if [ "$heavy" = 1 ] && [ "$w" = 1.5 ]; then c=${light[$n]:-$c}; w=1; fi
        lines+="${lines:+ }\"${n//\"/\'}\""; cols+="${cols:+ }$c"; wds+="${wds:+ }$w"
        pts+="${pts:+ }${point[$n]:-7}"; dts+="${dts:+ }${dash[$n]:-1}"; tts+="${tts:+ }\"${t//\"/\'}\""
    done <<< "$names"
    local vars="dir=$(gq "$top/plots"); datafile=$(gq "$data"); outbase=$(gq "$outbase"); label=$(gq "$label")"
    vars="$vars; formats=$(gq "$formats"); noisy_cells=$(noisy_cells "$data")"
    vars="$vars; lines=$(gq "$lines"); colours=$(gq "$cols"); points=$(gq "$pts"); dashes=$(gq "$dts")"
    vars="$vars; widths=$(gq "$wds"); titles=$(gq "$tts")"
    for v in "$@"; do vars="$vars; $v"; done
    gnuplot -e "$vars" "$top/plots/$gp"
}
# Panels ("row|column" index words) where column $1 has a value for a row where $2 holds:
# > 0, or >= 0 when $3 is "zero" (memory: a zero sits on the floor).
present_of() {
    awk -F'\t' -v y="$1" -v zero="${3:-}" "$rows"' ('"${2:-1}"') && c[y] != "NaN" && c[y] != "" &&
        (c[y] + 0 > 0 || (zero != "" && c[y] + 0 == 0)) && !seen[c["ri"] "|" c["ci"]]++ { printf "%s|%s ", c["ri"], c["ci"] }' \
        "$lines_tsv"
}
# Each panel's y range, for the panels of a row to share one: "lo hi" words per panel (row by
# row, nrows x ncols of the layout; "0 0" for an empty one) over the values > 0 of columns
# $1 (and the error columns $3, $4) where $2 holds.
ranges_of() {
    awk -F'\t' -v y="$1" -v e1="${3:-}" -v e2="${4:-}" -v nr="$(meta nrows)" -v nc="$(meta ncols)" "$rows"' ('"${2:-1}"') {
            p = c["ri"] "|" c["ci"]; n = split(y " " e1 " " e2, Y, " ")
            for (j = 1; j <= n; j++) { v = c[Y[j]]; if (v == "NaN" || v == "" || v + 0 <= 0) continue
                v += 0; if (!(p in lo) || v < lo[p]) lo[p] = v; if (!(p in hi) || v > hi[p]) hi[p] = v } }
        END { for (r = 1; r <= nr; r++) for (k = 1; k <= nc; k++) { p = r "|" k
                  printf "%s%s %s", (r + k > 2 ? " " : ""), (p in lo ? lo[p] : 0), (p in hi ? hi[p] : 0) } }' "$lines_tsv"
}
# "lo hi": the decades of the smallest and largest value > 0 of column $1 where $2 holds.
decades_of() {
    awk -F'\t' -v y="$1" "$rows"' ('"${2:-1}"') && c[y] + 0 > 0 { v = c[y] + 0; if (!n++ || v < lo) lo = v; if (v > hi) hi = v }
        END { if (!n) { lo = hi = 1 }; l = int(log(lo) / log(10) + 1e-9); if (lo < 1) l--; h = int(log(hi) / log(10) - 1e-9) + 1
              print l, (h > l ? h : l + 1) }' "$lines_tsv"
}
# grid FIGURE.gp KIND COLUMN CONDITION [zero|-] [var=value ...]: a panel grid of COLUMN for the
# series with a row where CONDITION holds, drawn (and listed in kinds) when one has a value;
# with "zero", zero values are drawn on a "0 B" floor a decade below the smallest value. The
# panels of a row share the y range of their values (and of the columns of $yextra: the time
# figure's q1/q3 bars).
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
    draw "$gp" "$base${kind:+-$kind}" "$lines_tsv" "$names" "present='$present'" "pranges='$(ranges_of "$y" "$cond" ${yextra:-})'" \
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
    yextra="q1_us q3_us" grid time_vs_batch.gp "" median_us 1
fi

# Module cells against the fastest peer of the same cell (empty but for its header when none).
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i
        print "module", "sweep", "dataset", "vocab", "panel", "mode", "batch", "k", "p", "module_us",
              "best_peer", "best_peer_us", "ratio"; next }
    $ix["vs_peer"] != "NaN" { print $ix["line"], $ix["sweep"], $ix["dataset"], $ix["vocab"], $ix["panel"], $ix["mode"],
              $ix["batch"], $ix["k"], $ix["p"], $ix["median_us"], $ix["best_peer"], $ix["best_peer_us"], $ix["vs_peer"] }' \
    "$base.tsv" > "$base-vs-peers.tsv"
# Like with like: each module cell against the fastest logits-in peer of the same output (a row
# per output the module writes: mask against masks, sample against samplers), and each peer's
# softmax as its own cost (its input=softmax median less its input=probs twin's).
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i
        print "module", "output", "peer_class", "sweep", "dataset", "vocab", "panel", "mode", "batch", "k", "p",
              "module_us", "best_like_peer", "best_like_peer_us", "ratio"; next }
    $ix["peer"] == 0 && $ix["variant"] == "" { for (j = 1; j <= 2; j++) { o = j == 1 ? "set" : "sample"
        if ($ix["vs_like_" o] == "NaN") continue
        print $ix["line"], o, (o == "set" ? "mask" : "sampler") ", logits in", $ix["sweep"], $ix["dataset"], $ix["vocab"], $ix["panel"],
              $ix["mode"], $ix["batch"], $ix["k"], $ix["p"], $ix["median_us"], $ix["like_" o "_peer"], $ix["like_" o "_us"], $ix["vs_like_" o] } }' \
    "$base.tsv" > "$base-vs-peers-like.tsv"
awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i
        print "peer", "options", "sweep", "dataset", "vocab", "panel", "mode", "batch", "k", "p",
              "with_softmax_us", "probs_us", "softmax_us", "softmax_share"; next }
    $ix["softmax_us"] != "NaN" { t = $ix["median_us"]; sm = $ix["softmax_us"]
        print $ix["algo"], $ix["options"], $ix["sweep"], $ix["dataset"], $ix["vocab"], $ix["panel"], $ix["mode"],
              $ix["batch"], $ix["k"], $ix["p"], t, t - sm, sm, sm / t }' "$base.tsv" > "$base-softmax.tsv"

if [ "$layout_ok" = 1 ]; then
    emphasis=1 grid throughput.gp throughput rows_per_s 1
    grid speedup.gp speedup speedup "c[\"algo\"] != \"$baseline\"" - "baseline=$(gq "$baseline")"
    # like with like (<stem>-vs-peers-like.tsv): a series per module and output it writes, its
    # speed-up over the fastest logits-in peer of that output, "<series> [mask]" in the module's
    # style, "<series> [sampler]" with open points
    awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; print "lsort", $0, "vs_like"; next }
        $ix["peer"] == 0 { for (j = 1; j <= 2; j++) { o = j == 1 ? "set" : "sample"; v = $ix["vs_like_" o]
            if (v == "NaN" || v == "") continue
            r = $0; $ix["skey"] = $ix["skey"] (j == 1 ? " [mask]" : " [sampler]")
            print $ix["ri"] "|" $ix["ci"] "|" $ix["skey"], $0, v; $0 = r } }' "$base-lines.tsv" |
        { IFS= read -r header; echo "${header#*$'\t'}"; LC_ALL=C sort -t $'\t' -s -k1,1 | cut -f2-; } > "$base-like-lines.tsv"
    while IFS=$'\t' read -r n c p d w t l; do
        style "$n [mask]" "$c" "$p" "$d" "$w" "$t [mask]" "$l"
        style "$n [sampler]" "$c" "$(( p % 2 ? p - 1 : p ))" "$d" "$w" "$t [sampler]" "$l"
    done < "$base-styles.tsv"
    lines_tsv=$base-like-lines.tsv
    grid vs_peers.gp vs-peers vs_like 1
    lines_tsv=$base-lines.tsv
    grid softmax.gp softmax softmax_us 'c["softmax_us"] != "NaN"'
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
awk -v orders="$base-ablation.order" -v published="${PUBLISHED:-$top/paper/published.tsv}" \
    -f "$top/scripts/figures-ablation.awk" "$base.tsv" > "$base-ablation.tsv"
rm -f "$base-ablation.order"
if [ "$(wc -l < "$base-ablation.tsv")" -ge 2 ]; then
    names=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "algo") a = i; next } !s[$a]++ { print $a }' "$base-ablation.tsv")
    while IFS=$'\t' read -r n c p d w t l; do style "$n" "$c" "$p" "$d" "$w" "$t" "$l"; done < <(
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
    gbase=$(ab '!s[c["gi"]]++ { printf "%s%s", (n++ ? " " : ""), c["baseline"] }')
    gbars=$(ab '{ b[c["gi"]]++; if (c["gi"] > ng) ng = c["gi"] } END { for (g = 1; g <= ng; g++) printf "%s%d", (g > 1 ? " " : ""), b[g] }')
    glog=$(ab '!s[c["gi"]]++ { printf "%s%d", (n++ ? " " : ""), c["ylog"] }')
    # 1 for a group with the paper's times (Table 4): its bars are ratios to the baseline, ours
    # beside the paper's
    gpaper=$(ab '{ if (c["gi"] > ng) ng = c["gi"]; if (c["paper_rel"] != "NaN" && c["paper_rel"] != "") p[c["gi"]] = 1 }
        END { for (g = 1; g <= ng; g++) printf "%s%d", (g > 1 ? " " : ""), (g in p) }')
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
        "barx='$barx'" "barlabels=$(gq "$barlabels")" "gcommon=$(gq "$gcommon")" "gpaper='$gpaper'" "gbase=$(gq "$gbase")" \
        "device=$(gq "$(info device_name)")"
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
    while IFS=$'\t' read -r n c p d w t l; do style "$n" "$c" "$p" "$d" "$w" "$t" "$l"; done < <(
        for s in $hseries; do echo "$s"; done | awk -F/ -v OFS='\t' '{ a[NR] = $1; s[NR] = $0; if (!($1 in n)) n[$1] = 0; i[NR] = ++n[$1] }
            END { for (j = 1; j <= NR; j++) print "series", s[j], a[j], i[j], n[a[j]] }' |
        awk -f "$top/scripts/figures-style.awk" "$top/plots/palette.tsv" -)
    draw hitrate.gp "$base-hitrate" "$base-hitrate.tsv" "$(for s in $hseries; do echo "$s"; done)" \
        "cats='$cats'" "hseries='$hseries'" "has_st=$(awk -F'\t' '$12 + 0 > 0 { n = 1 } END { print n + 0 }' "$base-hitrate.body")" \
        "ntrange='$(awk -F'\t' '$11 + 0 > 0 { if (lo == "" || $11 + 0 < lo + 0) lo = $11; if ($11 + 0 > hi + 0) hi = $11 }
                                 END { print lo, hi }' "$base-hitrate.body")'"
    kinds+=(hitrate)
else
    printf 'x\tvocab\tpanel\tseries\talgo\tmode\tdataset\tk\tp\trows\thit_rate\toutliers\toutlier_mass\n' > "$base-hitrate.tsv"
fi
rm -f "$base-hitrate.body"

echo "${kinds[@]}" > "$base-kinds.txt"
exts="{${formats// /,}}"
echo "figures.sh: drew ${kinds[*]} into $out ($stem.$exts and $stem-<kind>.$exts)"

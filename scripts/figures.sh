#!/usr/bin/env bash
# figures.sh RESULTS.h5 [OUTDIR] — draw every figure kind that the results file's cells allow,
# as PNG and PDF, labelled with the run's device, backend and git commit:
#   <stem>.png             median time against batch, every ok cell (what `make run` promises)
#   <stem>-throughput      rows/s against batch per vocabulary and mode   (paper Figure 2)
#   <stem>-speedup         speed-up over $BASELINE (default naive_sort)    when it and others ran
#   <stem>-memory          workspace bytes against batch                   (paper Figure 4)
#   <stem>-ablation        bars per variant of ablation sweeps             (paper Table 4)
#   <stem>-hitrate         truncation hit rate and outliers                (paper Table 1)
# OUTDIR (default plots/out) also receives the TSVs the figures read, all from `topkp export`:
# <stem>-all.tsv (every cell), <stem>.tsv (ok cells + series, panel, rows_per_s, speedup),
# <stem>-ablation.tsv, <stem>-hitrate.tsv, and <stem>-info.tsv (`topkp info`); <stem>-kinds.txt
# lists the kinds drawn. paper/build.sh reads the same files.
set -euo pipefail
res=${1:?usage: figures.sh RESULTS.h5 [OUTDIR]}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TOPKP:-$top/build/topkp}
baseline=${BASELINE:-naive_sort}
out=${2:-$top/plots/out}
stem=$(basename "$res" .h5)
base=$out/$stem
mkdir -p "$out"

"$bin" export "$res" > "$base-all.tsv"
"$bin" info "$res" > "$base-info.tsv"

# ok cells, with a series name (lines), a panel name (dataset/V=vocab), throughput and the
# speed-up over the baseline's cell of the same sweep, dataset, shape and mode; each series
# contiguous and sorted by batch, so gnuplot draws it as one line.
awk -F'\t' -v OFS='\t' -v baseline="$baseline" '
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; if (NR == 1) next
               print "series", "sortkey", "panel", $0, "rows_per_s", "speedup"; next }
    $col["status"] != "ok" { next }
    { key = $col["sweep"] SUBSEP $col["dataset"] SUBSEP $col["vocab"] SUBSEP $col["batch"] \
            SUBSEP $col["k"] SUBSEP $col["p"] }
    NR == FNR { if ($col["algo"] == baseline && $col["variant"] == "") ref[key] = $col["median_us"]; next }
    {
        s = $col["algo"] ($col["variant"] != "" ? ":" $col["variant"] : "")
        panel = $col["dataset"] "/V=" $col["vocab"]
        t = $col["median_us"] + 0
        print s "/" $col["mode"] "/" panel, $col["batch"], panel, $0, \
              (t > 0 ? $col["batch"] * 1e6 / t : "NaN"), \
              ((key in ref) && t > 0 && $col["algo"] != baseline ? ref[key] / t : "NaN")
    }' "$base-all.tsv" "$base-all.tsv" |
    { IFS= read -r header; echo "$header"; sort -t $'\t' -k1,1 -k2,2n; } > "$base.tsv"

if [ "$(wc -l < "$base.tsv")" -lt 2 ]; then
    echo "figures.sh: $res has no ok cells to draw ($(($(wc -l < "$base-all.tsv") - 1)) cells, none ok)" >&2
    exit 1
fi

# Print the distinct values of column $1 over the rows of $base.tsv where the awk condition $2
# holds (c["name"] is a column's value), in order of first appearance.
values() {
    awk -F'\t' -v want="$1" 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
        { for (n in ix) c[n] = $ix[n] } ('"${2:-1}"') && !seen[$ix[want]]++ { print $ix[want] }' "$base.tsv"
}
words() { tr '\n' ' ' | sed 's/ $//'; }

info() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$base-info.tsv"; }
label="$(info device_name) ($(info backend)), commit $(info git_commit), $(basename "$res")"
plain='c["variant"] == ""'
registry=$("$bin" list | awk '/^algorithms:/ { f = 1; next } /^[a-z]/ { f = 0 } f && /^  [a-z]/ { print $1 }')
present=$(values algo)
algos=$( { grep -Fxf <(echo "$present") <<< "$registry" || true; grep -vFxf <(echo "$registry") <<< "$present" || true; } | words)
panels=$(awk -F'\t' 'NR > 1 { split($3, a, "=") ; print a[2] "\t" $3 }' "$base.tsv" | sort -u -t $'\t' -k1,1n -k2,2 | cut -f2 | words)
modes=$(for m in topk topp topk_topp none; do values mode "$plain && c[\"mode\"] == \"$m\"" | head -1; done | words)
kinds=(time)
# The words of $algos (registry order) that are among the lines of $1.
in_order() { for a in $algos; do if grep -qFx "$a" <<< "$1"; then printf '%s ' "$a"; fi; done; }

# gnuplot FIGURE.gp OUTBASE DATAFILE [var=value ...]: the common variables, then the figure's.
draw() {
    local gp=$1 outbase=$2 data=$3; shift 3
    local vars="dir='$top/plots'; datafile='$data'; outbase='$outbase'; label='$label'; algos='$algos'"
    for v in "$@"; do vars="$vars; $v"; done
    gnuplot -e "$vars" "$top/plots/$gp"
}
# Panels (panel|mode words) where column $1 has a value > 0 for a plain cell, except $2's.
combos() {
    awk -F'\t' -v y="$1" -v skip="${2:-}" 'NR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
        $ix["variant"] == "" && $ix["algo"] != skip && $ix[y] != "NaN" && $ix[y] + 0 > 0 \
        && !seen[$ix["panel"] "|" $ix["mode"]]++ { printf "%s|%s ", $ix["panel"], $ix["mode"] }' "$base.tsv"
}

draw time_vs_batch.gp "$base" "$base.tsv" "series='$(values series | words)'"

if [ -n "$(combos rows_per_s)" ]; then
    lines=$(in_order "$(values algo "$plain")")
    draw throughput.gp "$base-throughput" "$base.tsv" "panels='$panels'" "modes='$modes'" \
        "lines='$lines'" "present='$(combos rows_per_s)'"
    kinds+=(throughput)
    if [ -n "$(combos speedup "$baseline")" ]; then
        draw speedup.gp "$base-speedup" "$base.tsv" "panels='$panels'" "modes='$modes'" \
            "lines='$(in_order "$(values algo "$plain && c[\"algo\"] != \"$baseline\"")")'" \
            "present='$(combos speedup "$baseline")'" "baseline='$baseline'"
        kinds+=(speedup)
    fi
    if [ -n "$(combos workspace_bytes)" ]; then
        draw memory.gp "$base-memory" "$base.tsv" "panels='$panels'" "modes='$modes'" \
            "lines='$lines'" "present='$(combos workspace_bytes)'"
        kinds+=(memory)
    fi
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
    draw ablation.gp "$base-ablation" "$base-ablation.tsv" \
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
    draw hitrate.gp "$base-hitrate" "$base-hitrate.tsv" "cats='$cats'" "hseries='$hseries'"
    kinds+=(hitrate)
else
    printf 'x\tvocab\tpanel\tseries\talgo\tmode\tdataset\tk\tp\trows\thit_rate\toutliers\toutlier_mass\n' > "$base-hitrate.tsv"
fi
rm -f "$base-hitrate.body"

echo "${kinds[@]}" > "$base-kinds.txt"
echo "figures.sh: drew ${kinds[*]} into $out ($stem.png, $stem-<kind>.png and .pdf)"

#!/usr/bin/env bash
# figures.sh RESULTS.h5 — export a results file to TSV (plots/out/<stem>.tsv, one series
# column added, ok cells only, sorted so that each series is contiguous) and draw every
# figure kind that applies into plots/out/<stem>*.png and .pdf, labelled with the device and
# the git commit of the run.
set -euo pipefail
res=${1:?usage: figures.sh RESULTS.h5}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TOPKP:-$top/build/topkp}
stem=$(basename "$res" .h5)
out=$top/plots/out
mkdir -p "$out"
tsv=$out/$stem.tsv

"$bin" export "$res" | awk -F'\t' -v OFS='\t' '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print "series", "sortkey", $0; next }
    $col["status"] == "ok" {
        s = $col["algo"]
        if ($col["variant"] != "") s = s ":" $col["variant"]
        s = s "/" $col["mode"] "/V=" $col["vocab"]
        print s, $col["batch"], $0
    }' | { IFS= read -r header; echo "$header"; sort -t $'\t' -k1,1 -k2,2n; } > "$tsv"

if [ "$(wc -l < "$tsv")" -lt 2 ]; then
    echo "figures.sh: $res has no ok cells to draw" >&2
    exit 1
fi
info() { "$bin" info "$res" | awk -F'\t' -v k="$1" '$1 == k { print $2 }'; }
label="$(info device_name) ($(info backend)), commit $(info git_commit)"
series=$(tail -n +2 "$tsv" | cut -f1 | uniq | tr '\n' ' ')
gnuplot -e "datafile='$tsv'; outbase='$out/$stem'; label='$label'; series='$series'" \
    "$top/plots/time_vs_batch.gp"
echo "wrote $out/$stem.png and $out/$stem.pdf"

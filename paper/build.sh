#!/usr/bin/env bash
# build.sh RESULTS.h5... — the report paper/out/report.pdf from one or more results files:
# installs the missing TeX packages, draws the figures of every file (scripts/figures.sh into
# paper/out/fig), writes LaTeX fragments into paper/out/gen (tables of this run set beside the
# published numbers of paper/published.tsv), then runs pdflatex on paper/report.tex. Each
# section takes the file with its configs/paper sweep (fig2, table1, fig4, table4), else the
# first file that has its kind of cells, and says "not in these results" when none has. Variables: TOPKP (the binary), BASELINE (the speed-up baseline, default naive_sort).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: build.sh RESULTS.h5..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
out=$here/out
fig=$out/fig
gen=$out/gen
export BASELINE=${BASELINE:-naive_sort}

# pdflatex, graphicx, booktabs, longtable
bash "$top/scripts/install-deps.sh" texlive-latex-base texlive-latex-recommended
rm -rf "$out"
mkdir -p "$fig" "$gen"
stems=()
for res in "$@"; do
    [ -r "$res" ] || { echo "build.sh: cannot read $res" >&2; exit 1; }
    stem=$(basename "$res" .h5)
    bash "$top/scripts/figures.sh" "$res" "$fig" || echo "build.sh: no figures from $res" >&2
    stems+=("$stem")
done

# The stem whose figures include kind $1, preferring one that has a sweep named $2 (the name
# configs/paper/ gives it), else the first (empty when none).
first_with() {
    local s any=""
    for s in "${stems[@]}"; do
        grep -qw "$1" "$fig/$s-kinds.txt" 2>/dev/null || continue
        if cut -f1 "$fig/$s-all.tsv" | grep -qFx "$2"; then echo "$s"; return; fi
        any=${any:-$s}
    done
    echo "$any"
}
missing() { echo '\emph{Not in these results: no results file has the cells for this section.}' > "$gen/$1.tex"; }
figure() { # figure STEM-KIND CAPTION
    printf '\\begin{figure}[H]\\centering\n\\includegraphics[width=\\textwidth,height=0.8\\textheight,keepaspectratio]{fig/%s.pdf}\n\\caption{%s}\n\\end{figure}\n' "$1" "$2"
}
# awk with the LaTeX escaper tex() and the published numbers pub[table, key, metric] and
# publabel[table, key]; the first file argument must be paper/published.tsv.
tawk() {
    awk -F'\t' -v OFS=' & ' -v baseline="$BASELINE" '
        function tex(s) { gsub(/\\/, "\\textbackslash{}", s); gsub(/[_%&#$]/, "\\\\&", s); return s }
        function num(x, f) { return x == "" || x == "NaN" ? "--" : sprintf(f, x) }
        FNR == NR { if ($1 !~ /^#/ && $1 != "table") { pub[$1, $2, $4] = $5; publabel[$1, $2] = $3 }; next }
        FNR == 1 { delete ix; for (i = 1; i <= NF; i++) ix[$i] = i; next }
        '"$1" "$here/published.tsv" "${@:2}"
}

# Provenance: one row per results file.
{
    echo '\begin{tabular}{llllr}\toprule'
    echo 'results file & device (backend) & commit & started & ok cells / cells \\ \midrule'
    for s in "${stems[@]}"; do
        info() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$fig/$s-info.tsv"; }
        cells=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i; next }
                            { n++; ok += $c == "ok" } END { printf "%d / %d", ok, n }' "$fig/$s-all.tsv")
        printf '%s & %s (%s) & %s & %s & %s \\\\\n' "$s.h5" "$(info device_name)" "$(info backend)" \
            "$(info git_commit)" "$(info start_time)" "$cells" | sed 's/_/\\_/g'
    done
    echo '\bottomrule\end{tabular}'
} > "$gen/provenance.tex"

# Figure 2: throughput, speed-ups, and the paper's headline numbers.
s=$(first_with throughput fig2)
if [ -n "$s" ]; then
    {
        figure "$s-throughput" "Throughput (rows/s) against batch per vocabulary and mode, from \\texttt{${s//_/\\_}.h5}; the paper's Figure 2."
        if grep -qw speedup "$fig/$s-kinds.txt"; then
            figure "$s-speedup" "Speed-up over \\texttt{${BASELINE//_/\\_}} cell by cell."
            echo '\begin{table}[H]\centering\caption{Speed-up over the baseline per algorithm and mode: geometric mean and range over the cells, and at the largest batch (mean over vocabularies).}'
            echo '\begin{tabular}{llrrrrr}\toprule algorithm & mode & cells & geo-mean & min & max & at largest batch \\ \midrule'
            tawk '$ix["variant"] == "" && $ix["speedup"] != "NaN" {
                    g = $ix["algo"] SUBSEP $ix["mode"]; if (!(g in n)) order[++m] = g
                    n[g]++; lg[g] += log($ix["speedup"]); b = $ix["batch"] + 0
                    if (!(g in lo) || $ix["speedup"] < lo[g]) lo[g] = $ix["speedup"]
                    if ($ix["speedup"] > hi[g]) hi[g] = $ix["speedup"]
                    if (b > big[g]) { big[g] = b; sb[g] = 0; nb[g] = 0 }
                    if (b == big[g]) { sb[g] += $ix["speedup"]; nb[g]++ } }
                END { for (i = 1; i <= m; i++) { g = order[i]; split(g, a, SUBSEP)
                        print tex(a[1]), tex(a[2]), n[g], num(exp(lg[g] / n[g]), "%.2f"), num(lo[g], "%.2f"),
                              num(hi[g], "%.2f"), num(sb[g] / nb[g], "%.2f") " (B=" big[g] ")" " \\\\" } }' \
                "$fig/$s.tsv"
            echo '\bottomrule\end{tabular}\end{table}'
        fi
    } > "$gen/fig2.tex"
else
    missing fig2
fi
{
    echo '\begin{tabular}{lp{0.62\textwidth}r}\toprule claim & published (H100) & value \\ \midrule'
    awk -F'\t' '$1 == "headline" { gsub(/_/, "\\_", $2); printf "%s & %s & %s \\\\\n", $2, $3, $5 }' "$here/published.tsv"
    echo '\bottomrule\end{tabular}'
} > "$gen/headline.tex"

# Table 1: hit rate, N_t (top-k) and S_t (top-p) per vocabulary, beside the paper's.
s=$(first_with hitrate table1)
if [ -n "$s" ]; then
    {
        echo '\begin{table}[H]\centering\caption{Gaussian $\sigma$-truncation of \texttt{qrita}: mean outliers $N_t$ and hit rate at top-$k$ 50, mean outlier mass $S_t$ and hit rate at top-$p$ 0.9; this run (left) and the paper'"'"'s Table 1 (right, WikiText-2 logits of the named model on an H100).}'
        echo '\begin{tabular}{lrrrrlrrrr}\toprule'
        echo '& \multicolumn{4}{c}{this run} & \multicolumn{5}{c}{published} \\ \cmidrule(lr){2-5}\cmidrule(lr){6-10}'
        echo 'dataset/vocab & $N_t$ & hit & $S_t$ & hit & model & $N_t$ & hit & $S_t$ & hit \\ \midrule'
        tawk '$ix["algo"] == "qrita" && ($ix["mode"] == "topk" || $ix["mode"] == "topp") {
                c = $ix["panel"]; if (!(c in seen)) { seen[c] = 1; order[++m] = c; v[c] = $ix["vocab"] }
                if ($ix["mode"] == "topk") { nt[c] = $ix["outliers"]; hk[c] = $ix["hit_rate"] }
                else { st[c] = $ix["outlier_mass"]; hp[c] = $ix["hit_rate"] } }
            END { for (i = 1; i <= m; i++) { c = order[i]; V = v[c]
                    print tex(c), num(nt[c], "%.0f"), num(hk[c], "%.3f"), num(st[c], "%.3f"), num(hp[c], "%.3f"),
                          (("table1", V) in publabel ? publabel["table1", V] : "--"),
                          num(pub["table1", V, "topk_nt"], "%.0f"), num(pub["table1", V, "topk_hit"], "%.3f"),
                          num(pub["table1", V, "topp_st"], "%.3f"), num(pub["table1", V, "topp_hit"], "%.3f") " \\\\" } }' \
            "$fig/$s-hitrate.tsv"
        echo '\bottomrule\end{tabular}\end{table}'
        figure "$s-hitrate" "Truncation hit rate and mean outliers per vocabulary and mode, from \\texttt{${s//_/\\_}.h5}."
    } > "$gen/table1.tex"
else
    missing table1
fi

# Figure 4: workspace memory, and a table of it at the largest batch.
s=$(first_with memory fig4)
if [ -n "$s" ]; then
    {
        figure "$s-memory" "Workspace bytes per call against batch; the paper's Figure 4 (which reports qrita at about half the baselines' memory)."
        echo '\begin{table}[H]\centering\caption{Workspace at the largest batch of each vocabulary (MiB), top-$k$ then top-$p$ cells where present, else any mode.}'
        tawk '$ix["variant"] == "" { c = $ix["panel"]; a = $ix["algo"]; b = $ix["batch"] + 0
                if (!(c in cs)) { cs[c] = 1; corder[++nc] = c }; if (!(a in as)) { as[a] = 1; aorder[++na] = a }
                pri = ($ix["mode"] == "topk_topp") * 1e12 + b
                if (pri >= best[c, a]) { best[c, a] = pri; w[c, a] = $ix["workspace_bytes"]; bb[c, a] = b } }
            END { printf "\\begin{tabular}{l"; for (j = 1; j <= na; j++) printf "r"; printf "}\\toprule\ndataset/vocab (batch)"
                  for (j = 1; j <= na; j++) printf " & %s", tex(aorder[j]); print " \\\\ \\midrule"
                  for (i = 1; i <= nc; i++) { c = corder[i]; printf "%s", tex(c)
                      for (j = 1; j <= na; j++) printf " & %s", ((c, aorder[j]) in w ? sprintf("%.3f", w[c, aorder[j]] / 1048576) " (" bb[c, aorder[j]] ")" : "--")
                      print " \\\\" }
                  print "\\bottomrule\\end{tabular}" }' "$fig/$s.tsv"
        echo '\end{table}'
    } > "$gen/memory.tex"
else
    missing memory
fi

# Table 4: the ablation bars and table beside the paper's times.
s=$(first_with ablation table4)
if [ -n "$s" ]; then
    {
        echo '\begin{table}[H]\centering\caption{Ablation: median time of each variant and its ratio to the group'"'"'s first variant (A), beside the paper'"'"'s Table 4 (H100, $k$=50, $p$=0.9, V=128256, B=1024); the paper'"'"'s settings of each run are in \texttt{configs/paper/table4\_ablation.lua}.}'
        echo '\begin{tabular}{llrrrrr}\toprule'
        echo '& & \multicolumn{3}{c}{this run} & \multicolumn{2}{c}{published} \\ \cmidrule(lr){3-5}\cmidrule(lr){6-7}'
        echo 'run & qrita options & ms & / A & hit rate & ms & / A \\ \midrule'
        tawk '{ o = $ix["options"]; sub(/,sigma_margin.*/, "", o); gsub(/truncation=|search=|dedup=|autotune=/, "", o)
                r = $ix["variant"]; pa = pub["table4", "A", "time_ms"]; pv = pub["table4", r, "time_ms"]
                print tex($ix["label"]), "\\texttt{" tex(o) "}", num($ix["median_ms"], "%.3f"), num($ix["rel"], "%.2f"),
                      num($ix["hit_rate"], "%.2f"), num(pv, "%.3f"), (pv != "" && pa != "" ? sprintf("%.2f", pv / pa) : "--") " \\\\" }' \
            "$fig/$s-ablation.tsv"
        echo '\bottomrule\end{tabular}\end{table}'
        figure "$s-ablation" "Ablation bars from \\texttt{${s//_/\\_}.h5}; the paper's Table 4."
    } > "$gen/table4.tex"
else
    missing table4
fi

cd "$out"
for pass in 1 2; do
    TEXINPUTS="$here:$out:" pdflatex -interaction=nonstopmode -halt-on-error "$here/report.tex" > "$out/report.build.log" ||
        { tail -n 30 "$out/report.build.log" >&2; echo "build.sh: pdflatex failed (log: $out/report.build.log)" >&2; exit 1; }
done
echo "build.sh: wrote $out/report.pdf"

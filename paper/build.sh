#!/usr/bin/env bash
# build.sh CAMPAIGN_FOLDER | RESULTS.h5... [gpu_tests.log] — the report paper/out/report.pdf and the claims table
# paper/out/claims.tsv from a campaign folder (docs: CAMPAIGN, results/<gpu>-<date>/: its .h5
# files and gpu_tests.log) or a list of results files: scripts/claims.py judges every claim of
# paper/claims.tsv (its fragments gen/claims-*.tex and the verdict rules the report states at
# its top) and refuses a section whose cells come from two builds (commit or binary); the figures
# of every file are drawn (scripts/figures.sh into paper/out/fig), LaTeX fragments written into
# paper/out/gen (the tables of this run beside paper/published.tsv), then pdflatex runs on
# paper/report.tex. Each paper section takes the first file with its configs/paper sweep (fig2,
# table1, fig4, table4) and says "not in these results" when none has it; a table that comes
# out with no rows is an error. Peers (the external libraries of a results file) are in the
# figures and the module tables, listed after the modules below a rule; each module is set
# beside the fastest peer of its cells, and every peer's rows exact / rows checked are summed.
# Variables: TOPKP (the binary), BASELINE (the speed-up baseline, default naive_sort),
# GEN_ONLY=1 (stop after the LaTeX fragments and claims.tsv: no TeX install, no pdflatex; the
# tests read the fragments), PYTHON (default /usr/bin/python3, with h5py and numpy).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: build.sh CAMPAIGN_FOLDER | RESULTS.h5..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
out=$here/out
fig=$out/fig
gen=$out/gen
export BASELINE=${BASELINE:-naive_sort}
bin=${TOPKP:-$top/build/topkp}

# the results files: a campaign folder's *.h5 (and its gpu_tests.log), or the files named
files=() tests=() real= campaign=
for a in "$@"; do
    if [ -d "$a" ]; then
        [ -r "$a/campaign.tsv" ] && campaign=$a/campaign.tsv
        for f in "$a"/*.h5; do [ -e "$f" ] && files+=("$f"); done
        [ -r "$a/gpu_tests.log" ] && tests=(--tests "$a/gpu_tests.log")
        [ -r "$a/real_logits.tsv" ] && real=$a/real_logits.tsv
    elif [[ $a == *.log ]]; then
        tests=(--tests "$a") # the GPU test run's log (topkp-tests gpu_ output)
    else
        files+=("$a")
    fi
done
[ ${#files[@]} -ge 1 ] || { echo "build.sh: no results files in $*" >&2; exit 2; }

# pdflatex, graphicx, booktabs, longtable
[ -n "${GEN_ONLY:-}" ] || bash "$top/scripts/install-deps.sh" texlive-latex-base texlive-latex-recommended
rm -rf "$out"
mkdir -p "$fig" "$gen"
for res in "${files[@]}"; do
    [ -r "$res" ] || { echo "build.sh: cannot read $res" >&2; exit 1; }
done
# the claims first: it refuses a section of two builds before anything is drawn
"${PYTHON:-/usr/bin/python3}" "$top/scripts/claims.py" "$gen" "${files[@]}" "${tests[@]}"
mv "$gen/claims.tsv" "$out/claims.tsv"
stems=()
for res in "${files[@]}"; do
    stem=$(basename "$res" .h5)
    bash "$top/scripts/figures.sh" "$res" "$fig" || echo "build.sh: no figures from $res" >&2
    stems+=("$stem")
done

# The first stem whose figures include kind $1 and whose cells include a sweep named $2 (the
# name configs/paper/ gives it; empty when none): a paper section draws only its own sweep's
# cells, never another table's under its heading.
first_with() {
    local s
    for s in "${stems[@]}"; do
        grep -qw "$1" "$fig/$s-kinds.txt" 2>/dev/null || continue
        # (awk reads the file itself: `cut | grep -q` under pipefail fails when grep stops early)
        if awk -F'\t' -v w="$2" '$1 == w { found = 1; exit } END { exit !found }' "$fig/$s-all.tsv"; then
            echo "$s"; return
        fi
    done
    return 0
}
# The same for the sections that are not the paper's (peers): any file with that kind of cells.
any_with() {
    local s
    for s in "${stems[@]}"; do
        grep -qw "$1" "$fig/$s-kinds.txt" 2>/dev/null && { echo "$s"; return; }
    done
    return 0
}
missing() { echo '\emph{Not in these results: no results file has this section'"'"'s sweep (\texttt{'"$2"'}, from \texttt{configs/paper/}); nothing is drawn.}' > "$gen/$1.tex"; }
figure() { # figure STEM-KIND CAPTION
    printf '\\begin{figure}[H]\\centering\n\\includegraphics[width=\\textwidth,height=0.8\\textheight,keepaspectratio]{fig/%s.pdf}\n\\caption{%s}\n\\end{figure}\n' "$1" "$2"
}
# The one LaTeX escaper (docs/ROBUSTNESS.md, "Outputs"): every character LaTeX reads as markup
# (\ { } _ % & # $ ^ ~) becomes text, so no label, name or attribute of a results file can
# break a table or make LaTeX read a file or run a command (\input, \write18 print as text).
# The exported TSV already shows control bytes as \xHH; a caption's text goes through tex_text.
TEX_FN='function tex(s) { gsub(/\\/, "\001", s); gsub(/[_%&#${}]/, "\\\\&", s); gsub(/\^/, "\\textasciicircum{}", s)
    gsub(/~/, "\\textasciitilde{}", s); gsub(/\001/, "\\textbackslash{}", s); return s }'
tex_text() { printf '%s\n' "$1" | awk "$TEX_FN"' { print tex($0) }'; }
# awk with the LaTeX escaper tex(), num(), rule(peer) (the \midrule before the first peer row of
# a table), and the published numbers pub[table, key, metric] and publabel[table, key]; the
# first file argument must be paper/published.tsv.
tawk() {
    awk -F'\t' -v OFS=' & ' -v baseline="$BASELINE" "$TEX_FN"'
        # "--" for an empty value and for NaN: "NaN" of figures.sh, "nan" of a column that does
        # not apply to the cell (docs/RESULTS.md, "Results")
        function num(x, f) { return x == "" || tolower(x) ~ /^[-+]?nan$/ ? "--" : sprintf(f, x) }
        function rule(peer) { if (peer == 1 && !ruled) { ruled = 1; return "\\midrule\n" } return "" }
        FNR == NR { if ($1 !~ /^#/ && $1 != "table") { pub[$1, $2, $4] = $5; publabel[$1, $2] = $3 }; next }
        FNR == 1 { delete ix; for (i = 1; i <= NF; i++) ix[$i] = i; next }
        '"$1" "$here/published.tsv" "${@:2}"
}

# Provenance: one row per results file.
{
    echo '\begin{tabular}{lllllr}\toprule'
    echo 'results file & device (backend) & commit / binary & timer & started & ok cells / cells \\ \midrule'
    for s in "${stems[@]}"; do
        info() { tex_text "$(awk -F'\t' -v k="$1" '/^run / { exit } $1 == k { print $2; exit }' "$fig/$s-info.tsv")"; }
        cells=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i; next }
                            { n++; ok += $c == "ok" } END { printf "%d / %d", ok, n }' "$fig/$s-all.tsv")
        case $(info backend) in
            gpu) timer='CUDA events, L2 flushed, median' ;;
            *) timer='host clock, median' ;;
        esac
        printf '%s & %s (%s) & %s / %s & %s & %s & %s \\\\\n' "$(tex_text "$s.h5")" "$(info device_name)" \
            "$(info backend)" "$(info git_commit)" "$(info binary_id)" "$timer" "$(info start_time)" "$cells"
    done
    echo '\bottomrule\end{tabular}'
} > "$gen/provenance.tex"

# The campaign's chunks (a campaign folder's campaign.tsv, docs/CAMPAIGN.md): each with its
# status, so that the report says which parts ran and which are missing, and why.
if [ -n "$campaign" ]; then
    {
        echo '{\footnotesize\begin{longtable}{lllp{0.5\textwidth}}'
        echo '\caption{The campaign'"'"'s chunks (\texttt{campaign.tsv}): what ran, and what is missing and why.}\\'
        echo '\toprule chunk & file & sweeps & status \\ \midrule\endhead'
        tawk '{ print "\\texttt{" tex($ix["chunk"]) "}", "\\texttt{" tex($ix["file"]) "}", tex($ix["sweep"]),
                      ($ix["status"] ~ /^ok/ ? "" : "\\textbf{") tex($ix["status"]) ($ix["status"] ~ /^ok/ ? "" : "}") " \\\\" }' "$campaign"
        echo '\bottomrule\end{longtable}}'
    } > "$gen/campaign.tex"
else
    echo '\emph{The inputs are results files, not a campaign folder: no \texttt{campaign.tsv} says what ran and what is missing.}' > "$gen/campaign.tex"
fi

# Figure 2: throughput and speed-ups (its claims: gen/claims-fig2.tex).
s=$(first_with throughput fig2)
if [ -n "$s" ]; then
    {
        figure "$s-throughput" "Throughput (rows/s) against batch per vocabulary and mode, from \\texttt{$(tex_text "$s").h5}; the paper's Figure 2."
        if grep -qw speedup "$fig/$s-kinds.txt"; then
            figure "$s-speedup" "Speed-up over \\texttt{$(tex_text "$BASELINE")} cell by cell."
            echo '\begin{table}[H]\centering\caption{Speed-up over the baseline per algorithm and mode: geometric mean and range over the cells, and at the largest batch (mean over vocabularies); peers below the rule.}'
            echo '\begin{tabular}{llrrrrr}\toprule algorithm & mode & cells & geo-mean & min & max & at largest batch \\ \midrule'
            tawk '$ix["variant"] == "" && $ix["speedup"] != "NaN" {
                    g = $ix["line"] SUBSEP $ix["mode"]; if (!(g in n)) { order[++m] = g; peer[g] = $ix["peer"] }
                    n[g]++; lg[g] += log($ix["speedup"]); b = $ix["batch"] + 0
                    if (!(g in lo) || $ix["speedup"] < lo[g]) lo[g] = $ix["speedup"]
                    if ($ix["speedup"] > hi[g]) hi[g] = $ix["speedup"]
                    if (b > big[g]) { big[g] = b; sb[g] = 0; nb[g] = 0 }
                    if (b == big[g]) { sb[g] += $ix["speedup"]; nb[g]++ } }
                END { for (i = 1; i <= m; i++) { g = order[i]; split(g, a, SUBSEP)
                        printf "%s", rule(peer[g])
                        print tex(a[1]), tex(a[2]), n[g], num(exp(lg[g] / n[g]), "%.2f"), num(lo[g], "%.2f"),
                              num(hi[g], "%.2f"), num(sb[g] / nb[g], "%.2f") " (B=" big[g] ")" " \\\\" } }' \
                "$fig/$s.tsv"
            echo '\bottomrule\end{tabular}\end{table}'
        fi
    } > "$gen/fig2.tex"
else
    missing fig2 fig2
fi
# Against the peers, like with like (scripts/figures.sh, <stem>-vs-peers-like.tsv): each module's
# mask against the fastest logits-in mask peer of the cell, its draws against the fastest
# logits-in sampler (a peer fed probabilities is never a logits-in comparison); per module,
# output and mode, and the cells at the smallest, the largest and the middle batch (the one
# nearest their geometric mean) of each vocabulary and mode.
s=$(first_with vs-peers fig2)
s=${s:-$(any_with vs-peers)}
vs=${s:+$fig/$s-vs-peers-like.tsv}
if [ -n "$s" ] && [ "$(wc -l < "$vs" 2>/dev/null || echo 0)" -gt 1 ]; then
    {
        figure "$s-vs-peers" "Speed-up of each module over the fastest peer of the same cell that writes what it writes and starts from logits (the peer's median time / the module's), from \\texttt{$(tex_text "$s").h5}: a mask against mask peers, draws against samplers; above the dotted line the module is faster."
        echo '\begin{table}[H]\centering\caption{Each module against the fastest like peer of each of its cells (same output, logits in): geometric mean and range of the speed-up (the peer'"'"'s median / the module'"'"'s), the cells where the module is faster, and the peer that was fastest in most of them.}'
        echo '\begin{tabular}{lllrrrrrl}\toprule module & output & mode & cells & geo-mean & min & max & faster & fastest like peer (cells) \\ \midrule'
        tawk '{ g = $ix["module"] SUBSEP $ix["output"] SUBSEP $ix["mode"]; r = $ix["ratio"]; if (!(g in n)) order[++m] = g
                n[g]++; lg[g] += log(r); won[g] += r > 1
                if (!(g in lo) || r < lo[g]) lo[g] = r; if (r > hi[g]) hi[g] = r
                b = g SUBSEP $ix["best_like_peer"]; if (++times[b] > times[g SUBSEP top[g]]) top[g] = $ix["best_like_peer"] }
            END { for (i = 1; i <= m; i++) { g = order[i]; split(g, a, SUBSEP)
                    print tex(a[1]), tex(a[2]), tex(a[3]), n[g], num(exp(lg[g] / n[g]), "%.2f"), num(lo[g], "%.2f"), num(hi[g], "%.2f"),
                          won[g], "\\texttt{" tex(top[g]) "} (" times[g SUBSEP top[g]] ") \\\\" } }' "$vs"
        echo '\bottomrule\end{tabular}\end{table}'
        echo '{\footnotesize\setlength{\tabcolsep}{4pt}\begin{longtable}{llrllrlrr}'
        echo '\caption{Module median beside the fastest like peer of the same cell (sweep, dataset, vocabulary, batch, $k$, $p$), at the smallest, middle and largest batch of each vocabulary and mode (every cell: \texttt{'"$(tex_text "$s")"'-vs-peers-like.tsv}).}\\'
        echo '\toprule dataset/vocab & mode & batch & module & output & $\mu$s & fastest like peer & $\mu$s & speed-up \\ \midrule\endhead'
        # the shown cells, ordered by vocabulary, mode, batch and module (the rank of its first row)
        awk -F'\t' -v OFS='\t' 'FNR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; if (NR > 1) print "rank", "by_panel", "by_mode", "by_batch", $0; next }
                { g = $ix["panel"] SUBSEP $ix["mode"]; b = $ix["batch"] + 0 }
                NR == FNR { if (!(g in lo) || b < lo[g]) lo[g] = b; if (b > hi[g]) hi[g] = b; batches[g, b] = 1; next }
                !done++ { for (k in batches) { split(k, a, SUBSEP); h = a[1] SUBSEP a[2]; d = log(a[3] / lo[h]) - log(hi[h] / a[3])
                              d = d < 0 ? -d : d; if (!(h in mid) || d < dist[h]) { mid[h] = a[3] + 0; dist[h] = d } } }
                !($ix["module"] in rank) { rank[$ix["module"]] = ++nm }
                b == lo[g] || b == hi[g] || b == mid[g] { print rank[$ix["module"]], $ix["panel"], $ix["mode"], b, $0 }' "$vs" "$vs" |
            { IFS= read -r header; echo "$header"; LC_ALL=C sort -t $'\t' -k2,2 -k3,3 -k4,4n -k1,1n; } > "$gen/vs-peers-cells.tsv"
        tawk '{ print tex($ix["panel"]), tex($ix["mode"]), $ix["batch"], tex($ix["module"]), tex($ix["output"]), num($ix["module_us"], "%.1f"),
                      tex($ix["best_like_peer"]), num($ix["best_like_peer_us"], "%.1f"), num($ix["ratio"], "%.2f") " \\\\" }' \
            "$gen/vs-peers-cells.tsv"
        echo '\bottomrule\end{longtable}}'
    } > "$gen/vs_peers.tex"
else
    echo '\emph{Not in these results: no results file has module and like peer cells (same output, logits in) in common.}' > "$gen/vs_peers.tex"
fi


# Exactness of the peers: rows exact / rows checked against the oracle, summed over every cell
# of each peer and option set, in every results file that has peers.
exactness() {
    local s
    for s in "${stems[@]}"; do
        [ -r "$fig/$s-exact.tsv" ] || continue
        stem="$s.h5" tawk '$ix["peer"] == 1 {
                print "\\texttt{" tex(ENVIRON["stem"]) "}", "\\texttt{" tex($ix["algo"]) "}", "\\texttt{" tex($ix["options"] == "" ? "(none)" : $ix["options"]) "}",
                      $ix["ok_cells"] " / " $ix["cells"], $ix["rows_exact"] " / " $ix["rows_checked"],
                      ($ix["rows_checked"] > 0 ? sprintf("%.1f\\%%", 100 * $ix["rows_exact"] / $ix["rows_checked"]) : "--") " \\\\" }' \
            "$fig/$s-exact.tsv"
    done
}
rows=$(exactness)
if [ -n "$rows" ]; then
    {
        echo '{\small\begin{longtable}{lllrrr}'
        echo '\caption{Exactness of the peers: rows whose output equals the oracle'"'"'s (the check every module passes) over the rows checked, summed over every cell of the peer with these options; ok cells over all cells.}\\'
        echo '\toprule results file & peer & options & ok cells & rows exact / checked & exact \\ \midrule\endhead'
        echo "$rows"
        echo '\bottomrule\end{longtable}}'
    } > "$gen/exactness.tex"
else
    echo '\emph{No peer cells in these results.}' > "$gen/exactness.tex"
fi

# Table 1: hit rate, N_t (top-k) and S_t (top-p) per vocabulary, beside the paper's.
s=$(first_with hitrate table1)
if [ -n "$s" ]; then
    {
        echo '\begin{table}[H]\centering\caption{Gaussian $\sigma$-truncation of \texttt{qrita}: mean outliers $N_t$ and hit rate at top-$k$ 50, mean outlier mass $S_t$ and hit rate at top-$p$ 0.9; this run (left) and the paper'"'"'s Table 1 (right, WikiText-2 logits of the named model on an H100). \textbf{Calibrated:} the model-like datasets were tuned until they give these published statistics (\texttt{datasets/CALIBRATION.md}), so their agreement here is by construction, not a finding; rows of other datasets (\texttt{peers\_s1}, \texttt{flat}, \ldots) and the \emph{real model} rows (sweep \texttt{table1\_real}: another model and vocabulary than the paper'"'"'s, logits from \texttt{scripts/dump\_logits.py}) were not fitted and are not judged against the paper'"'"'s rows.}'
        echo '\begin{tabular}{lrrrrlrrrrl}\toprule'
        echo '& \multicolumn{4}{c}{this run} & \multicolumn{5}{c}{published} & \\ \cmidrule(lr){2-5}\cmidrule(lr){6-10}'
        echo 'dataset/vocab & $N_t$ & hit & $S_t$ & hit & model & $N_t$ & hit & $S_t$ & hit & hit rates \\ \midrule'
        # every cell of the table1 sweep (the fitted profiles) and of table1_real (real-model
        # logits: another model than the paper's, shown beside it and never judged against it)
        tawk '($ix["sweep"] == "table1" || $ix["sweep"] == "table1_real") && $ix["status"] == "ok" &&
              $ix["algo"] == "qrita" && ($ix["mode"] == "topk" || $ix["mode"] == "topp") {
                real = $ix["sweep"] == "table1_real"
                c = (real ? "real model: " : "") $ix["dataset"] "/" $ix["vocab"]
                if (!(c in seen)) { seen[c] = 1; order[++m] = c; v[c] = $ix["vocab"]; isreal[c] = real }
                if ($ix["mode"] == "topk") { nt[c] = $ix["outliers"]; hk[c] = $ix["hit_rate"] }
                else { st[c] = $ix["outlier_mass"]; hp[c] = $ix["hit_rate"] } }
            END { for (i = 1; i <= m; i++) { c = order[i]; V = isreal[c] ? "" : v[c]
                    print tex(c), num(nt[c], "%.0f"), num(hk[c], "%.3f"), num(st[c], "%.3f"), num(hp[c], "%.3f"),
                          (("table1", V) in publabel ? publabel["table1", V] : "--"),
                          num(pub["table1", V, "topk_nt"], "%.0f"), num(pub["table1", V, "topk_hit"], "%.3f"),
                          num(pub["table1", V, "topp_st"], "%.3f"), num(pub["table1", V, "topp_hit"], "%.3f"),
                          (isreal[c] ? "not judged" : agree(hk[c], pub["table1", V, "topk_hit"], hp[c], pub["table1", V, "topp_hit"])) " \\\\" } }
            # both hit rates within 0.05 of the published ones (a calibrated dataset: by construction)
            function agree(a, pa, b, pb) { if (a == "" || pa == "" || b == "" || pb == "") return "--"
                return (a - pa <= 0.05 && pa - a <= 0.05 && b - pb <= 0.05 && pb - b <= 0.05) ? "agree (fitted)" : "differ" }' \
            "$fig/$s-all.tsv"
        echo '\bottomrule\end{tabular}\end{table}'
        # the statistics nobody fitted (sweep table1_unfitted: other k and p, untuned datasets)
        if awk -F'\t' '$1 == "table1_unfitted" { found = 1; exit } END { exit !found }' "$fig/$s-all.tsv"; then
            echo '\begin{table}[H]\centering\caption{\textbf{Not fitted:} the same statistics at settings and on datasets the calibration never saw (sweep \texttt{table1\_unfitted}): top-$k$ alone at $k$ = 10, 200, 1000 and top-$p$ alone at $p$ = 0.5, 0.95 on the model-like profiles, and the untuned \texttt{peers\_s1} and \texttt{flat} rows; the paper publishes none of them. Real logits (\texttt{scripts/dump\_logits.py}) are the way to an unfitted Table 1.}'
            echo '\begin{tabular}{lrrrrrr}\toprule dataset & V & $k$ & $p$ & hit rate & $N_t$ & $S_t$ \\ \midrule'
            tawk '$ix["sweep"] == "table1_unfitted" && $ix["status"] == "ok" {
                    topk = $ix["k"] > 0
                    print tex($ix["dataset"]), $ix["vocab"], (topk ? $ix["k"] : "--"), (topk ? "--" : $ix["p"]),
                          num($ix["hit_rate"], "%.3f"), num($ix["outliers"], "%.0f"),
                          (topk ? "--" : num($ix["outlier_mass"], "%.3f")) " \\\\" }' "$fig/$s-all.tsv"
            echo '\bottomrule\end{tabular}\end{table}'
        else
            echo '\emph{These results have no \texttt{table1\_unfitted} sweep: the statistics that were not fitted are not shown.}'
        fi
        figure "$s-hitrate" "Truncation hit rate and mean outliers per vocabulary and mode, from \\texttt{$(tex_text "$s").h5}."
    } > "$gen/table1.tex"
else
    missing table1 table1
fi

# The real-model logits' provenance (a campaign folder's real_logits.tsv: name<TAB>value lines
# of the logits file's path, sha256 and attributes; or a TSV with a header), a row per line.
if [ -n "$real" ]; then
    {
        echo '\begin{table}[H]\centering\small\caption{The real-model logits of the \texttt{table1\_real} and \texttt{fig2\_real} sweeps (\texttt{real\_logits.tsv} of the campaign folder).}'
        awk -F'\t' "$TEX_FN"'{ n = NF > n ? NF : n; line[NR] = $0 } END { printf "\\begin{tabular}{"; for (i = 1; i <= n; i++) printf "l"
                    print "}\\toprule"; if (n == 2) print "field & value \\\\ \\midrule"  # name<TAB>value lines
                    for (r = 1; r <= NR; r++) { m = split(line[r], f, "\t"); out = ""
                        for (i = 1; i <= n; i++) { v = tex(i <= m ? f[i] : "")
                                                   out = out (i > 1 ? " & " : "") v }
                        print out " \\\\" (r == 1 && n != 2 ? " \\midrule" : "") }
                    print "\\bottomrule\\end{tabular}" }' "$real"
        echo '\end{table}'
    } > "$gen/real_logits.tex"
else
    echo '\emph{No \texttt{real\_logits.tsv} among the inputs (a campaign folder has one): the real-model logits'"'"' provenance is not shown.}' > "$gen/real_logits.tex"
fi

# Figure 4: workspace memory, and a table of it at the largest batch.
s=$(first_with memory fig4)
if [ -n "$s" ]; then
    {
        figure "$s-memory" "Workspace bytes per call against batch; the paper's Figure 4 (which reports qrita at about half the baselines' memory)."
        echo '\begin{table}[H]\centering\footnotesize\caption{Workspace at the largest batch of each vocabulary (MiB, the batch in brackets), top-$k$ then top-$p$ cells where present, else any mode; peers below the rule.}'
        tawk '$ix["variant"] == "" { c = $ix["panel"]; a = $ix["line"]; b = $ix["batch"] + 0
                if (!(c in cs)) { cs[c] = 1; corder[++nc] = c }; if (!(a in as)) { as[a] = 1; aorder[++na] = a; peer[a] = $ix["peer"] }
                pri = ($ix["mode"] == "topk_topp") * 1e12 + b
                if (pri >= best[c, a]) { best[c, a] = pri; w[c, a] = $ix["workspace_bytes"]; bb[c, a] = b } }
            END { printf "\\begin{tabular}{l"; for (j = 1; j <= nc; j++) printf "r"; printf "}\\toprule\nalgorithm"
                  for (j = 1; j <= nc; j++) { split(corder[j], pv, "/"); printf " & \\shortstack[r]{%s\\\\%s}", tex(pv[1]), tex(pv[2]) }
                  print " \\\\ \\midrule"
                  for (i = 1; i <= na; i++) { a = aorder[i]; printf "%s%s", rule(peer[a]), tex(a)
                      for (j = 1; j <= nc; j++) printf " & %s", ((corder[j], a) in w ? sprintf("%.3f", w[corder[j], a] / 1048576) " (" bb[corder[j], a] ")" : "--")
                      print " \\\\" }
                  print "\\bottomrule\\end{tabular}" }' "$fig/$s.tsv"
        echo '\end{table}'
    } > "$gen/memory.tex"
else
    missing memory fig4
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
        # the runs also measured on the peers (sweep table4_peers at run A's and run J's cell):
        # A on vllm.triton (the paper's kernel), J on vllm.pytorch (PyTorch's sort, the paper's
        # baseline) beside our J (CUB's sort); below a rule, their ratio to our A
        ta=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["variant"] == "A" { print $c["median_ms"]; exit }' "$fig/$s-ablation.tsv")
        ta=$ta tawk '$ix["sweep"] == "table4_peers" && $ix["status"] == "ok" {
                r = $ix["algo"] == "vllm.triton" ? "A" : $ix["algo"] == "vllm.pytorch" ? "J" : ""; if (r == "") next
                ms = $ix["median_us"] / 1000; pa = pub["table4", "A", "time_ms"]; pv = pub["table4", r, "time_ms"]
                printf "%s", rule(1)
                print r " on \\texttt{" tex($ix["algo"]) "}", "--", num(ms, "%.3f"), (ENVIRON["ta"] > 0 ? sprintf("%.2f", ms / ENVIRON["ta"]) : "--"),
                      "--", num(pv, "%.3f"), (pv != "" && pa != "" ? sprintf("%.2f", pv / pa) : "--") " \\\\" }' "$fig/$s-all.tsv"
        echo '\bottomrule\end{tabular}\end{table}'
        figure "$s-ablation" "Ablation bars from \\texttt{$(tex_text "$s").h5}; the paper's Table 4."
    } > "$gen/table4.tex"
else
    missing table4 table4
fi

# A table that comes out with no rows is an error: its section's sweep is present (else the
# section says "not in these results" and draws no table), so an empty one is a bug.
for f in "$gen"/*.tex; do
    awk -v f="${f#$out/}" '
        /\\begin\{(tabular|longtable)\}/ { open = 1; inside = 0; rows = 0 }
        open && /\\midrule|\\endhead/ { inside = 1; next }
        open && inside && /\\\\[[:space:]]*$/ { rows++ }
        open && /\\bottomrule/ { if (!rows) { printf "build.sh: %s: a table with no rows (line %d)\n", f, FNR > "/dev/stderr"; bad = 1 }
                                 open = 0 }
        END { exit bad }' "$f" || exit 1
done

if [ -n "${GEN_ONLY:-}" ]; then
    echo "build.sh: wrote the fragments in $gen (GEN_ONLY)"
    exit 0
fi
cd "$out"
for pass in 1 2; do
    TEXINPUTS="$here:$out:" pdflatex -interaction=nonstopmode -halt-on-error "$here/report.tex" > "$out/report.build.log" ||
        { tail -n 30 "$out/report.build.log" >&2; echo "build.sh: pdflatex failed (log: $out/report.build.log)" >&2; exit 1; }
done
echo "build.sh: wrote $out/report.pdf"

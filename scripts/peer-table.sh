#!/usr/bin/env bash
# peer-table.sh RESULTS.h5 [MODULE...] — a Markdown table of each module's ok cells beside the
# fastest ok peer of the same sweep, dataset, V, B, k and p (docs/PEERS.md), twice: among all
# peers, and among the peers that start from logits as the modules do (not `input=probs`,
# whose softmax is computed outside the timed region; FlashInfer's default order=top_k_first is
# left out of the names). Ratio = peer time / module time, so
# above 1 the module is faster. Default modules: qrita cake rejection. The fastest peer may
# return another kind of output (a set module beside a sampler) and may be inexact on some
# rows: the results file's rows_exact says which.
set -euo pipefail
res=${1:?usage: peer-table.sh RESULTS.h5 [MODULE...]}
shift
modules=${*:-qrita cake rejection}
bin=${TOPKP:-$(cd "$(dirname "$0")/.." && pwd)/build/topkp}
"$bin" export "$res" | awk -F'\t' -v modules="$modules" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; n = split(modules, m, " ")
              for (i = 1; i <= n; i++) want[m[i]] = i; next }
    $c["status"] != "ok" { next }
    { key = $c["sweep"] "|" $c["dataset"] "|" $c["vocab"] "|" $c["batch"] "|" $c["k"] "|" $c["p"]
      t = $c["median_us"] + 0 }
    $c["algo"] ~ /^floor\./ { next } # the memory floors (docs/PEERS.md) are the peer of no module
    index($c["algo"], ".") {
        opts = $c["options"]; gsub(/,?order=top_k_first/, "", opts); sub(/^,/, "", opts)
        name = $c["algo"] (opts != "" ? " " opts : "")
        if (!(key in best) || t < best[key]) { best[key] = t; who[key] = name }
        if ($c["options"] !~ /input=probs/ && (!(key in lbest) || t < lbest[key])) { lbest[key] = t; lwho[key] = name }
        next }
    $c["algo"] in want && $c["variant"] == "" { rows[++nr] = key; mod[nr] = $c["algo"]; mt[nr] = t; mode[nr] = $c["mode"] }
    END {
        print "| module | mode | dataset | V | B | k | p | module us | fastest peer | us | ratio | fastest peer from logits | us | ratio |"
        print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        for (w = 1; w <= n; w++) for (i = 1; i <= nr; i++) {
            if (mod[i] != m[w] || !(rows[i] in best)) continue
            split(rows[i], f, "|")
            printf "| %s | %s | %s | %s | %s | %s | %s | %.1f | `%s` | %.1f | %.2f |", mod[i], mode[i], f[2], f[3], f[4], f[5], f[6], mt[i], who[rows[i]], best[rows[i]], best[rows[i]] / mt[i]
            if (rows[i] in lbest) printf " `%s` | %.1f | %.2f |\n", lwho[rows[i]], lbest[rows[i]], lbest[rows[i]] / mt[i]
            else print " - | - | - |"
        } }'

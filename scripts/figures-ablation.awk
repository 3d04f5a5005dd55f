# figures-ablation.awk — the data of the ablation figure (plots/ablation.gp) from
# scripts/figures.sh's <stem>.tsv (docs/FIGURES.md, "Figures"): a group per sweep and shape
# (dataset, V, B, k, p) in order of appearance, a bar per variant in declaration order, each with
# its time relative to the baseline variant of its group. The file `orders` holds
# "sweep<TAB>baseline/A/B/..." lines (the run record's ablation:<sweep>); for a sweep without
# one, the first variant of its rows is the baseline and the rows give the order. Output
# columns: x (the bar's place in its group), label (the variant; "<group>:<variant>" when there
# are several groups, as before), group, variant, sweep, algo, options, median_ms, q1_ms, q3_ms,
# hit_rate, rel (time / the baseline's), baseline, gi (the group's number), key (the options,
# and the algo, that differ among the sweep's variants), common (those all its variants share),
# ylog (1 when the group's times span more than 30x: drawn on a log axis), paper_ms and
# paper_rel: the paper's time of the run and its ratio to the paper's baseline run (the
# file `published`, paper/published.tsv: its table4 rows, for the sweep named table4; NaN
# elsewhere). The cards differ: the figure sets the ratios side by side, not the times.
BEGIN {
    FS = OFS = "\t"
    while (published != "" && (getline l < published) > 0) {
        if (l ~ /^#/) continue
        split(l, f, "\t"); if (f[1] == "table4" && f[4] == "time_ms") paper["table4", f[2]] = f[5] + 0
    }
    while ((getline l < orders) > 0) {
        split(l, f, "\t"); n = split(f[2], L, "/"); base[f[1]] = L[1]
        for (i = 2; i <= n; i++) order[f[1], L[i]] = i - 1
    }
}
FNR == 1 { for (i = 1; i <= NF; i++) ix[$i] = i; next }
$ix["variant"] != "" {
    s = $ix["sweep"]; v = $ix["variant"]
    g = s " " $ix["dataset"] " V=" $ix["vocab"] " B=" $ix["batch"] " k=" $ix["k"] " p=" sprintf("%g", $ix["p"])
    if (!(g in gi)) { gi[g] = ++ng; gname[ng] = g }
    if (!((s, v) in seen)) { seen[s, v] = ++nv[s]; if (!((s, v) in order)) order[s, v] = 1000 + nv[s]
                             algo_of[s, v] = $ix["algo"]; opts_of[s, v] = $ix["options"]; vname[s, nv[s]] = v }
    if (!(s in base) && !(s in firstv)) firstv[s] = v
    r = ++nr; G[r] = gi[g]; S[r] = s; V[r] = v; row[r] = $0
    t = $ix["median_us"] / 1e3; T[r] = t
    Q1[r] = $ix["q1_us"] / 1e3; Q3[r] = $ix["q3_us"] / 1e3; HR[r] = $ix["hit_rate"]
    if (!(gi[g] in lo) || t < lo[gi[g]]) lo[gi[g]] = t
    if (t > hi[gi[g]]) hi[gi[g]] = t
}
# "a=1,b=2" into K[1..m] = names, W[name] = value
function parse(o,   n, i, e, kv) {
    delete K; delete W; n = split(o, kv, ","); m = 0
    for (i = 1; i <= n; i++) if ((e = index(kv[i], "=")) > 0) { K[++m] = substr(kv[i], 1, e - 1); W[K[m]] = substr(kv[i], e + 1) }
    return m
}
# the options (and algo) that differ among sweep s's variants, for variant v; common ones in
# common_of[s]
function keys_of(s,   i, j, m, v, name, val, differs, names, nn) {
    delete differs; nn = 0; delete names; delete val
    for (i = 1; i <= nv[s]; i++) {
        v = vname[s, i]; m = parse(opts_of[s, v])
        for (j = 1; j <= m; j++) {
            name = K[j]
            if (!(name in val)) { val[name] = W[name]; names[++nn] = name; cnt[s, name] = 0 }
            else if (val[name] != W[name]) differs[name] = 1
            cnt[s, name]++
        }
    }
    for (j = 1; j <= nn; j++) if (cnt[s, names[j]] < nv[s]) differs[names[j]] = 1
    multi = 0
    for (i = 2; i <= nv[s]; i++) if (algo_of[s, vname[s, i]] != algo_of[s, vname[s, 1]]) multi = 1
    common_of[s] = multi ? "" : algo_of[s, vname[s, 1]]
    for (j = 1; j <= nn; j++) if (!(names[j] in differs)) common_of[s] = common_of[s] (common_of[s] == "" ? "" : " ") names[j] "=" val[names[j]]
    for (i = 1; i <= nv[s]; i++) {
        v = vname[s, i]; m = parse(opts_of[s, v]); k = multi ? algo_of[s, v] : ""
        for (j = 1; j <= m; j++) if (K[j] in differs) k = k (k == "" ? "" : " ") K[j] "=" W[K[j]]
        key_of[s, v] = k == "" ? algo_of[s, v] : k
    }
}
END {
    print "x", "label", "group", "variant", "sweep", "algo", "options", "median_ms", "q1_ms", "q3_ms", "hit_rate",
          "rel", "baseline", "gi", "key", "common", "ylog", "paper_ms", "paper_rel"
    for (s in nv) { keys_of(s); if (!(s in base)) base[s] = firstv[s] }
    for (r = 1; r <= nr; r++) if (V[r] == base[S[r]]) ref[G[r]] = T[r]
    # rows by group, then declared order
    for (r = 1; r <= nr; r++) key[r] = sprintf("%06d%06d", G[r], order[S[r], V[r]])
    idx[1] = 1
    for (i = 2; i <= nr; i++) { k = key[i]; j = i - 1; while (j >= 1 && key[idx[j]] > k) { idx[j + 1] = idx[j]; j-- }; idx[j + 1] = i }
    x = 0; prev = 0
    for (i = 1; i <= nr; i++) {
        r = idx[i]; g = G[r]; s = S[r]
        if (g != prev) { x = 0; prev = g }
        pm = ((s, V[r]) in paper) ? paper[s, V[r]] : "NaN"
        pr = pm != "NaN" && paper[s, base[s]] > 0 ? pm / paper[s, base[s]] : "NaN"
        print x++, (ng > 1 ? g ":" V[r] : V[r]), gname[g], V[r], s, algo_of[s, V[r]], opts_of[s, V[r]], T[r], Q1[r], Q3[r], HR[r],
              ((g in ref) && ref[g] > 0 ? T[r] / ref[g] : "NaN"), base[s], g, key_of[s, V[r]], common_of[s],
              (lo[g] > 0 && hi[g] / lo[g] > 30 ? 1 : 0), pm, pr
    }
}

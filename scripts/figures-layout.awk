# figures-layout.awk — where each ok cell of scripts/figures.sh's <stem>.tsv goes in the line
# figures (docs/FIGURES.md, "Figures"): its x (the axis X: batch, vocab, k or p), its panel (a row
# of the FACET axes but mode, a column per mode when mode is a FACET axis) and its series (the
# line, then the BY axes, then every other axis that still varies inside one panel, so that a
# series is a function of x). Reads the TSV on stdin-like input (header first); writes the rows
# with the columns fx, frow, fcol, ri, ci, skey, level before the TSV's own, sorted by panel,
# series and x, to stdout, and the layout to the file `meta` (one "name<TAB>value" a line;
# "series" lines list every series in drawing order). Variables: axes (the sweep axes of
# `topkp list`, "name:number" or "name:name" and ":default" when it has one, in harness/plan/axes.c's
# order), X, BY, FACET (may be empty), meta, sweeps (a file of the sweeps' names in declaration
# order, one a line; sweeps not in it come after them, in the order of the rows). mawk-compatible:
# no asort, no gensub.
BEGIN {
    FS = OFS = "\t"
    # the sweep axes of `topkp list` (harness/plan/axes.c), "name:number" or "name:name" each, in
    # the table's order; the sweep comes first and the mode and the line (algo) last
    nt = split(axes, T, " "); nax = 0; AX[++nax] = "sweep"; tableaxes = ""; reversed = ""
    for (i = 1; i <= nt; i++) {
        np = split(T[i], P, ":"); AX[++nax] = P[1]; if (P[2] == "number") numeric[P[1]] = 1
        if (np >= 3 && P[3] != "") dflt[P[1]] = P[3]
        tableaxes = tableaxes " " P[1]; reversed = P[1] " " reversed
    }
    AX[++nax] = "mode"; AX[++nax] = "algo"
    for (i = 1; i <= nax; i++) { known[AX[i]] = 1; axislist = axislist (i > 1 ? ", " : "") AX[i] }
    split("topk topp topk_topp none", M, " ")
    for (i = 1; i <= 4; i++) moderank[M[i]] = i
    title["batch"] = "batch (rows)"; title["vocab"] = "vocabulary V (tokens)"
    title["k"] = "k (top-k)"; title["p"] = "p (top-p)"
    while (sweeps != "" && (getline l < sweeps) > 0) declared[l] = ++ndeclared
}
function fail(msg) { print "figures.sh: " msg > "/dev/stderr"; failed = 1; exit 2 }
# the value of axis a in row r, and how a panel, a key or a title names it
function val(r, a) { return a == "algo" ? R[r, "line"] : R[r, a] }
function off(r, a) { return (a == "k" && (R[r, "k"] <= 0 || R[r, "k"] >= R[r, "vocab"])) || (a == "p" && R[r, "p"] >= 1) }
function lab(r, a,   v) {
    v = val(r, a)
    if (a == "vocab") return "V=" v
    if (a == "batch") return "B=" v
    if (a == "k" || a == "p") return a "=" (off(r, a) ? "off" : sprintf("%g", v))
    return v
}
# a sort key of axis a's value in row r: numbers by value, modes in their order, names in
# order of appearance (lines after their registry rank)
function skey_of(r, a,   v) {
    v = val(r, a)
    if (a in numeric) return sprintf("%022.6f", v + 1e6)
    if (a == "mode") return sprintf("%02d", moderank[v])
    if (a == "algo") return sprintf("%06d%09d", R[r, "sortkey"] + 0, first[a, v])
    if (a == "sweep" && (v in declared)) return sprintf("%09d", declared[v])
    return sprintf("%09d", first[a, v])
}
function has(list, a) { return index(" " list " ", " " a " ") > 0 }
function words_of(s,   n, i, out, W) {   # "a,b" -> "a b", checked against the axes
    gsub(/[ \t]/, "", s); n = split(s, W, ","); out = ""
    for (i = 1; i <= n; i++) {
        if (W[i] == "") continue
        if (!(W[i] in known)) fail("unknown axis '" W[i] "' (the axes: " axislist ")")
        out = out (out == "" ? "" : " ") W[i]
    }
    return out
}
# the distinct values of axis a over the kept rows
function distinct(a,   r, n, s) {
    n = 0; delete s
    for (r = 1; r <= nr; r++) if (keep[r] && !((val(r, a)) in s)) { s[val(r, a)] = 1; n++ }
    return n
}
# does axis a take two values among the kept rows that agree on the axes of `list`?
function varies_within(a, list,   r, g, n, i, A, seen) {
    n = split(list, A, " "); delete seen
    for (r = 1; r <= nr; r++) {
        if (!keep[r]) continue
        g = ""
        for (i = 1; i <= n; i++) g = g SUBSEP val(r, A[i])
        if (!(g in seen)) seen[g] = val(r, a)
        else if (seen[g] != val(r, a)) return 1
    }
    return 0
}
function qword(s) { gsub(/"/, "'", s); return "\"" s "\"" }
# insertion sort of K[1..n] (keys) carrying V[1..n]; n is small (panels, series)
function sort2(K, V, n,   i, j, tk, tv) {
    for (i = 2; i <= n; i++) { tk = K[i]; tv = V[i]; j = i - 1
        while (j >= 1 && K[j] > tk) { K[j + 1] = K[j]; V[j + 1] = V[j]; j-- }
        K[j + 1] = tk; V[j + 1] = tv }
}
NR == 1 { header = $0; for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    nr++; line[nr] = $0; keep[nr] = 1
    nf = split("sweep" tableaxes " mode line sortkey cell", F, " ")
    for (i = 1; i <= nf; i++) R[nr, F[i]] = (F[i] in col) ? $col[F[i]] : ""
    # an axis an older export lacks (dtype) holds its default: a file from before it is f32
    for (a in dflt) if (R[nr, a] == "") R[nr, a] = dflt[a]
    # names in order of the results file's rows (column cell: declaration order for sweeps)
    for (i = 1; i <= nax; i++) { v = val(nr, AX[i]); if (!((AX[i], v) in first) || R[nr, "cell"] + 0 < first[AX[i], v]) first[AX[i], v] = R[nr, "cell"] + 0 }
}
END {
    if (failed) exit 2
    by = words_of(BY); facet = words_of(FACET == "none" ? "" : FACET)
    gsub(/(^| )algo( |$)/, " ", by); gsub(/^ +| +$/, "", by)
    # x: the one asked for, else batch when it varies, else an axis that does (k counting only
    # the values where top-k is on)
    if (X == "") {
        nk = 0; delete sk
        for (r = 1; r <= nr; r++) if (!off(r, "k") && !(R[r, "k"] in sk)) { sk[R[r, "k"]] = 1; nk++ }
        X = distinct("batch") > 1 ? "batch" : nk > 1 ? "k" : distinct("p") > 1 ? "p" : distinct("vocab") > 1 ? "vocab" : "batch"
    }
    if (!(X in numeric)) { for (a in numeric) nums = nums (nums == "" ? "" : ", ") a; fail("X=" X ": the x axis is a numeric axis (" nums ")") }
    if (has(by, X) || has(facet, X)) fail("X=" X " is also a BY or FACET axis")
    n = split(by, B, " ")
    for (i = 1; i <= n; i++) if (has(facet, B[i])) fail("axis " B[i] " is both a BY and a FACET axis")
    # cells with top-k off have no place on a k axis
    dropped = 0
    if (X == "k") for (r = 1; r <= nr; r++) if (R[r, "k"] <= 0) { keep[r] = 0; dropped++ }
    if (FACET == "") {   # default panels: the varying sweep, dataset, vocab; modes as columns
        split("sweep dataset vocab", D, " ")
        for (i = 1; i <= 3; i++) if (distinct(D[i]) > 1 && !has(by, D[i])) facet = facet (facet == "" ? "" : " ") D[i]
        if ((X == "batch" || X == "vocab") && distinct("mode") > 1 && !has(by, "mode")) facet = facet (facet == "" ? "" : " ") "mode"
    }
    rowaxes = facet; gsub(/(^| )mode( |$)/, " ", rowaxes); gsub(/^ +| +$/, "", rowaxes)
    colaxis = has(facet, "mode") ? "mode" : ""
    # a column per mode only when some panel row holds two modes; else the mode names the row
    if (colaxis != "" && !varies_within("mode", rowaxes)) { rowaxes = rowaxes (rowaxes == "" ? "" : " ") "mode"; colaxis = "" }
    # the series: the line (unless algo is a panel axis), BY, then what still varies in a panel
    group = facet " " X (has(facet, "algo") ? "" : " algo") (by == "" ? "" : " " by)
    sers = by
    nc = split(reversed "sweep", C, " ")   # the table's axes, last first, then the sweep
    for (i = 1; i <= nc; i++) {
        a = C[i]
        if (a == X || has(facet, a) || has(sers, a) || !varies_within(a, group)) continue
        sers = sers (sers == "" ? "" : " ") a; group = group " " a
    }
    ns = split(sers, S, " "); nrow_ax = split(rowaxes, RA, " ")
    # the panels' sort order: the sweep, vocab before dataset, then the table's order
    nw = split("sweep vocab dataset" tableaxes " mode algo", W, " "); npri = 0; delete seenpri
    for (i = 1; i <= nw; i++) if (!(W[i] in seenpri)) { seenpri[W[i]] = 1; PRI[++npri] = W[i] }
    # per row: panel, series, and their sort keys
    for (r = 1; r <= nr; r++) {
        if (!keep[r]) continue
        fr = ""; frk = ""
        for (i = 1; i <= nrow_ax; i++) fr = fr (i > 1 ? "/" : "") lab(r, RA[i])
        for (i = 1; i <= npri; i++) if (has(rowaxes, PRI[i])) frk = frk skey_of(r, PRI[i])
        fc = colaxis == "" ? "" : val(r, "mode"); fck = colaxis == "" ? "" : skey_of(r, "mode")
        lv = ""; lvk = ""
        for (i = 1; i <= ns; i++) { lv = lv (i > 1 ? " " : "") lab(r, S[i]); lvk = lvk skey_of(r, S[i]) }
        sk_ = has(facet, "algo") ? (lv == "" ? "all" : lv) : (lv == "" ? R[r, "line"] : R[r, "line"] " " lv)
        ser_k = (has(facet, "algo") ? "" : skey_of(r, "algo")) "|" lvk
        FR[r] = fr; FC[r] = fc; SK[r] = sk_; LV[r] = lv
        if (!(fr in rowkey)) { rowkey[fr] = frk; nrows++; RK[nrows] = frk; RV[nrows] = fr }
        if (!(fc in colkey)) { colkey[fc] = fck; ncols++; CK[ncols] = fck; CV[ncols] = fc }
        if (!(sk_ in serkey)) { serkey[sk_] = ser_k; nser++; SKK[nser] = ser_k; SV[nser] = sk_; SL[sk_] = R[r, "line"]; LVOF[sk_] = lv }
        if (!(lv in lvkey)) { lvkey[lv] = lvk; nlv++; LK[nlv] = lvk; LVV[nlv] = lv }
        xs[R[r, X]] = 1
    }
    sort2(RK, RV, nrows); sort2(CK, CV, ncols); sort2(SKK, SV, nser); sort2(LK, LVV, nlv)
    for (i = 1; i <= nrows; i++) ri[RV[i]] = i
    for (i = 1; i <= ncols; i++) ci[CV[i]] = i
    for (i = 1; i <= nser; i++) si[SV[i]] = i
    for (i = 1; i <= nlv; i++) li[LVV[i]] = i
    nx = 0; for (x in xs) { nx++; XK[nx] = sprintf("%030.9f", x + 0); XV[nx] = x + 0 }
    sort2(XK, XV, nx)
    xvals = ""; for (i = 1; i <= nx; i++) xvals = xvals (i > 1 ? " " : "") XV[i]
    # the axes with one value over every drawn cell, for the figure's subtitle
    fixed = ""
    nfx = split("sweep" tableaxes " mode", Fx, " ")
    for (i = 1; i <= nfx; i++) {
        a = Fx[i]; if (a == X || distinct(a) != 1) continue
        for (r = 1; r <= nr; r++) if (keep[r]) break
        if (a == "sweep") continue
        # a bare value names itself (a dataset, a mode, V=, B=, k=, p=); else "axis=value"
        fixed = fixed (fixed == "" ? "" : ", ") (a == "dataset" || a == "mode" || lab(r, a) != val(r, a) ? lab(r, a) : a "=" lab(r, a))
    }
    rows = ""; for (i = 1; i <= nrows; i++) rows = rows (i > 1 ? " " : "") qword(RV[i] == "" ? "-" : RV[i])
    cols = ""; for (i = 1; i <= ncols; i++) cols = cols (i > 1 ? " " : "") qword(CV[i] == "" ? "-" : CV[i])
    print "x", X > meta; print "xlab", title[X] > meta
    print "xlog", (X == "p" ? 0 : 1) > meta; print "nx", nx > meta; print "xvals", xvals > meta
    print "nrows", nrows > meta; print "ncols", ncols > meta
    print "rows", rows > meta; print "cols", cols > meta
    print "by", sers > meta; print "facet", facet > meta; print "fixed", fixed > meta
    print "levels", nlv > meta
    print "dropped", (dropped ? dropped " cells with top-k off (k <= 0) are not on the k axis" : "") > meta
    # (a series of a figure with a panel per algo has no line of its own: "-")
    for (i = 1; i <= nser; i++) print "series", SV[i], (has(facet, "algo") ? "-" : SL[SV[i]]), li[LVOF[SV[i]]] + 0, nlv > meta
    close(meta)
    print "fx", "frow", "fcol", "ri", "ci", "skey", "level", header
    fflush()
    cmd = "LC_ALL=C sort -t '\t' -k1,1n -k2,2n -k3,3n -k4,4g | cut -f5-"
    for (r = 1; r <= nr; r++) if (keep[r])
        print ri[FR[r]], ci[FC[r]], si[SK[r]], R[r, X], R[r, X], FR[r], FC[r], ri[FR[r]], ci[FC[r]], SK[r], LV[r], line[r] | cmd
    close(cmd)
}

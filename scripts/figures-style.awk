# figures-style.awk — the colour, point type and dash of each series of a figure, from
# plots/palette.tsv (docs/FIGURES.md, "Figures"): a series takes its line's row (an algo, or an algo
# with options), else its algo's row shaded and with a point type chosen by a hash of the line's
# whole name, else a colour and point type chosen by a hash of the algo's name; so an algorithm
# looks the same in every figure of every file. When the series of a figure split a line by
# other axes (BY, layout.txt's "levels" > 1), level j of n is the line's colour lightened
# towards white (the first level lightest) and dashed in the j-th pattern; in a figure with a
# panel per algo (FACET=algo) the series are levels only, on a sequential (viridis) scale.
# A palette row may also give a line width (the paper's kernel is drawn heavier) and the title
# its key shows (a series' title: that title, then what the series adds to its line's name).
# Input: plots/palette.tsv, then layout.txt's "series<TAB>skey<TAB>line<TAB>level<TAB>levels"
# lines. Output: skey<TAB>colour<TAB>point<TAB>dash (a gnuplot dt: 1 solid, 2 dashed, or a
# pattern "(a,b,...)")<TAB>width<TAB>title<TAB>light (the colour lightened: what the figures
# that emphasise a line draw the others in).
BEGIN {
    FS = OFS = "\t"
    for (i = 0; i < 256; i++) ord[sprintf("%c", i)] = i
    split("0 1 2 3 4 5 6 7 8 9 a b c d e f", H, " ")
    for (i = 1; i <= 16; i++) { hexv[H[i]] = i - 1; hexv[toupper(H[i])] = i - 1; hexd[i - 1] = H[i] }
    nfall = split("#E69F00 #56B4E9 #8C564B #7F7F7F #BCBD22 #17BECF #9467BD #1F77B4 #2CA02C #D62728 #E377C2 #6B4C9A", FALL, " ")
    nfill = split("7 5 9 11 13 15", FILLED, " ")
    nopen = split("6 4 8 10 12 14 1 2 3", OPEN, " ")
    nmd = split("1 (8,4) (2,3) (10,4,2,4) (4,4) (12,3,2,3,2,3)", MDASH, " ")
    npd = split("2 (4,4) (10,4,2,4) (2,5) (14,6) (6,3,2,3)", PDASH, " ")
    NV = split("#440154 #3B528B #21918C #5EC962 #C8B400", VIR, " ")   # viridis, its yellow darkened
}
function hash(s,   h, i) { h = 5381; for (i = 1; i <= length(s); i++) h = (h * 33 + ord[substr(s, i, 1)]) % 2147483647; return h }
function hex2(s) { return hexv[substr(s, 1, 1)] * 16 + hexv[substr(s, 2, 1)] }
function tohex(v) { v = int(v + 0.5); v = v < 0 ? 0 : v > 255 ? 255 : v; return hexd[int(v / 16)] hexd[v % 16] }
# colour c mixed with white (t > 0) or black (t < 0) by |t|
function mix(c, t,   i, v, out, target) {
    target = t > 0 ? 255 : 0; t = t < 0 ? -t : t; out = "#"
    for (i = 0; i < 3; i++) { v = hex2(substr(c, 2 + 2 * i, 2)); out = out tohex(v + (target - v) * t) }
    return out
}
function algo_of(name,   n) { n = match(name, /[ :]/); return n ? substr(name, 1, n - 1) : name }
function is_peer(name) { return index(algo_of(name), ".") > 0 }
FNR == NR { if ($0 !~ /^#/ && NF >= 3) { colour[$1] = $2; point[$1] = $3; dashed[$1] = $4 == "dashed"
                                          if ($5 != "") width[$1] = $5; if ($6 != "") title[$1] = $6 }; next }
function emit(skey, c, pt, d, w, t) { print skey, c, pt, d, w, t, mix(c, 0.55) }
# level j of n on a sequential scale (viridis, dark to light), for series that are no line's
function ramp(j, n,   t, i, f) {
    t = n > 1 ? (j - 1) / (n - 1) * (NV - 1) : 0; i = int(t); f = t - i
    if (i >= NV - 1) return VIR[NV]
    return mixto(VIR[i + 1], VIR[i + 2], f)
}
function mixto(a, b, t,   i, u, v, out) {
    out = "#"
    for (i = 0; i < 3; i++) { u = hex2(substr(a, 2 + 2 * i, 2)); v = hex2(substr(b, 2 + 2 * i, 2)); out = out tohex(u + (v - u) * t) }
    return out
}
$1 == "series" && $3 == "-" {   # a panel per algo: the series are levels only
    emit($2, ramp($4, $5), FILLED[1 + ($4 - 1) % nfill], 1, 1.5, $2)
    next
}
$1 == "series" {
    skey = $2; name = $3; level = $4; levels = $5; a = algo_of(name); peer = is_peer(name)
    if (name in colour) { c = colour[name]; pt = point[name] }
    else if (a in colour) {   # an algo with options of its own: shaded, its own point type
        h = hash(name); c = mix(colour[a], (h % 2 ? 0.35 : -0.35)); pt = peer ? OPEN[1 + h % nopen] : FILLED[1 + h % nfill]
        if (pt == point[a]) pt = peer ? OPEN[1 + (h + 1) % nopen] : FILLED[1 + (h + 1) % nfill]
    } else { h = hash(a); c = FALL[1 + h % nfall]; pt = peer ? OPEN[1 + h % nopen] : FILLED[1 + h % nfill] }
    # dashed as its palette row says (the peers), else by its name
    dsh = (name in dashed) ? dashed[name] : (a in dashed) ? dashed[a] : peer
    d = dsh ? PDASH[1] : MDASH[1]
    if (levels > 1) {
        c = mix(c, 0.6 * (1 - (level - 1) / (levels - 1)))
        d = dsh ? PDASH[1 + (level - 1) % npd] : MDASH[1 + (level - 1) % nmd]
    }
    w = (name in width) ? width[name] : (a in width) ? width[a] : 1.5
    t = skey
    if ((name in title) && index(skey, name) == 1) t = title[name] substr(skey, length(name) + 1)
    else if ((a in title) && index(skey, a) == 1) t = title[a] substr(skey, length(a) + 1)
    emit(skey, c, pt, d, w, t)
}

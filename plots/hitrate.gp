# hitrate.gp — the Qrita paper's Table 1 as bars, in three panels one above the other, sharing
# the x axis (a group per dataset/vocabulary, a bar per algorithm/mode): the sigma-truncation
# hit rate (fraction of rows whose gathered outliers held the answer), the mean number of
# outliers gathered N_t (log axis) and the mean outlier mass S_t (top-p's statistic), each bar
# labelled with its value; the key in a row below the panels. Reads the hit-rate TSV of
# scripts/figures.sh (columns x, series, hit_rate, outliers, outlier_mass). Extra variables:
# cats (x labels in order, "dataset/V=vocab": drawn on two lines), hseries, has_st (0: no row
# has an outlier mass, no top-p: the S_t panel is left out, as gnuplot cannot draw it empty),
# ntrange ("lo hi": the smallest and largest N_t above 0).
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
ncat = words(cats)
nser = words(hseries)
# "dataset/V=vocab" on two lines, each group at least as wide as its longer line
catlabel(s) = strstrt(s, "/V=") > 0 ? s[1:strstrt(s, "/V=") - 1]."\n".s[strstrt(s, "/V=") + 1:] : s
catwidth(s) = strstrt(s, "/V=") > 0 ? (strstrt(s, "/V=") - 1 > strlen(s) - strstrt(s, "/V=") ? strstrt(s, "/V=") - 1 : strlen(s) - strstrt(s, "/V=")) : strlen(s)
groupw = 90 + 40 * nser
do for [i = 1:ncat] { groupw = char_px * catwidth(word(cats, i)) + 24 > groupw ? char_px * catwidth(word(cats, i)) + 24 : groupw }
width = 260 + groupw * ncat
width = width < 900 ? 900 : width
width = width < char_px * strlen(label) + 60 ? char_px * strlen(label) + 60 : width
ph = 260.0; gap = 50.0; top = 110.0; xlabh = 60.0; keyh = 50.0
if (!exists("has_st")) has_st = 1
npan = has_st ? 3 : 2
height = top + npan * ph + (npan - 1) * gap + xlabh + keyh
left = 90.0 / width; right = 1 - 30.0 / width
pt(i) = 1 - (top + (i - 1) * (ph + gap)) / height
set style fill solid 0.6 border -1
set boxwidth 0.8 / nser
set xrange [-0.6:ncat - 0.4]
set grid noxtics
# the groups' names under the bottom panel only
xnames = 'set xtics () scale 0 noenhanced; do for [i = 1:ncat] { set xtics add (catlabel(word(cats, i)) i - 1) }'
xplain = 'set xtics () scale 0; do for [i = 1:ncat] { set xtics add ("" i - 1) }' 
# N_t's y range is gnuplot's own; when every bar has the same value it would be empty, and
# gnuplot widens it by 1 % each way with a warning: two unseen lines at those bounds give it
# the same range without one (and the hit-rate panel leaves the log scale before it sets its
# range: the N_t panel of the format drawn before leaves it on, and 0 has no logarithm)
if (!exists("ntrange")) ntrange = ""
ntsame = words(ntrange) == 2 && real(word(ntrange, 1)) == real(word(ntrange, 2))
nt_bounds = !ntsame ? "" : sprintf(', %.17g with lines lc rgb "#FF000000" notitle, %.17g with lines lc rgb "#FF000000" notitle', \
    real(word(ntrange, 1)) * 0.99, real(word(ntrange, 2)) * 1.01)
pick(s, name) = strcol("series") eq s ? column(name) : NaN
val(s, name, fmt) = strcol("series") eq s && column(name) == column(name) && column(name) > 0 ? sprintf(fmt, column(name)) : ""
at = 'set lmargin at screen left; set rmargin at screen right; set tmargin at screen pt(p); set bmargin at screen pt(p) - ph / height'
bars(name, fmt) = sprintf('plot for [i = 1:nser] datafile using "x":(pick(word(hseries, i), "%s")) with boxes lt S[i] lc rgb word(colours, i) title word(hseries, i), \
    for [i = 1:nser] datafile using "x":(pick(word(hseries, i), "%s")):(val(word(hseries, i), "%s", "%s")) with labels offset 0, 0.6 font ",9" notitle', name, name, name, fmt)
body = 'set multiplot title headline("Sigma-truncation statistics (the paper'."'".'s Table 1)") noenhanced; \
    set key at screen 0.5, screen 12.0 / height center bottom horizontal noenhanced samplen 2 spacing 1.2 width 2; \
    p = 1; eval at; set title "hit rate: rows whose gathered outliers held the answer"; eval xplain; \
    unset logscale y; set yrange [0:1.15]; set ytics 0.2; eval bars("hit_rate", "%.2f"); unset key; \
    p = 2; eval at; set title "N_t: mean outliers gathered (log)"; set yrange [*:*]; set ytics autofreq; set logscale y; set format y "%.0s%c"; \
    set offsets 0, 0, graph 0.15, 0; if (!has_st) { eval xnames }; eval bars("outliers", "%.0f").nt_bounds; set offsets 0, 0, 0, 0; \
    if (has_st) { p = 3; eval at; set title "S_t: mean probability mass of the outliers (top-p)"; unset logscale y; set yrange [0:1.15]; set ytics 0.2; \
    set format y "%g"; eval xnames; eval bars("outlier_mass", "%.3f") }; \
    unset multiplot'
eval render

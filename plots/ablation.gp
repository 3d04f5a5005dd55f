# ablation.gp — the Qrita paper's Table 4 as bars (docs/FIGURES.md, "Figures"): a panel per group
# (sweep and shape) with its own y axis (log when its times span more than 30x), a bar per
# variant in declaration order, named by its label, coloured by its algo (plots/palette.tsv),
# with q1-q3 whiskers and its time over the baseline variant's written above it; below the
# panels, a key of what each variant sets (the options that differ among its sweep's variants)
# and what they all share. Reads the ablation TSV of scripts/figures.sh (columns x, gi,
# variant, algo, median_ms, q1_ms, q3_ms, rel, baseline). Variables from figures.sh: gtitles
# (a quoted title per group), gbars (bars per group), glog (1: log axis), keylines (quoted
# key lines), bargroup/barx/barlabels (each bar's group, place and variant: the x tics), lines
# (the algos, for the bar colours). A group of `gpaper` 1 has the paper's times (Table 4, on
# another card): its bars are each run's time over the baseline run's, ours (whiskers q1-q3)
# beside the paper's (grey), each labelled with its ratio. Optional: device (our card's name).
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
ng = words(gbars)
nkeyl = words(keylines)
what = "Ablation: median time per call (ms; whiskers q1-q3); above each bar its time / the baseline's"
if (!exists("gpaper")) gpaper = ""
if (!exists("device")) device = "this run"
if (strstrt(gpaper, "1") > 0) what = what."\nTable 4: each run's time / the baseline run's, ours beside the paper's (H100): the cards differ"
# geometry: panels side by side (at most 1500 px a row), each as wide as its bars need
maxbars = 1
do for [g = 1:ng] { maxbars = int(word(gbars, g)) > maxbars ? int(word(gbars, g)) : maxbars }
longtitle = 0
do for [g = 1:ng] { longtitle = strlen(word(gtitles, g)) > longtitle ? strlen(word(gtitles, g)) : longtitle }
pw = (strstrt(gpaper, "1") > 0 ? 90.0 : 64.0) * maxbars + 40
pw = pw < char_px * longtitle + 20 ? char_px * longtitle + 20 : pw
left = 80.0; right = 30.0; hgap = 90.0
gcols = int((1500 - left - right + hgap) / (pw + hgap))
gcols = gcols < 1 ? 1 : gcols > ng ? ng : gcols
grows = (ng + gcols - 1) / gcols
if (!exists("gcommon")) gcommon = ""
ph = 300.0; vgap = 110.0; top = 24.0 * (2 + (gcommon ne "") + (strstrt(gpaper, "1") > 0)) + 50; below = 50.0
width = left + gcols * pw + (gcols - 1) * hgap + right
longkey = 0
do for [i = 1:nkeyl] { longkey = strlen(word(keylines, i)) > longkey ? strlen(word(keylines, i)) : longkey }
width = width < char_px * longkey + 60 ? char_px * longkey + 60 : width
width = width < char_px * strlen(what) + 60 ? char_px * strlen(what) + 60 : width
width = width < char_px * strlen(label) + 60 ? char_px * strlen(label) + 60 : width
width = width < char_px * strlen(gcommon) + 60 ? char_px * strlen(gcommon) + 60 : width
keyh = 18.0 * nkeyl + 20
height = top + grows * ph + (grows - 1) * vgap + below + keyh
pad = (width - (left + gcols * pw + (gcols - 1) * hgap + right)) / 2
x0(c) = (pad + left + (c - 1) * (pw + hgap)) / width
y1(r) = 1 - (top + (r - 1) * (ph + vgap)) / height
algo_lt(a) = sum [i = 1:nlines] (L[i] eq a ? S[i] : 0)
xg(g) = column("gi") == g ? column("x") : NaN
yg(g, name) = column("gi") == g ? column(name) : NaN
bar(g, i) = column("gi") == g && strcol("algo") eq L[i] ? column("median_ms") : NaN
ratio(g) = column("gi") == g ? (strcol("variant") eq strcol("baseline") ? "1 (base)" : \
    column("rel") == column("rel") ? sprintf("%.2fx", column("rel")) : "") : ""
set style fill solid 0.6 border -1
set boxwidth 0.7
# a group with the paper's times: ratios to the baseline, ours left of each tic, the paper's right
haspaper(g) = words(gpaper) >= g && int(word(gpaper, g)) == 1
scaled(g, name) = column("gi") == g ? column("rel") * column(name) / column("median_ms") : NaN
relbar(g, i) = column("gi") == g && strcol("algo") eq L[i] ? column("rel") : NaN
paperbar(g) = column("gi") == g ? column("paper_rel") : NaN
rlabel(g, name) = column("gi") == g && column(name) == column(name) ? sprintf("%.2f", column(name)) : ""
plot_paper = 'set ylabel "time / run ".word(gbase, g)."''s (x)"; set key top left noenhanced box opaque; \
    plot for [i = 1:nlines] datafile using (xg(g) - 0.21):(relbar(g, i)) with boxes lt S[i] lc rgb word(colours, i) \
             title (i == 1 ? "ours (".device.")" : ""), \
         datafile using (xg(g) + 0.21):(paperbar(g)) with boxes fs pattern 4 lc rgb "#555555" title "the paper (H100)", \
         datafile using (xg(g) - 0.21):(scaled(g, "median_ms")):(scaled(g, "q1_ms")):(scaled(g, "q3_ms")) with yerrorbars lc "black" pt 0 notitle, \
         datafile using (xg(g) - 0.21):(scaled(g, "q3_ms")):(rlabel(g, "rel")) with labels offset 0, 0.7 font ",8" notitle, \
         datafile using (xg(g) + 0.21):(paperbar(g)):(rlabel(g, "paper_rel")) with labels offset 0, 0.7 font ",8" notitle; unset key'
set grid noxtics
unset key
panel = 'r = (g - 1) / gcols + 1; c = (g - 1) % gcols + 1; \
    set lmargin at screen x0(c); set rmargin at screen x0(c) + pw / width; \
    set tmargin at screen y1(r); set bmargin at screen y1(r) - ph / height; \
    set title word(gtitles, g) noenhanced; set xrange [-0.6:int(word(gbars, g)) - 0.4]; \
    if (int(word(glog, g))) { set logscale y; set yrange [*:*]; set offsets 0, 0, graph 0.12, 0 } \
    else { unset logscale y; set yrange [0:*]; set offsets 0, 0, graph 0.12, 0 }; \
    set ylabel "median time (ms)"; set xtics scale 0 noenhanced; \
    set xtics (); do for [j = 1:words(bargroup)] { if (int(word(bargroup, j)) == g) { \
        set xtics add (word(barlabels, j) int(word(barx, j))) } }; \
    if (haspaper(g)) { set boxwidth 0.4; eval plot_paper; set boxwidth 0.7 } else { \
    plot for [i = 1:nlines] datafile using (xg(g)):(bar(g, i)) with boxes lt S[i] lc rgb word(colours, i), \
         datafile using (xg(g)):(yg(g, "median_ms")):(yg(g, "q1_ms")):(yg(g, "q3_ms")) with yerrorbars lc "black" pt 0, \
         datafile using (xg(g)):(yg(g, "q3_ms")):(ratio(g)) with labels offset 0, 0.8 font ",9" }'
keybox = 'set lmargin at screen 0; set rmargin at screen 1; set bmargin at screen 0; \
    set tmargin at screen keyh / height; unset border; unset tics; unset title; unset grid; \
    unset logscale; unset ylabel; unset xlabel; set xrange [0:1]; set yrange [0:1]; \
    do for [i = 1:nkeyl] { set label 100 + i word(keylines, i) at screen 30.0 / width, \
        screen (keyh - 14 - 18.0 * (i - 1)) / height left noenhanced }; \
    plot NaN notitle; unset label'
body = 'set multiplot title headline(what).(gcommon ne "" ? "\n".gcommon : "") noenhanced; \
    do for [g = 1:ng] { eval panel }; \
    if (nkeyl > 0) { eval keybox }; set border; set tics; unset multiplot'
eval render

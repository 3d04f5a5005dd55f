# grid.gp — the panel grid shared by the line figures (time, throughput, speedup, vs_peers,
# memory, peak_memory): one panel per value of the FACET axes (`frows`; a single column of
# them wraps into rows of up to three), one column per mode when mode is a FACET axis
# (`fcols`), x = column fx (the X axis, log unless it is p), y = column `ycol`, one line per
# series of `lines` (column skey; styles from common.gp). Only the panels of `present`
# ("row|column" index words) have data for this figure. The key sits outside the panels:
# along the bottom in as many columns as fit the width, or beside a single column of panels;
# so no entry is cut and none lies over data (docs/FIGURES.md, "Figures"). When the figure has one x
# value (`nx` = 1: a Table-4-like file) each panel is a labelled dot plot instead: a row per
# series, its value on a log axis, written beside the dot.
# Set before loading: what, ycol, ylab, present. Optional: yformat (the y tics' format), yscale
# (a factor on ycol and the error columns: the time figure's us in seconds), vunit (the unit of
# the dot plot's value labels, with an SI prefix; "-": plain numbers), reference (a dotted y
# line, e.g. 1 for speed-ups), errlo/errhi (columns of error bars), floor (memory: zero values
# are drawn on a dotted line at this y, its tic reading "0 B") with ydecades "lo hi".
if (!exists("reference")) reference = NaN
if (!exists("floor")) floor = NaN
if (!exists("errlo")) errlo = ""
if (!exists("errhi")) errhi = ""
if (!exists("nx")) nx = 2
if (!exists("xlog")) xlog = 1
if (!exists("xlab")) xlab = "batch (rows)"
if (!exists("fixed")) fixed = ""
if (!exists("note")) note = ""
if (!exists("yformat")) yformat = "% h"
if (!exists("yscale")) yscale = 1
if (!exists("vunit")) vunit = "-"
if (!exists("xvals")) xvals = ""
# up to 8 x values: a tic at each (a k sweep's 1 8 50 200 1000), else gnuplot's own
data_xtics = words(xvals) >= 1 && words(xvals) <= 8 ? \
    'set xtics (); do for [j = 1:words(xvals)] { xv = real(word(xvals, j)); set xtics add (sprintf("%g", xv) xv) }' : \
    'set xtics autofreq'
nr = words(frows)
nc = words(fcols)
dots = nx == 1
yval(dummy) = (floor == floor && column(ycol) == 0) ? floor : column(ycol) * yscale
err(name) = column(name) * yscale
keep(r, c, i) = column("ri") == r && column("ci") == c && strcol("skey") eq L[i] ? yval(0) : NaN
noisy_at(r, c) = column("ri") == r && column("ci") == c && is_noisy(0) ? yval(0) : NaN
# geometry in pixels (common.gp's char_px: the width of a character of the PNG font); panels
# of a single column wrap into rows of up to three
# (wrapped, only the panels with data take a place: PI[r] is panel r's place among them)
wrap = nc == 1 && nr > 1
array PI[nr]
np = 0
do for [r = 1:nr] { if (strstrt(" ".present." ", " ".r."|1 ") > 0) { np = np + 1 }; PI[r] = np > 0 ? np : 1 }
np = wrap ? (np > 0 ? np : 1) : nr
gc = wrap ? (np <= 3 ? np : np == 4 ? 2 : 3) : nc
gr = wrap ? (np + gc - 1) / gc : nr
prow(r, c) = wrap ? (PI[r] - 1) / gc + 1 : r
pcol(r, c) = wrap ? (PI[r] - 1) % gc + 1 : c
# the panels of a row share a y range: the smallest and largest value of their panels
# (`pranges`: "lo hi" per panel, row by row, "0 0" for none; with `reference`), widened to
# whole decades of the log axis
if (!exists("pranges")) pranges = ""
array RLO[gr]
array RHI[gr]
do for [g = 1:gr] { RLO[g] = NaN; RHI[g] = NaN }
do for [r = 1:nr] { do for [c = 1:nc] { j = 2 * ((r - 1) * nc + c) - 1; \
    if (words(pranges) >= j + 1 && strstrt(" ".present." ", " ".r."|".c." ") > 0 && real(word(pranges, j)) > 0) { \
        lo = real(word(pranges, j)) * yscale; hi = real(word(pranges, j + 1)) * yscale; g = prow(r, c); \
        if (reference == reference) { lo = lo < reference ? lo : reference; hi = hi > reference ? hi : reference }; \
        RLO[g] = (RLO[g] == RLO[g] && RLO[g] < lo) ? RLO[g] : lo; RHI[g] = (RHI[g] == RHI[g] && RHI[g] > hi) ? RHI[g] : hi } } }
ylo(g) = 10.0**floor(log10(RLO[g]) + 1e-9)
yhi(g) = 10.0**ceil(log10(RHI[g]) - 1e-9) > ylo(g) * 1.5 ? 10.0**ceil(log10(RHI[g]) - 1e-9) : ylo(g) * 10
row_yrange = 'if (RLO[prow(r, c)] == RLO[prow(r, c)]) { set yrange [ylo(prow(r, c)):yhi(prow(r, c))] } else { set yrange [*:*] }'
ylabw = dots ? char_px * longest + 30 : 90.0
left = ylabw; right = 30.0; hgap = dots ? 40.0 : 100.0; vgap = 100.0; below = 60.0
longpanel = 0
do for [i = 1:nr] { longpanel = strlen(word(frows, i)) > longpanel ? strlen(word(frows, i)) : longpanel }
do for [i = 1:nc] { longpanel = strlen(word(frows, 1)) + strlen(word(fcols, i)) + 2 > longpanel ? strlen(word(frows, 1)) + strlen(word(fcols, i)) + 2 : longpanel }
pw = char_px * longpanel + 10 > 300 ? char_px * longpanel + 10 : 300.0
ph = dots ? 22.0 * nlines + 50 : 220.0
if (nr * nc == 1 && !dots) { pw = pw < 480 ? 480 : pw; ph = 360.0 }   # one panel: a larger one
titlelines = 2 + (fixed ne "") + (note ne "")
top = 24.0 * titlelines + 40
# the key strip: entries column by column, as many columns as the width holds
nkey = (dots ? 0 : nlines) + (noisy_cells > 0)
colw = char_px * (longest > strlen(noisy_title) || noisy_cells == 0 ? longest : strlen(noisy_title)) + 70
width = left + gc * pw + (gc - 1) * hgap + right
panelsw = width
width = width < colw + 40 ? colw + 40 : width
do for [t in "what label fixed note"] { width = width < char_px * strlen(value(t)) + 60 ? char_px * strlen(value(t)) + 60 : width }
# one column of panels: the key beside them, on the right, in as many columns as its height
# needs; else along the bottom, in as many columns as the width holds
keyright = gc == 1 && nkey > 0
panelsh = gr * ph + (gr - 1) * vgap
rowh = 20
keycols = keyright ? int((nkey * rowh + panelsh - 1) / panelsh) : int((width - 40) / colw)
keycols = keycols < 1 ? 1 : keycols
keyrows = nkey == 0 ? 0 : int((nkey + keycols - 1) / keycols)
strip = nkey == 0 || keyright ? 10 : rowh * keyrows + 24
if (keyright) { width = panelsw + keycols * colw + 20; \
    do for [t in "what label fixed note"] { width = width < char_px * strlen(value(t)) + 60 ? char_px * strlen(value(t)) + 60 : width } }
height = top + panelsh + below + strip
# when the width grew past the panels' (a key or a title wider than them), centre the panels
pad = keyright ? 0 : (width - panelsw) / 2
x0(c) = (pad + left + (c - 1) * (pw + hgap)) / width
y1(r) = 1 - (top + (r - 1) * (ph + vgap)) / height
at_panel = 'set lmargin at screen x0(pcol(r, c)); set rmargin at screen x0(pcol(r, c)) + pw / width; \
    set tmargin at screen y1(prow(r, c)); set bmargin at screen y1(prow(r, c)) - ph / height'
headline_all = what."\n".label.(fixed ne "" ? "\n".fixed : "").(note ne "" ? "\n".note : "")
# the y axis of a figure with a floor: decades as tics, and "0 B" on the floor's dotted line
floor_tics = 'set ytics ("0 B" floor); \
    do for [e = int(word(ydecades, 1)):int(word(ydecades, 2)):ystep] { set ytics add (gprintf("%.0s %cB", 10.0**e) 10.0**e) }; \
    set mytics 10; set yrange [floor / 2.5:10.0**(int(word(ydecades, 2)) + 0.3)]'
if (floor == floor) ystep = (int(word(ydecades, 2)) - int(word(ydecades, 1)) > 8) ? 2 : 1
# a panel's axes: the ranges are reset before an axis turns log, since the key strip of the
# format drawn before (render: PNG, then PDF) leaves [0:width] and [height:0], and a log axis
# over 0 warns "could not confirm linked axis inverse mapping function"
axes_line = 'unset logscale; set xrange [*:*]; set yrange [*:*]; set autoscale xfix; set offsets graph 0.04, graph 0.04, 0, 0; eval data_xtics; if (xlog) { set logscale x }; set logscale y; \
    if (floor == floor) { eval floor_tics } else { set ytics autofreq; eval row_yrange }; \
    set format y yformat; set format x "% h"; set xlabel xlab noenhanced; set ylabel ylab noenhanced'
plot_line = 'plot for [i = 1:(errlo ne "" ? nlines : 0)] datafile using "fx":(keep(r, c, i)):(err(errlo)):(err(errhi)) with yerrorbars lt S[i] dt 1 lw 1 pt 0 notitle, \
    for [i = 1:nlines] datafile using "fx":(keep(r, c, i)) with linespoints lt S[i] title T[i], \
    datafile using "fx":(noisy_at(r, c)) @noisy_style notitle, \
    (reference == reference ? reference : NaN) with lines dt 3 lw 1.5 lc "gray40" notitle, \
    (floor == floor ? floor : NaN) with lines dt 3 lw 1.5 lc "gray40" notitle'
# dot plot: series i at y = i (top down), its value on x, written beside the dot
axes_dots = 'unset logscale; set xrange [*:*]; set logscale x; set yrange [nlines + 0.7:0.3]; set ytics (); set grid xtics ytics; \
    do for [i = 1:nlines] { set ytics add ((pcol(r, c) == 1 ? T[i] : "") i) }; set ytics scale 0 noenhanced; \
    set offsets graph 0.05, graph 0.25, 0, 0; set format x yformat; set xlabel ylab noenhanced; unset ylabel; \
    if (floor == floor) { eval floor_xtics } else { set xrange [*:*]; set xtics autofreq }'
floor_xtics = 'set xtics ("0 B" floor); \
    do for [e = int(word(ydecades, 1)):int(word(ydecades, 2)):ystep] { set xtics add (gprintf("%.0s %cB", 10.0**e) 10.0**e) }; \
    set mxtics 10; set xrange [floor / 2.5:10.0**(int(word(ydecades, 2)) + 0.3)]'
# a value as its label: bytes with a prefix beside a floor, else 3 digits
prefix(e) = e < 1 ? "" : word("k M G T P E", e > 6 ? 6 : e)
bytes(v) = v < 1 ? "0 B" : sprintf("%.3g %sB", v / 1000.0**int(log10(v) / 3), prefix(int(log10(v) / 3)))
# v with an SI prefix and `vunit` (3 digits: "739 us", "1.2 M")
sie(v) = v <= 0 ? 0 : floor(log10(v) / 3 + 1e-9)
siprefix(e) = e > 0 ? word("k M G T P E", e > 6 ? 6 : e) : e < 0 ? word("m u n p f", -e > 5 ? 5 : -e) : ""
si(v) = sprintf("%.3g %s%s", v / 1000.0**sie(v), siprefix(sie(v)), vunit)
vlabel(v) = floor == floor ? bytes(v) : vunit ne "-" ? si(v) : gprintf("%.3g", v)
plot_dots = 'plot for [i = 1:(errlo ne "" ? nlines : 0)] datafile using (keep(r, c, i)):(i):(err(errlo)):(err(errhi)) with xerrorbars lt S[i] dt 1 lw 1 pt 0 notitle, \
    for [i = 1:nlines] datafile using (keep(r, c, i)):(i) with points lt S[i] ps 1.4 title T[i], \
    for [i = 1:nlines] datafile using (keep(r, c, i)):(i):(vlabel(column(ycol) * yscale)) with labels left offset char 1.2, 0 font ",9" notitle, \
    datafile using (noisy_at(r, c)):(0) @noisy_style notitle'
# the key, drawn entry by entry (pixel positions, column by column): a sample of the line
# with its point, then its name; the noisy ring last
keyx0 = keyright ? panelsw : (width - keycols * colw) / 2
keyy0 = keyright ? top + 10 : height - strip + 14
kx(i) = keyx0 + int((i - 1) / keyrows) * colw
ky(i) = keyy0 + ((i - 1) % keyrows) * rowh
key_strip = 'set lmargin at screen 0; set rmargin at screen 1; set bmargin at screen 0; set tmargin at screen 1; \
    unset border; unset tics; unset xlabel; unset ylabel; unset title; unset grid; unset logscale; \
    set xrange [0:width]; set yrange [height:0]; \
    do for [i = 1:(dots ? 0 : nlines)] { \
        set arrow 1000 + i from kx(i), ky(i) to kx(i) + 34, ky(i) nohead lt S[i] front; \
        set label 1000 + i "" at kx(i) + 17, ky(i) point lt S[i] front; \
        set label 2000 + i T[i] at kx(i) + 42, ky(i) left noenhanced front }; \
    if (noisy_cells > 0) { set label 3000 "" at kx(nkey) + 17, ky(nkey) point pt 6 ps 2.2 lc rgb "#999999"; \
        set label 3001 noisy_title at kx(nkey) + 42, ky(nkey) left noenhanced }; \
    plot NaN notitle; unset arrow; unset label'
body = 'set multiplot title headline_all noenhanced; unset key; \
    do for [r = 1:nr] { do for [c = 1:nc] { \
        if (strstrt(" ".present." ", " ".r."|".c." ") > 0) { \
            eval at_panel; P = word(frows, r); M = word(fcols, c); \
            set title (P eq "-" ? "" : P).(P ne "-" && M ne "-" ? "  " : "").(M eq "-" ? "" : M) noenhanced; \
            if (dots) { eval axes_dots; eval plot_dots } else { eval axes_line; eval plot_line } \
        } \
    } }; \
    if (nkey > 0) { eval key_strip }; set border; set tics; set grid; unset multiplot'
eval render

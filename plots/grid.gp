# grid.gp — the panel grid shared by throughput.gp, speedup.gp, vs_peers.gp and memory.gp: one
# row per dataset/vocabulary (`panels`), one column per mode (`modes`), x = batch (log),
# y = column `ycol` (log), one line per name of `lines` (column `line`: modules, then peers, each
# in its style from common.gp), plain (non-ablation) cells only. Panels not listed in `present`
# ("panel|mode" words) have no data for this figure and are left empty. The key sits once, in a
# strip along the bottom as wide as the figure, sized for its entries.
# Noisy cells are ringed (common.gp). Set before loading: what, ycol, ylab, present; optional `reference` (a y value drawn as a
# dotted line, e.g. 1 for speed-ups).
nr = words(panels)
nc = words(modes)
if (!exists("reference")) reference = NaN
keep(P, M, a) = strcol("panel") eq P && strcol("mode") eq M && strcol("line") eq a && \
                strcol("variant") eq "" ? column(ycol) : NaN
# geometry in pixels: margins, gaps, panel size; the key's columns and rows estimated from its
# longest name (gnuplot lays the key out itself, within the strip)
left = 90.0; right = 30.0; top = 80.0; below = 60.0; hgap = 100.0; vgap = 110.0; ph = 220.0
width = 380 * nc + 160
pw = (width - left - right - (nc - 1) * hgap) / nc
keycols = int((width - 20) / (7.5 * longest + 80))
keycols = keycols < 1 ? 1 : keycols
keyrows = (nlines + (noisy_cells > 0) + keycols - 1) / keycols
strip = 19 * keyrows + 16
height = top + nr * ph + (nr - 1) * vgap + below + strip
# screen coordinates of panel (r, c)
x0(c) = (left + (c - 1) * (pw + hgap)) / width
y1(r) = 1 - (top + (r - 1) * (ph + vgap)) / height
at_panel = 'set lmargin at screen x0(c); set rmargin at screen x0(c) + pw / width; \
    set tmargin at screen y1(r); set bmargin at screen y1(r) - ph / height'
key_strip = 'set lmargin at screen 0.01; set rmargin at screen 0.99; set bmargin at screen 0; \
    set tmargin at screen strip / height; unset border; unset tics; unset xlabel; unset ylabel; \
    unset title; unset grid; unset logscale; set key inside center center horizontal noenhanced; \
    plot [0:1] [0:1] for [i = 1:nlines] NaN with linespoints lt S[i] title L[i], \
        NaN @noisy_style title (noisy_cells > 0 ? noisy_title : "")'
body = 'set multiplot title headline(what) noenhanced; unset key; \
    do for [r = 1:nr] { do for [c = 1:nc] { \
        P = word(panels, r); M = word(modes, c); \
        if (strstrt(" ".present." ", " ".P."|".M." ") > 0) { \
            eval at_panel; set title P."  ".M noenhanced; \
            set logscale xy; set xlabel "batch (rows)"; set ylabel ylab; \
            plot for [i = 1:nlines] datafile using "batch":(keep(P, M, L[i])) with linespoints \
                     lt S[i] title L[i], \
                 datafile using "batch":(strcol("panel") eq P && strcol("mode") eq M && \
                     strcol("variant") eq "" && is_noisy(0) ? column(ycol) : NaN) @noisy_style notitle, \
                 (reference == reference ? reference : NaN) with lines dt 3 lw 1.5 lc "gray40" notitle \
        } \
    } }; \
    eval key_strip; set border; set tics; set grid; unset multiplot'
eval render

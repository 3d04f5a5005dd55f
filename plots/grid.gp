# grid.gp — the panel grid shared by throughput.gp, speedup.gp and memory.gp: one row per
# dataset/vocabulary (`panels`), one column per mode (`modes`), x = batch (log), y = column
# `ycol` (log), one line per algorithm of `lines`, plain (non-ablation) cells only. Panels not
# listed in `present` ("panel|mode" words) have no data for this figure and are left empty.
# Set before loading: what, ycol, ylab, lines, present; optional `reference` (a y value drawn
# as a dashed line, e.g. 1 for speed-ups).
nr = words(panels)
nc = words(modes)
width = 380 * nc + 160
height = 320 * nr + 150
if (!exists("reference")) reference = NaN
keep(P, M, a) = strcol("panel") eq P && strcol("mode") eq M && strcol("algo") eq a && \
                strcol("variant") eq "" ? column(ycol) : NaN
# the key sits once, in a row along the bottom of the figure, set on the first panel drawn
# (the top-left one may be empty; render draws body twice, PNG and PDF)
body = 'keyed = 0; set multiplot layout nr, nc title headline(what) noenhanced \
        margins 90.0 / width, 1 - 30.0 / width, 110.0 / height, 1 - 80.0 / height \
        spacing 100.0 / width, 110.0 / height; \
    do for [r = 1:nr] { do for [c = 1:nc] { \
        P = word(panels, r); M = word(modes, c); \
        if (strstrt(" ".present." ", " ".P."|".M." ") == 0) { set multiplot next } else { \
            set title P."  ".M noenhanced; \
            set logscale xy; set xlabel "batch (rows)"; set ylabel ylab; \
            if (!keyed) { set key at screen 0.5, screen 0.01 center bottom horizontal maxcols 8 noenhanced; keyed = 1 } \
            else { unset key }; \
            plot for [a in lines] datafile using "batch":(keep(P, M, a)) with linespoints \
                     lt algo_index(a) title a, \
                 (reference == reference ? reference : NaN) with lines dt 2 lc "gray40" notitle \
        } \
    } }; unset multiplot'
eval render

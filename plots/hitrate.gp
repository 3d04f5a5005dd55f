# hitrate.gp — the Qrita paper's Table 1 as bars: sigma-truncation hit rate (fraction of rows
# whose gathered outliers held the answer) and mean number of outliers N_t, per dataset/
# vocabulary (x) and algorithm/mode (bar colour). Reads the hit-rate TSV of scripts/figures.sh
# (columns x, series, hit_rate, outliers). Extra variables: cats (x labels in order), hseries.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
ncat = words(cats)
nser = words(hseries)
width = 520 + 220 * ncat
height = 560
set style fill solid 0.6 border -1
set boxwidth 0.8 / nser
set xrange [-0.6:ncat - 0.4]
set grid noxtics
set xtics () rotate by 20 right
do for [i = 1:ncat] { set xtics add (word(cats, i) i - 1) }
pick(s, name) = strcol("series") eq s ? column(name) : NaN
body = 'set multiplot layout 1, 2 title headline("Sigma-truncation statistics") noenhanced \
        margins 0.08, 0.97, 150.0 / height, 1 - 80.0 / height spacing 0.08, 0; \
    set title "hit rate (rows whose outliers held the answer)"; set yrange [0:1.12]; unset logscale y; \
    set key at screen 0.5, screen 0.01 center bottom horizontal noenhanced; \
    plot for [i = 1:nser] datafile using "x":(pick(word(hseries, i), "hit_rate")) with boxes lt S[i] lc rgb word(colours, i) title word(hseries, i), \
         for [i = 1:nser] datafile using "x":(pick(word(hseries, i), "hit_rate")):(sprintf("%.2f", column("hit_rate"))) \
             with labels offset 0, 0.6 font ",8" notitle; \
    set title "mean outliers gathered N_t"; set yrange [*:*]; set logscale y; unset key; \
    plot for [i = 1:nser] datafile using "x":(pick(word(hseries, i), "outliers")) with boxes lt S[i] lc rgb word(colours, i) notitle; \
    unset multiplot'
eval render

# ablation.gp — the Qrita paper's Table 4 as bars: median time (ms, q1-q3 whiskers) of each
# variant of every ablation sweep, labelled with its time relative to the group's first
# variant (A). Reads the ablation TSV of scripts/figures.sh (columns x, label, median_ms,
# q1_ms, q3_ms, rel). Extra variables: nbars, groups (what the bars share, for the x label).
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
width = 110 * nbars + 320
height = 560
set style fill solid 0.55 border -1
set boxwidth 0.7
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set xrange [-0.7:nbars - 0.3]
set grid noxtics
unset key
body = 'set title headline("Ablation (median time per call; q1-q3 whiskers; labels: time / first variant)") noenhanced; \
    set ylabel "median time (ms)"; set xlabel groups noenhanced; \
    plot datafile using "x":"median_ms":xtic(strcol("label")) with boxes lc 3, \
         "" using "x":"median_ms":"q1_ms":"q3_ms" with yerrorbars lc "black" pt 0, \
         "" using "x":"q3_ms":(sprintf("%.2fx", column("rel"))) with labels offset 0,0.7 font ",8"'
eval render

# time_vs_batch.gp — median time (with the interquartile range) against batch size, one line
# per algorithm/mode/dataset/vocabulary series, every ok cell of the file in one plot (the
# figure `make run` promises as plots/out/quick.png). `lines` holds the series names (column
# `series`), modules first, then peers in their own style (common.gp).
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
# room for the key beside the plot: one entry per series, as wide as gnuplot reckons the
# longest name (about 11 px a character)
height = 17 * (nlines + 1) + 170 > height ? 17 * (nlines + 1) + 170 : height
width = 11 * longest + 800 > width ? 11 * longest + 800 : width
set logscale xy
set xlabel "batch size (rows)"
set ylabel "median time per call (us)"
set key outside right top noenhanced
set style data yerrorlines
body = 'set title headline("Median time per call (q1-q3 bars)") noenhanced; \
    plot for [i = 1:nlines] datafile using "batch":(strcol("series") eq L[i] ? column("median_us") : NaN):"q1_us":"q3_us" \
        lt S[i] title L[i], \
        datafile using "batch":(is_noisy(0) ? column("median_us") : NaN) @noisy_style \
        title (noisy_cells > 0 ? noisy_title : "")'
eval render

# time_vs_batch.gp — median time (with the interquartile range) against batch size, one line
# per algorithm/mode/dataset/vocabulary series, every ok cell of the file in one plot (the
# figure `make run` promises as plots/out/quick.png). Extra variable: series (their names).
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
set logscale xy
set xlabel "batch size (rows)"
set ylabel "median time per call (us)"
set key outside right top noenhanced
set style data yerrorlines
body = 'set title headline("Median time per call (q1-q3 bars)") noenhanced; \
    plot for [s in series] datafile using "batch":(strcol("series") eq s ? column("median_us") : NaN):"q1_us":"q3_us" title s'
eval render

# throughput.gp — the Qrita paper's Figure 2: throughput (batch rows per second, from the
# median time) against batch size, one panel per vocabulary and mode, one line per algorithm.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Throughput (rows/s = batch / median time)"
ycol = "rows_per_s"
ylab = "rows / s"
yformat = "%.0s%c"
vunit = ""
load dir."/grid.gp"

# time_vs_batch.gp — median time per call with its q1-q3 bars against the X axis (batch by
# default: scripts/figures.sh), one line per series, in the panel grid of grid.gp: the figure
# `make run` promises as plots/out/quick.png.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Median time per call (bars: q1-q3)"
ycol = "median_us"
ylab = "median time per call"
yscale = 1e-6
yformat = "%.0s %cs"
vunit = "s"
errlo = "q1_us"
errhi = "q3_us"
load dir."/grid.gp"

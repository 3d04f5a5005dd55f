# speedup.gp — speed-up over a baseline algorithm (median time of the baseline / median time),
# cell by cell against batch size, one panel per vocabulary and mode. Extra variable: baseline.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Speed-up over ".baseline." (its median time / median time)"
ycol = "speedup"
ylab = "speed-up (x)"
reference = 1
load dir."/grid.gp"

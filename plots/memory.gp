# memory.gp — the Qrita paper's Figure 4: workspace memory the harness allocates for each
# algorithm (bytes, log scale) against batch size, one panel per vocabulary and mode.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Workspace memory per call (bytes)"
ycol = "workspace_bytes"
ylab = "workspace bytes"
load dir."/grid.gp"

# memory.gp — the Qrita paper's Figure 4: the workspace the harness allocates for each
# algorithm per call (bytes, log scale) against the X axis, in the panel grid of grid.gp. A
# module that needs no workspace is drawn on the dotted "0 B" line at the bottom of the axis
# (grid.gp's floor), not left out.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Workspace memory per call (bytes; 0 B: none)"
ycol = "workspace_bytes"
ylab = "workspace"
load dir."/grid.gp"

# peak_memory.gp — the peak device memory of each cell (column peak_device_bytes: the GPU's
# high-water mark during the call, the inputs included; the peers' extra bytes above their
# inputs, docs/PEERS.md) against the X axis, in the panel grid of grid.gp, zero values on its
# "0 B" line.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Peak device memory per call (bytes)"
ycol = "peak_device_bytes"
ylab = "peak device memory"
load dir."/grid.gp"

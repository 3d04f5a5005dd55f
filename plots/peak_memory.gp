# peak_memory.gp — the peak device memory of each cell (column peak_device_bytes: on the GPU,
# the inputs and outputs staged on the device plus the workspace, harness/run/runner.c; a peer's
# extra bytes plus its logits, docs/PEERS.md) against the X axis, in the panel grid of grid.gp,
# zero values on its "0 B" line. Drawn only when some cell has a value.
dir = exists("dir") ? dir : "plots"
load dir."/common.gp"
what = "Peak device memory per call (bytes)"
ycol = "peak_device_bytes"
ylab = "peak device memory"
load dir."/grid.gp"

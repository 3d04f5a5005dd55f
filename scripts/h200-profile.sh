#!/usr/bin/env bash
# h200-profile.sh OUTDIR [BUNDLE] — on the GPU machine: Nsight Compute per-kernel times (clocks
# left alone, caches flushed per kernel) of the small-batch target cells (configs/h200/profile.lua),
# written as OUTDIR/ncu.csv; one line per kernel launch.
set -euo pipefail
out=${1:?usage: h200-profile.sh OUTDIR [BUNDLE]}
bundle=${2:-build/gpu}
ncu --clock-control none --cache-control all -k 'regex:^(qr_|cake|rejection)' \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv "$bundle/topkp" run configs/h200/profile.lua -o /tmp/profile.h5 --backend gpu \
    > "$out/ncu.csv" 2> "$out/ncu.err"

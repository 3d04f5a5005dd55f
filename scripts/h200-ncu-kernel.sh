#!/usr/bin/env bash
# h200-ncu-kernel.sh OUTDIR KERNEL_REGEX [SKIP] [CONFIG] [BUNDLE] — on the GPU machine: the full
# Nsight Compute report (every section: speed of light, memory, scheduler and warp-state stall
# reasons, occupancy, launch statistics) of one launch of the kernels matching KERNEL_REGEX
# (after skipping SKIP matching launches) while CONFIG (default configs/h200/profile.lua) runs,
# as text in OUTDIR/ncu-<regex>-<skip>.txt. Clocks are left alone and caches flushed, as the
# harness measures. Example: qr_search's launch for the third cell of profile.lua is SKIP 6
# (one warm-up and two repetitions per cell).
set -euo pipefail
out=${1:?usage: h200-ncu-kernel.sh OUTDIR KERNEL_REGEX [SKIP] [CONFIG] [BUNDLE]}
kernel=${2:?usage: h200-ncu-kernel.sh OUTDIR KERNEL_REGEX [SKIP] [CONFIG] [BUNDLE]}
skip=${3:-0}
config=${4:-configs/h200/profile.lua}
bundle=${5:-build/gpu}
name=$(printf '%s' "$kernel" | tr -c 'A-Za-z0-9_' '_')
ncu --clock-control none --cache-control all --set full -k "regex:$kernel" \
    --launch-skip "$skip" --launch-count 1 \
    "$bundle/topkp" run "$config" -o "/tmp/ncu-$name.h5" --backend gpu \
    > "$out/ncu-$name-$skip.txt" 2>&1

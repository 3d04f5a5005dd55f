#!/usr/bin/env bash
# h200-campaign.sh OUTDIR [BUNDLE] — on the GPU machine, everything that backs the committed
# H200 results in one go: the GPU tests (bitwise CPU = GPU), the target cells
# (configs/h200/targets.lua), and the paper configs (Figure 2, Tables 1 and 4, Figure 4) on the
# GPU backend. Each stage has a time cap so the whole fits one device call; a stage cut short
# keeps every finished cell. Logs and HDF5 files go to OUTDIR (the device tool's $OUT), to be
# committed under results/h200/ and drawn with `make figures RESULTS=...`.
set -uo pipefail
out=${1:?usage: h200-campaign.sh OUTDIR [BUNDLE]}
bundle=${2:-build/gpu}
export TOPKP=$bundle/topkp
stage() { # stage NAME SECONDS COMMAND...
    local name=$1 secs=$2
    shift 2
    local t0=$SECONDS
    timeout "$secs" "$@" > "$out/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - t0)) s"
}
stage gpu_tests 160 "$bundle/topkp-tests" gpu_
grep -E '^FAIL|passed' "$out/gpu_tests.log"
# config and its time cap in seconds
for spec in h200/targets:80 paper/table1_hitrate:50 paper/table4_ablation:50 \
            paper/fig4_memory:80 paper/fig2_throughput:190; do
    config=${spec%:*}
    name=$(basename "$config")
    stage "$name" "${spec#*:}" "$TOPKP" run "configs/$config.lua" -o "$out/$name.h5" --backend gpu
done

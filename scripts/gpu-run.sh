#!/usr/bin/env bash
# gpu-run.sh CONFIG.lua OUT.h5 [BUNDLE] — on the GPU machine: run a Lua config on the GPU
# backend with the bundled binary and write the HDF5 results file. The device tool brings
# back what a command writes under $OUT, so pass OUT.h5 under $OUT there, then commit it under
# results/h200/ here and draw its figures with `make figures RESULTS=...`.
set -euo pipefail
config=${1:?usage: gpu-run.sh CONFIG.lua OUT.h5 [BUNDLE]}
out=${2:?usage: gpu-run.sh CONFIG.lua OUT.h5 [BUNDLE]}
bundle=${3:-build/gpu}
"$bundle/topkp" run "$config" -o "$out" --backend gpu
"$bundle/topkp" info "$out" | grep -E 'device_name|copy_gbps|git_commit'

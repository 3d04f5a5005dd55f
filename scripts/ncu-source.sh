#!/usr/bin/env bash
# ncu-source.sh OUTDIR KERNEL_REGEX SKIP CONFIG [BUNDLE [NAME [RUN_ARGS...]]] — on the GPU
# machine: one launch of the kernels matching KERNEL_REGEX (after SKIP matching launches) while
# CONFIG runs (`topkp run`, with RUN_ARGS such as --sweep S when given), profiled with
# every section and the per-instruction samples (`--import-source yes`; the bundle is built
# with -lineinfo). Writes OUTDIR/NAME.ncu-rep, the details page as text (NAME.txt) and the
# source page as SASS with each instruction's stall samples and its CUDA source line
# (NAME-sass.csv), where NAME is the regex's letters and SKIP unless given. Clocks are left
# alone and caches flushed, as the harness measures.
set -euo pipefail
usage="usage: ncu-source.sh OUTDIR KERNEL_REGEX SKIP CONFIG [BUNDLE [NAME [RUN_ARGS...]]]"
out=${1:?$usage} kernel=${2:?$usage} skip=${3:?$usage} config=${4:?$usage}
bundle=${5:-build/gpu}
name=${6:-$(printf '%s' "$kernel" | tr -c 'A-Za-z0-9_' '_')-$skip}
shift $(($# < 6 ? $# : 6))
ncu --clock-control none --cache-control all --set full --import-source yes \
    -k "regex:$kernel" --launch-skip "$skip" --launch-count 1 -f -o "$out/$name" \
    "$bundle/topkp" run "$config" -o "/tmp/ncu-$name.h5" --backend gpu "$@" > "$out/$name.log" 2>&1
ncu -i "$out/$name.ncu-rep" --page details > "$out/$name.txt"
ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass,cuda > "$out/$name-sass.csv" ||
    ncu -i "$out/$name.ncu-rep" --page source --csv > "$out/$name-sass.csv"

#!/usr/bin/env bash
# session s7 call C: Figure 2's grid on bf16 logits (sweep fig2_bf16, the modules), then the same
# grid on float32 in the same call (sweep fig2) for as long as the call lasts.
set -u
L=$OUT/work; mkdir -p $L
(cd .gpu-carry && tar -xJf i22.tar.xz)
A=$PWD/.gpu-carry/gpu-i22
export TOPKP=$A/topkp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
M=naive_sort,rtopk,qrita,cake,rejection
t0=$SECONDS
timeout ${T1:-330} $A/topkp run configs/paper/fig2_throughput.lua --backend gpu --only $M --sweep fig2_bf16 \
  -o $OUT/fig2_modules_bf16.h5 > $OUT/fig2_modules_bf16.log 2>&1
echo "fig2_bf16 rc=$? in $((SECONDS - t0)) s, $(grep -c '^\[' $OUT/fig2_modules_bf16.log) cells"; tail -12 $OUT/fig2_modules_bf16.log | cut -c1-220
t0=$SECONDS
timeout ${T2:-180} $A/topkp run configs/paper/fig2_throughput.lua --backend gpu --only $M --sweep fig2 \
  -o $OUT/fig2_modules_f32_same_call.h5 > $OUT/fig2_modules_f32_same_call.log 2>&1
echo "fig2 f32 rc=$? in $((SECONDS - t0)) s, $(grep -c '^\[' $OUT/fig2_modules_f32_same_call.log) cells"

#!/usr/bin/env bash
# h200x2-fig2.sh — the two-H200 measurement of Figure 2 (docs/CLUSTERS.md, "Sweeps across GPUs and
# hosts"), ready for the `nvidia-h200-x2` device kind, not yet run (no such machine has been lent).
# Carry the bundle as .gpu-carry/x2.tar.xz (`tar -cJf .gpu-carry/x2.tar.xz -C build --transform
# 's|^gpu|gpu-x2|' gpu`) and the peers kit as .gpu-carry/peers-kit.tar.xz, then run it with
# `bash scripts/h200x2-fig2.sh` in one call (the one-GPU Figure 2 took 341 s on 2026-12-01,
# results/h200/fig2_throughput.h5). It writes under $OUT:
#   topo.txt            nvidia-smi topo -m and each GPU's copy bandwidth (root copy_gbps of a
#                       one-cell run per device)
#   fig2-2gpu.h5        configs/paper/fig2_throughput.lua on both GPUs (--gpus all), merged
#   fig2-1gpu.h5        the same config on GPU 0 alone, the reference
#   checks.txt          cells/statuses/exactness of the two equal (diff), the per-cell median
#                       ratios (topkp compare), and both wall times
set -u
L=$OUT/work; mkdir -p $L
(cd .gpu-carry && tar -xJf x2.tar.xz && tar -xJf peers-kit.tar.xz && mv peers-kit ../.peers-kit)
source scripts/gpu-peers.sh .peers-kit
T=$PWD/.gpu-carry/gpu-x2/topkp
C=configs/paper/fig2_throughput.lua
{ nvidia-smi topo -m
  for g in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
    $T run configs/quick.lua --backend gpu --device $g --only naive_sort -o $L/bw-$g.h5 > /dev/null 2>&1
    echo "GPU $g copy_gbps $($T info $L/bw-$g.h5 2>/dev/null | awk -F'\t' '$1=="copy_gbps"{print $2; exit}')"
  done; } > $OUT/topo.txt 2>&1
t0=$SECONDS; $T run $C --backend gpu --gpus all -o $OUT/fig2-2gpu.h5 > $L/fig2-2gpu.log 2>&1
w2=$((SECONDS - t0)); echo "2 GPUs rc=$? ${w2} s"
t0=$SECONDS; $T run $C --backend gpu --device 0 -o $OUT/fig2-1gpu.h5 > $L/fig2-1gpu.log 2>&1
w1=$((SECONDS - t0)); echo "1 GPU rc=$? ${w1} s"
key() { $T export $1 2>/dev/null | awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print $(c["sweep"]),$(c["algo"]),$(c["options"]),$(c["dataset"]),$(c["vocab"]),$(c["batch"]),$(c["k"]),$(c["p"]),$(c["dtype"]),$(c["status"]),$(c["rows_checked"]),$(c["rows_exact"])}' | sort; }
{ echo "wall: 2 GPUs ${w2} s, 1 GPU ${w1} s, speed-up $(awk -v a=$w1 -v b=$w2 'BEGIN{printf "%.2f", a / b}')"
  key $OUT/fig2-1gpu.h5 > $L/one.keys; key $OUT/fig2-2gpu.h5 > $L/two.keys
  echo "cells: 1 GPU $(wc -l < $L/one.keys), 2 GPUs $(wc -l < $L/two.keys)"
  diff $L/one.keys $L/two.keys > $L/keys.diff && echo "same cells, statuses, exactness" || head -20 $L/keys.diff
  $T compare $OUT/fig2-1gpu.h5 $OUT/fig2-2gpu.h5 | tail -5; } > $OUT/checks.txt 2>&1
cat $OUT/checks.txt
cd $L && tar -czf $OUT/x2-logs.tgz .

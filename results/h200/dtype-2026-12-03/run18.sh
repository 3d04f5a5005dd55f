#!/usr/bin/env bash
# session s7 call D: Nsight Compute on cake's and rejection's kernels, float32 against bf16, at
# B = 1024, V = 262144 (peers_s1 logits, k = 50, p = 0.9): why bf16 is not faster.
set -u
(cd .gpu-carry && tar -xJf i22.tar.xz)
A=$PWD/.gpu-carry/gpu-i22
for d in f32 bf16; do $A/topkp gen peers_s1 --batch 1024 --vocab 262144 --dtype $d -o /tmp/$d.h5 2>&1 | tail -1; done
for m in cake rejection; do for d in f32 bf16; do
  timeout 35 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats --section ComputeWorkloadAnalysis --launch-skip 0 --launch-count 3 \
    $A/topkp apply $m --in /tmp/$d.h5 --out /tmp/o-$m-$d.h5 --backend gpu --k 50 --p 0.9 --force > $OUT/ncu-$m-$d.txt 2>&1
  echo "$m $d rc=$?"; grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy" $OUT/ncu-$m-$d.txt | head -24
done; done

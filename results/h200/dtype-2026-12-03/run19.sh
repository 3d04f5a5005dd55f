#!/usr/bin/env bash
# session s8 call A: the 16-byte-load build (cake and rejection read 16-bit rows in uint4 of eight
# values): every GPU test, the modules' bf16 targets (f32 and bf16 in one run), and Nsight Compute
# on qrita's, cake's and rejection's kernels, float32 against bf16, at B = 1024, V = 262144.
set -u
L=$OUT/work; mkdir -p $L
(cd .gpu-carry && tar -xJf w16.tar.xz)
A=$PWD/.gpu-carry/gpu-w16
export TOPKP=$A/topkp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
timeout 200 $A/topkp-tests gpu_ > $L/gpu-tests.log 2>&1
echo "gpu tests rc=$? in $((SECONDS - t0)) s"; grep -E "FAIL|passed, " $L/gpu-tests.log | cut -c1-300 | tail -25
t0=$SECONDS
timeout 150 $A/topkp run configs/h200/targets_bf16.lua --backend gpu --sweep topk50_topp09_dtype -o $OUT/targets_bf16_w16.h5 > $L/targets.log 2>&1
echo "targets rc=$? in $((SECONDS - t0)) s"; tail -2 $L/targets.log | cut -c1-200
$A/topkp export $OUT/targets_bf16_w16.h5 2>/dev/null | awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print $(c["algo"]),$(c["batch"]),$(c["vocab"]),$(c["dtype"]),$(c["status"]),$(c["median_us"]),$(c["bw_fraction"])}' 
for d in f32 bf16; do $A/topkp gen peers_s1 --batch 1024 --vocab 262144 --dtype $d -o /tmp/$d.h5 2>&1 | tail -1; done
for m in cake rejection qrita; do for d in f32 bf16; do
  t0=$SECONDS
  timeout 45 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats --section WarpStateStats --launch-skip 0 --launch-count 8 \
    $A/topkp apply $m --in /tmp/$d.h5 --out /tmp/o-$m-$d.h5 --backend gpu --k 50 --p 0.9 --force > $L/ncu-$m-$d.txt 2>&1
  echo "== $m $d rc=$? $((SECONDS - t0)) s"; grep -E "^  [a-zA-Z_].*\(|^    Duration|^    Memory Throughput|^    DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Stall Long" $L/ncu-$m-$d.txt | head -60
done; done
cd $L && tar -czf $OUT/run19-logs.tgz .

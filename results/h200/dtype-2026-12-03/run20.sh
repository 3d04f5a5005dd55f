#!/usr/bin/env bash
# session s8 call B: cake's cross-row L2 prefetch and skipped empty slots (bundle pf) against the
# 16-byte-load build before them (bundle w16), in one call: the GPU tests on pf, the cake cells of
# targets_bf16.lua three ways, twice, alternating (w16; pf; pf with TKP_CAKE_PREFETCH=off), then
# Nsight Compute for the explanations of the bf16 misses (instruction counts at B = 1024, qrita's
# kernels at B = 128, cake at B = 1).
set -u
L=$OUT/work; mkdir -p $L/ab
(cd .gpu-carry && tar -xJf w16.tar.xz && tar -xJf pf.tar.xz)
W=$PWD/.gpu-carry/gpu-w16; P=$PWD/.gpu-carry/gpu-pf
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
TOPKP=$P/topkp timeout 170 $P/topkp-tests gpu_ > $L/gpu-tests-pf.log 2>&1
echo "gpu tests rc=$? in $((SECONDS - t0)) s"; grep -E "FAIL|passed, |prefetch" $L/gpu-tests-pf.log | cut -c1-300 | tail -12
S="configs/h200/targets_bf16.lua --backend gpu --sweep topk50_topp09_dtype --only cake"
for round in 1 2; do
  t0=$SECONDS
  $W/topkp run $S -o $L/ab/w16-$round.h5 > $L/ab/w16-$round.log 2>&1; echo "w16 $round rc=$?"
  $P/topkp run $S -o $L/ab/pf-$round.h5 > $L/ab/pf-$round.log 2>&1; echo "pf $round rc=$?"
  TKP_CAKE_PREFETCH=off $P/topkp run $S -o $L/ab/pfoff-$round.h5 > $L/ab/pfoff-$round.log 2>&1; echo "pfoff $round rc=$? round $((SECONDS - t0)) s"
done
for f in $L/ab/*.h5; do $P/topkp export $f 2>/dev/null | awk -F'\t' -v n=$(basename $f .h5) 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print n,$(c["vocab"]),$(c["batch"]),$(c["dtype"]),$(c["status"]),$(c["median_us"])}'; done | sort -k2,2n -k3,3n -k4,4 -k1,1
(cd $L && tar -czf $OUT/ab.tgz ab)
for d in f32 bf16; do for b in 1 128 1024; do $P/topkp gen peers_s1 --batch $b --vocab 262144 --dtype $d -o /tmp/$d-$b.h5 > /dev/null 2>&1; done; done
N="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats"
run_ncu() { # name module batch dtype [kernel regex] [p]
  local t0=$SECONDS kr=${5:+-k regex:$5}
  timeout 60 $N $kr --launch-count 8 $P/topkp apply $2 --in /tmp/$4-$3.h5 --out /tmp/o.h5 --backend gpu --k 50 --p ${6:-0.9} --force > $L/ncu-$1.txt 2>&1
  echo "== $1 rc=$? $((SECONDS - t0)) s"
  grep -E "^  [a-zA-Z_].*\(|^    Duration|^    DRAM Throughput|Compute \(SM\) Throughput|Executed Instructions  |Issue Slots Busy|Executed Ipc Active|No Eligible|Registers Per" $L/ncu-$1.txt | sed 's/  */ /g' | head -40
}
for d in f32 bf16; do
  run_ncu cake-1024-$d cake 1024 $d; run_ncu rejection-1024-$d rejection 1024 $d
  run_ncu qrita-1024-$d qrita 1024 $d 'qr_scan|qr_search'; run_ncu qrita-128-$d qrita 128 $d
  run_ncu cake-1-$d cake 1 $d; run_ncu qrita-1-$d qrita 1 $d; run_ncu rtopk-1024-$d rtopk 1024 $d '' 1.0
done
cd $L && tar -czf $OUT/run20-logs.tgz --exclude=ab .

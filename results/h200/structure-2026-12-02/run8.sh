#!/usr/bin/env bash
# session s5 call A: the before bundle (51d04d1): all GPU tests (incl. gpu_conformance_*),
# then the targets config's modules twice (the noise between two identical runs).
set -u
mkdir -p $OUT/logs $OUT/h5
(cd .gpu-carry && tar -xJf before.tar.xz)
B=.gpu-carry/gpu-before
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/logs/nvidia-smi.txt 2>&1
t0=$SECONDS
TOPKP=$B/topkp timeout 200 $B/topkp-tests gpu_ > $OUT/logs/gpu-tests-51d04d1.log 2>&1
echo "rc=$? wall $((SECONDS - t0)) s" >> $OUT/logs/gpu-tests-51d04d1.log
tail -3 $OUT/logs/gpu-tests-51d04d1.log
grep -E "FAIL|fail" $OUT/logs/gpu-tests-51d04d1.log | head -20
M=naive_sort,rtopk,qrita,cake,rejection
for i in 1 2; do
  t0=$SECONDS
  timeout 200 $B/topkp run configs/h200/targets.lua --backend gpu --only $M -o $OUT/h5/targets-before-$i.h5 > $OUT/logs/targets-before-$i.log 2>&1
  echo "run $i rc=$? wall $((SECONDS - t0)) s"; tail -4 $OUT/logs/targets-before-$i.log
done
$B/topkp compare $OUT/h5/targets-before-1.h5 $OUT/h5/targets-before-2.h5 > $OUT/logs/compare-before-1-2.txt 2>&1
tail -5 $OUT/logs/compare-before-1-2.txt

#!/usr/bin/env bash
# session s5 call B: the kernel cuts, timed against the build before them in one session:
# the targets config's modules, before / after / before / after; then every GPU test on after.
set -u
mkdir -p $OUT/logs $OUT/h5
(cd .gpu-carry && tar -xJf before.tar.xz && tar -xJf after.tar.xz)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/logs/nvidia-smi.txt 2>&1
M=naive_sort,rtopk,qrita,cake,rejection
for i in 1 2; do
  for b in before after; do
    t0=$SECONDS
    timeout 150 .gpu-carry/gpu-$b/topkp run configs/h200/targets.lua --backend gpu --only $M \
      -o $OUT/h5/targets-$b-$i.h5 > $OUT/logs/targets-$b-$i.log 2>&1
    echo "$b $i rc=$? wall $((SECONDS - t0)) s"
  done
  .gpu-carry/gpu-after/topkp compare $OUT/h5/targets-before-$i.h5 $OUT/h5/targets-after-$i.h5 > $OUT/logs/compare-before-after-$i.txt 2>&1
  tail -1 $OUT/logs/compare-before-after-$i.txt
done
A=.gpu-carry/gpu-after
t0=$SECONDS
TOPKP=$A/topkp timeout 200 $A/topkp-tests gpu_ > $OUT/logs/gpu-tests-after.log 2>&1
echo "gpu tests rc=$? wall $((SECONDS - t0)) s" >> $OUT/logs/gpu-tests-after.log
tail -2 $OUT/logs/gpu-tests-after.log
grep -E "^FAIL|^  " $OUT/logs/gpu-tests-after.log | head -30
# memcheck, initcheck and synccheck on the small set of the after build, all at once, in what
# is left of the call
left=$((575 - SECONDS))
echo "sanitizers with $left s left"
STAGES=sanitizers TOOLS="memcheck initcheck synccheck" SAN_JOBS=80 SAN_TIMEOUT=$((left - 15)) \
  bash scripts/gpu-test.sh $A $OUT/logs/san > $OUT/logs/sanitizers-after.log 2>&1
echo "sanitizers rc=$?" >> $OUT/logs/sanitizers-after.log
grep -c "rc=0 wall" $OUT/logs/sanitizers-after.log; grep -v "rc=0 wall" $OUT/logs/sanitizers-after.log | tail -8 | cut -c1-200
cd $OUT/logs/san && tar -czf ../sanitizer-logs-after.tgz . && cd .. && rm -rf san

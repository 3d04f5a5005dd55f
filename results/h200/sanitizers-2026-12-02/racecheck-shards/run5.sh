#!/usr/bin/env bash
# GPU tests and racecheck on the slowest families (as shards), at once
set -u
mkdir -p $OUT/logs
(cd .gpu-carry && tar -xJf gpu.tar.xz)
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/logs/device.txt
export TOPKP=.gpu-carry/gpu/topkp
( timeout 480 .gpu-carry/gpu/topkp-tests gpu_ > $OUT/logs/gpu-tests.log 2>&1; echo "rc=$? after $(( $(date +%s) - start )) s" >> $OUT/logs/gpu-tests.log ) &
STAGES=sanitizers TOOLS=racecheck SAN_SHARDS=6 SAN_TIMEOUT=480 \
  SMALL=gpu_cases_qrita_force_fallback_every_search,gpu_cases_qrita_pool_16,gpu_cases_qrita_truncation_,gpu_cases_rejection_ \
  timeout 500 bash scripts/gpu-test.sh .gpu-carry/gpu $OUT/logs/racecheck > $OUT/logs/gpu-test.log 2>&1
echo "rc=$? after $(( $(date +%s) - start )) s" >> $OUT/logs/gpu-test.log
wait
cd $OUT/logs/racecheck && tar -czf ../racecheck-logs.tgz . && cd .. && rm -rf racecheck
tail -3 $OUT/logs/gpu-tests.log; grep -E "^FAIL|fail" $OUT/logs/gpu-tests.log | head -20
cut -c1-200 $OUT/logs/gpu-test.log

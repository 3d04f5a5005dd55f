#!/usr/bin/env bash
# the GPU tests alone, then racecheck on rejection's families, one adversarial case a run
set -u
mkdir -p $OUT/logs
(cd .gpu-carry && tar -xJf gpu.tar.xz)
start=$(date +%s)
export TOPKP=.gpu-carry/gpu/topkp
timeout 300 .gpu-carry/gpu/topkp-tests gpu_ > $OUT/logs/gpu-tests.log 2>&1
echo "rc=$? after $(( $(date +%s) - start )) s" >> $OUT/logs/gpu-tests.log
left=$(( 560 - ($(date +%s) - start) ))
STAGES=sanitizers TOOLS=racecheck SAN_SHARDS=17 SAN_TIMEOUT=$left SMALL=gpu_cases_rejection_ \
  timeout $((left + 15)) bash scripts/gpu-test.sh .gpu-carry/gpu $OUT/logs/racecheck > $OUT/logs/gpu-test.log 2>&1
echo "rc=$? after $(( $(date +%s) - start )) s" >> $OUT/logs/gpu-test.log
cd $OUT/logs/racecheck && tar -czf ../racecheck-logs.tgz . && cd .. && rm -rf racecheck
tail -2 $OUT/logs/gpu-tests.log; grep -E "^FAIL|fail" $OUT/logs/gpu-tests.log | head -20
grep -v "rc=0" $OUT/logs/gpu-test.log | cut -c1-200; grep -c "rc=0" $OUT/logs/gpu-test.log

#!/usr/bin/env bash
# session s5 call C: the after build with the qrita stats fix: every GPU test, then racecheck
# (one draw a row, SAN_DRAWS=1): rejection's four families one case a run, then the rest.
set -u
L=$OUT/work; mkdir -p $L
(cd .gpu-carry && tar -xJf after.tar.xz)
A=.gpu-carry/gpu-after
t0=$SECONDS
TOPKP=$A/topkp timeout 150 $A/topkp-tests gpu_ > $L/gpu-tests.log 2>&1
echo "gpu tests rc=$? wall $((SECONDS - t0)) s" >> $L/gpu-tests.log
tail -2 $L/gpu-tests.log; grep -E "^FAIL|^  " $L/gpu-tests.log | head
R=gpu_cases_rejection_,gpu_conformance_matches_cpu_rejection
STAGES=sanitizers TOOLS=racecheck SAN_DRAWS=1 SAN_SHARDS=17 SAN_JOBS=8 SAN_TIMEOUT=240 SMALL=$R \
  timeout $((330 - SECONDS)) bash scripts/gpu-test.sh $A $L/race-rej > $L/racecheck-rejection.log 2>&1
echo "rejection racecheck rc=$? at $SECONDS s" | tee -a $L/racecheck-rejection.log
left=$((570 - SECONDS))
STAGES=sanitizers TOOLS=racecheck SAN_DRAWS=1 SAN_SHARDS=3 SAN_JOBS=8 SAN_TIMEOUT=$((left - 20)) \
  SMALL=gpu_conformance_matches_cpu_cake,gpu_conformance_matches_cpu_naive_sort,gpu_conformance_matches_cpu_qrita,gpu_conformance_matches_cpu_rtopk,gpu_cases_qrita,gpu_cake_chained_matches_cpu_on_adversarial,gpu_qrita_gaussian_b1_topp,gpu_qrita_fused_topp,gpu_rejection_512_threads_list \
  timeout $((left - 5)) bash scripts/gpu-test.sh $A $L/race-rest > $L/racecheck-rest.log 2>&1
echo "rest racecheck rc=$? at $SECONDS s" | tee -a $L/racecheck-rest.log
for f in $L/race-rej/*.log $L/race-rest/*.log; do
  printf '%s %s %s\n' "$(basename $f .log)" "$(grep -m1 -E '^rc=' $f)" "$(grep -m1 'RACECHECK SUMMARY' $f)"
done > $L/racecheck-table.txt
grep -c "rc=0 wall" $L/racecheck-table.txt; grep -vc "rc=0 wall" $L/racecheck-table.txt
grep -v "0 hazards" $L/racecheck-table.txt | head -20
cd $L && tar -czf $OUT/run10-logs.tgz . && cp racecheck-table.txt gpu-tests.log $OUT/

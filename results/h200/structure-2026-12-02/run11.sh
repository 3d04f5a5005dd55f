#!/usr/bin/env bash
# session s5 call D: racecheck (one draw a row) on the small tests call C did not reach.
set -u
L=$OUT/work; mkdir -p $L
(cd .gpu-carry && tar -xJf after.tar.xz)
A=.gpu-carry/gpu-after
STAGES=sanitizers TOOLS=racecheck SAN_DRAWS=1 SAN_JOBS=6 SAN_TIMEOUT=200 \
  SMALL=gpu_conformance_matches_cpu_naive_sort,gpu_conformance_matches_cpu_rtopk,gpu_conformance_matches_cpu_qrita,gpu_qrita_gaussian_b1_topp,gpu_qrita_fused_topp,gpu_rejection_512_threads_list \
  timeout 225 bash scripts/gpu-test.sh $A $L/race > $L/racecheck.log 2>&1
echo "racecheck rc=$? at $SECONDS s" | tee -a $L/racecheck.log
for f in $L/race/*.log; do
  printf '%s %s %s\n' "$(basename $f .log)" "$(grep -m1 -E '^rc=' $f)" "$(grep -m1 'RACECHECK SUMMARY' $f)"
done > $OUT/racecheck-table-d.txt
cat $OUT/racecheck-table-d.txt | cut -c1-160
cd $L && tar -czf $OUT/run11-logs.tgz .

#!/usr/bin/env bash
# session s7 call A: racecheck (one draw a row) on the rejection tests and shards no earlier call finished.
set -u
L=$OUT/work; mkdir -p $L/race
(cd .gpu-carry && tar -xJf abi3.tar.xz)
A=$PWD/.gpu-carry/gpu-abi3
export TOPKP=$A/topkp L A
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{ for t in gpu_cases_rejection_forced_clusters_match_cpu gpu_conformance_matches_cpu_rejection gpu_cases_rejection_one_cta_per_row_match_cpu; do
    for s in $(seq 0 16); do echo "$t $s 17"; done; done
  echo "gpu_cases_rejection_fallback_matches_cpu 1 17"
  echo "gpu_cases_qrita_truncation_off_every_search 1 3"; } > $L/jobs.txt
run_one() {
  local t=$1 s=$2 n=$3 log=$L/race/racecheck-$1-$2-of-$3.log t0=$SECONDS
  TKP_CASE_DRAWS=1 TKP_CASE_SHARD=$s/$n timeout 420 compute-sanitizer --tool racecheck --error-exitcode 3 \
    $A/topkp-tests $t > $log 2>&1
  echo "rc=$? wall $((SECONDS - t0)) s" >> $log
}
export -f run_one
timeout 540 xargs -P 14 -L 1 bash -c 'run_one "$@"' _ < $L/jobs.txt
echo "xargs rc=$? at $SECONDS s"
for f in $L/race/*.log; do
  printf '%s %s %s\n' "$(basename $f .log)" "$(grep -m1 -E '^rc=' $f)" "$(grep -m1 'RACECHECK SUMMARY' $f)"
done | sort > $OUT/racecheck-table-s7a.txt
cut -c1-170 $OUT/racecheck-table-s7a.txt
cd $L && tar -czf $OUT/run15-logs.tgz .

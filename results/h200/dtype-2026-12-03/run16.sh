#!/usr/bin/env bash
# session s7 call B: every GPU test (16-bit ones included) on the i22 bundle, the bf16 targets
# (modules and peers, one run), then memcheck on the 16-bit tests and racecheck on the rejection
# shards earlier calls did not finish.
set -u
L=$OUT/work; mkdir -p $L/san
(cd .gpu-carry && tar -xJf i22.tar.xz)
A=$PWD/.gpu-carry/gpu-i22
export TOPKP=$A/topkp L A
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
timeout 240 $A/topkp-tests gpu_ > $L/gpu-tests.log 2>&1
echo "gpu tests rc=$? in $((SECONDS - t0)) s"; grep -E "FAIL|passed, " $L/gpu-tests.log | cut -c1-300 | tail -25
tar -xJf .gpu-carry/peers-kit.tar.xz && mv peers-kit .peers-kit
source scripts/gpu-peers.sh .peers-kit
t0=$SECONDS
timeout 170 $A/topkp run configs/h200/targets_bf16.lua --backend gpu -o $OUT/targets_bf16.h5 > $L/targets_bf16.log 2>&1
echo "targets_bf16 rc=$? in $((SECONDS - t0)) s"; tail -4 $L/targets_bf16.log | cut -c1-200
$A/topkp export $OUT/targets_bf16.h5 2>/dev/null | awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print $(c["algo"]),$(c["variant"]),$(c["batch"]),$(c["vocab"]),$(c["dtype"]),$(c["status"]),$(c["median_us"]),$(c["bw_fraction"])}' | column -t | head -80
run_one() {  # tool test shard of timeout
  local log=$L/san/$1-$2-$3-of-$4.log t0=$SECONDS
  TKP_CASE_DRAWS=1 TKP_CASE_SHARD=$3/$4 timeout $5 compute-sanitizer --tool $1 --error-exitcode 3 $A/topkp-tests $2 > $log 2>&1
  echo "rc=$? wall $((SECONDS - t0)) s" >> $log
}
export -f run_one
{ for t in $($A/topkp-tests --list gpu_ | grep -E '^gpu_conformance_(bf16|f16)_matches'); do echo "memcheck $t 0 1 200"; done
  for s in 0 1 8 9 10 11 12 13 14 15 16; do echo "racecheck gpu_cases_rejection_one_cta_per_row_match_cpu $s 17 200"; done
  for s in 1 8; do echo "racecheck gpu_conformance_matches_cpu_rejection $s 17 200"; done
  echo "racecheck gpu_cases_qrita_truncation_off_every_search 1 3 200"
  echo "racecheck gpu_cases_rejection_fallback_matches_cpu 1 17 200"; } > $L/jobs.txt
timeout 215 xargs -P 14 -L 1 bash -c 'run_one "$@"' _ < $L/jobs.txt
for f in $L/san/*.log; do
  printf '%s %s %s\n' "$(basename $f .log)" "$(grep -m1 -E '^rc=' $f)" "$(grep -m1 -E '(RACECHECK|ERROR) SUMMARY' $f)"
done | sort > $OUT/sanitizer-table-s7b.txt
cut -c1-170 $OUT/sanitizer-table-s7b.txt
cd $L && tar -czf $OUT/run16-logs.tgz .

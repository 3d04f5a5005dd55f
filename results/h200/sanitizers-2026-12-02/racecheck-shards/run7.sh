#!/usr/bin/env bash
# racecheck alone (4 runs, no other load) on single rejection cases that did not finish under load
set -u
mkdir -p $OUT/logs/racecheck
(cd .gpu-carry && tar -xJf gpu.tar.xz)
export TOPKP=.gpu-carry/gpu/topkp
run() { # test shard
  ( t0=$SECONDS; TKP_CASE_SHARD=$2/17 timeout 430 compute-sanitizer --tool racecheck --error-exitcode 3 \
      .gpu-carry/gpu/topkp-tests $1 > $OUT/logs/racecheck/racecheck-$1-$2-of-17.log 2>&1
    echo "rc=$? wall $((SECONDS - t0)) s $1 shard $2/17 $(grep -m1 'RACECHECK SUMMARY' $OUT/logs/racecheck/racecheck-$1-$2-of-17.log)" ) &
}
run gpu_cases_rejection_fallback_matches_cpu 15
run gpu_cases_rejection_fallback_matches_cpu 16
run gpu_cases_rejection_matches_cpu 8
run gpu_cases_rejection_forced_clusters_match_cpu 15
wait
cd $OUT/logs/racecheck && tar -czf ../racecheck-alone-logs.tgz . && cd .. && rm -rf racecheck

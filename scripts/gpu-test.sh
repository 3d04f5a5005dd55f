#!/usr/bin/env bash
# gpu-test.sh [BUNDLE [LOGDIR]] — on the GPU machine: every GPU test (bitwise CPU = GPU on the
# adversarial suite, samplers, determinism; the min-p ones again with TKP_MINP_FORCE_COUNT=1),
# then compute-sanitizer memcheck, racecheck,
# initcheck and synccheck on the small adversarial cases of every module (docs/GPU-MACHINE.md, "The
# GPU"; run it after any change to a kernel and commit its logs under results/h200/).
# BUNDLE is the folder `make gpu-bundle` wrote (build/gpu). Each (tool, test) pair runs as its
# own process (SAN_JOBS at a time, default 4), its log in LOGDIR.
# TOOLS="racecheck initcheck" runs some of the four tools only; STAGES=sanitizers skips the
# plain GPU tests; SAN_TIMEOUT=S stops each sanitizer run after S s; SMALL="a,b" checks those
# tests instead of the small set; SAN_SHARDS=N splits each test's adversarial cases over N
# runs (TKP_CASE_SHARD, tests/cases.c), for racecheck's slowest families; SAN_DRAWS=N runs
# the two-run checks with N draws a row (TKP_CASE_DRAWS) under the sanitizers. Prints "N passed,
# N failed" for the GPU tests and one line per sanitizer run; exits non-zero when anything
# failed or no small test was found.
set -uo pipefail
bundle=${1:-build/gpu}
logdir=${2:-$(mktemp -d)}
stages=${STAGES:-all}
export TOPKP=$bundle/topkp
mkdir -p "$logdir"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
if [[ $stages == all ]]; then
    echo "== GPU tests"
    "$bundle/topkp-tests" gpu_ 2>&1 | tee "$logdir/gpu-tests.log" | tail -3
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    # min-p's count over the row on every min-p row (docs/SEMANTICS.md, "min-p"): the path the
    # fold from part of a row falls back on, rare on the cases otherwise
    echo "== GPU tests with min-p counted over the row (TKP_MINP_FORCE_COUNT=1)"
    TKP_MINP_FORCE_COUNT=1 "$bundle/topkp-tests" \
        gpu_conformance,gpu_batch_invariance,gpu_graph,gpu_qrita_gaussian,gpu_cases_ 2>&1 |
        tee "$logdir/gpu-tests-minp-count.log" | tail -3
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    # cake's variant of 256 threads a CTA (algos/cake/README.md, "Two CTAs a SM")
    echo "== cake's GPU tests on its 256-thread variant (TKP_CAKE_THREADS=256)"
    cake_tests=gpu_cake,gpu_conformance_matches_cpu_cake,gpu_conformance_bf16_matches_cpu_cake
    cake_tests+=,gpu_conformance_f16_matches_cpu_cake,gpu_conformance_sampler_tv_cake
    TKP_CAKE_THREADS=256 "$bundle/topkp-tests" "$cake_tests,gpu_batch_invariance_cake" 2>&1 |
        tee "$logdir/gpu-tests-cake256.log" | tail -3
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    # qrita's rows past B = #SMs searched by a warp each
    # (algos/qrita/README.md, "Past B = #SMs"): under heavy_n=auto the suite's B = 200 hands
    # every row with candidates to a block; TKP_QRITA_HEAVY_N=4096 keeps them with their warps
    # (the default past 264 rows)
    echo "== qrita's GPU tests with rows past #SMs searched by a warp (TKP_QRITA_HEAVY_N=4096)"
    TKP_QRITA_HEAVY_N=4096 "$bundle/topkp-tests" \
        gpu_qrita_gaussian_b200,gpu_conformance_tiled_matches_cpu_qrita,gpu_batch_invariance_qrita 2>&1 |
        tee "$logdir/gpu-tests-qrita-heavy.log" | tail -3
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
# Every module of the registry on every adversarial case through its defaults
# (gpu_conformance_matches_cpu_<module>, tests/test_conformance.c: a new module is sanitized
# with no entry here), then the knobs whose kernels the defaults do not reach.
small=(gpu_conformance_matches_cpu_
    gpu_conformance_bf16_matches_cpu_ gpu_conformance_f16_matches_cpu_  # the same on 16-bit rows
    gpu_cases_                   # qrita's truncation x search, dedup, autotune, caps; rejection's fallback and clusters
    gpu_cake_chained_matches_cpu_on_adversarial
    gpu_qrita_gaussian_b1_topp   # the fused top-p search at B = 1 (window and gather)
    gpu_qrita_fused_topp         # the fused top-p search on every adversarial case (V = 1, 7, ...)
    gpu_rejection_512_threads_list)  # the 512-thread kernel's listed pass 1 and its overflow
if ! command -v compute-sanitizer >/dev/null; then
    echo "compute-sanitizer not found: sanitizer stage not run"
    exit 1
fi
# Each selected test on its own: racecheck takes minutes over a whole family.
filter=${SMALL:-$(IFS=,; echo "${small[*]}")}
shards=${SAN_SHARDS:-1}
mapfile -t tests < <("$bundle/topkp-tests" --list "$filter")
if [[ ${#tests[@]} == 0 ]]; then
    echo "no test matches $filter: sanitizer stage not run"
    exit 1
fi
# At most SAN_JOBS runs at a time (default 4): the GPU time-slices between processes, and 68
# racecheck runs at once finished none of the rejection cases that take about a minute alone
# (results/h200/sanitizers-2026-12-02/README.md).
names=()
logs=()
for tool in ${TOOLS:-memcheck racecheck initcheck synccheck}; do
    for test in "${tests[@]}"; do
        for ((shard = 0; shard < shards; shard++)); do
            part=$([[ $shards == 1 ]] || echo "-$shard-of-$shards")
            log="$logdir/$tool-$test$part.log"
            while (($(jobs -rp | wc -l) >= ${SAN_JOBS:-4})); do
                wait -n
            done
            (
                t0=$SECONDS
                TKP_CASE_DRAWS=${SAN_DRAWS:-} TKP_CASE_SHARD=$shard/$shards timeout "${SAN_TIMEOUT:-0}" compute-sanitizer \
                    --tool "$tool" --error-exitcode 3 "$bundle/topkp-tests" "$test" >"$log" 2>&1
                echo "rc=$? wall $((SECONDS - t0)) s" >>"$log"
            ) &
            names+=("$tool $test$part")
            logs+=("$log")
        done
    done
done
wait
echo "== compute-sanitizer: ${#logs[@]} runs (${TOOLS:-4 tools} x ${#tests[@]} small tests x $shards shards)"
for i in "${!logs[@]}"; do
    end=$(grep -m1 -E '^rc=[0-9]+ wall' "${logs[$i]}")
    printf '%-10s %s  %s | %s\n' "${names[$i]}" "$end" \
        "$(grep -m1 -E 'passed, [0-9]+ failed' "${logs[$i]}")" \
        "$(grep -m1 'ERROR SUMMARY' "${logs[$i]}")"
    [[ $end == rc=0\ * ]] || status=1
done
exit $status

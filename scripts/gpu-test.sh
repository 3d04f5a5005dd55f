#!/usr/bin/env bash
# gpu-test.sh [BUNDLE] — on the GPU machine: every GPU test (bitwise CPU = GPU on the
# adversarial suite, samplers, determinism), then compute-sanitizer memcheck, racecheck,
# initcheck and synccheck on the small adversarial cases of every module (README.md, "GPU";
# run it after any change to a kernel and commit its log under results/h200/). BUNDLE is the folder `make gpu-bundle` wrote (build/gpu).
# Prints "N passed, N failed" per stage; exits non-zero when anything failed.
set -uo pipefail
bundle=${1:-build/gpu}
export TOPKP=$bundle/topkp
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
echo "== GPU tests"
"$bundle/topkp-tests" gpu_ || status=1
small=gpu_cases_,gpu_naive_sort_matches_cpu_on_adversarial,gpu_rtopk_matches_cpu_on_adversarial
small=$small,gpu_cake_matches_cpu_on_adversarial,gpu_cake_chained_matches_cpu_on_adversarial
small=$small,gpu_qrita_gaussian_b1_topp # the fused top-p search at B = 1 (window and gather)
small=$small,gpu_qrita_fused_topp # the fused top-p search on every adversarial case (V = 1, 7, ...)
small=$small,gpu_rejection_512_threads_list # the 512-thread kernel's listed pass 1 and its overflow
if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck initcheck synccheck; do
        echo "== compute-sanitizer $tool (small cases)"
        compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/topkp-tests" "$small" \
            || status=1
    done
else
    echo "compute-sanitizer not found: sanitizer stage not run"
    status=1
fi
exit $status

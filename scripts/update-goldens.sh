#!/usr/bin/env bash
# update-goldens.sh — rewrite tests/golden/*.plan, the CPU --dry-run plans of the shipped configs
# that tests/test_plans.c compares against. Run it after changing a config on purpose, and
# read the diff before committing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TOPKP:-$top/build/topkp}
cd "$top"
for config in configs/*.lua configs/*/*.lua; do
    name=$(echo "${config#configs/}" | tr / _)
    "$bin" run "$config" --dry-run --backend cpu > "tests/golden/${name%.lua}.plan"
done
ls tests/golden

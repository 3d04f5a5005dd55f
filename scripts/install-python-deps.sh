#!/usr/bin/env bash
# install-python-deps.sh — the Python side (scripts/dump_logits.py and its test) needs torch,
# h5py and numpy for the system interpreter /usr/bin/python3; scripts/topkp_results.py h5py,
# numpy and (optionally) pandas. On Debian they come from
# Debian's packages (python3-torch 1.13.1 on bookworm, CPU only: about 145 MB to download,
# 0.8 GB on disk, a minute or two); only what is missing is installed.
#
# Why not pip: the machine's default `python3` may be a pyenv interpreter without numpy; the
# Debian packages install for /usr/bin/python3, which is what the script and the tests use.
#
# `make test-deps` (and so `make test` and CI) runs it on every call: when /usr/bin/python3
# already finds the four modules (however they were installed) it returns at once, without
# importing torch (seconds) or asking dpkg.
set -euo pipefail
found() {
    /usr/bin/python3 -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ("torch", "h5py", "numpy", "pandas")))' 2>/dev/null
}
found && exit 0
bash "$(dirname "$0")/install-deps.sh" python3-torch python3-h5py python3-numpy python3-pandas
/usr/bin/python3 -c 'import torch, h5py, numpy' || {
    echo "install-python-deps.sh: installed, but /usr/bin/python3 cannot import them" >&2
    exit 1
}

#!/usr/bin/env bash
# install-python-deps.sh — the Python side (scripts/dump_logits.py and its test) needs torch,
# h5py and numpy for the system interpreter /usr/bin/python3. On Debian they come from
# Debian's packages (python3-torch 1.13.1 on bookworm, CPU only: 172 packages, about 145 MB to
# download, 0.8 GB on disk, a minute or two). Only what is missing is installed, and
# `apt-get update` runs only when the package lists do not know python3-torch yet. Quiet and
# quick when everything is present.
#
# Why not pip: the machine's default `python3` may be a pyenv interpreter without numpy; the
# Debian packages install for /usr/bin/python3, which is what the script and the tests use.
set -euo pipefail
want=(python3-torch python3-h5py python3-numpy)
missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-python-deps.sh: no apt-get here; install ${missing[*]} (or torch, h5py and" \
         "numpy for /usr/bin/python3) by hand" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# A candidate version means the lists are there; otherwise fetch them first.
candidate="$(apt-cache policy python3-torch 2>/dev/null | awk '/Candidate:/ { print $2 }')"
if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
    $sudo apt-get update -qq
    candidate="$(apt-cache policy python3-torch 2>/dev/null | awk '/Candidate:/ { print $2 }')"
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        echo "install-python-deps.sh: this system's package lists have no python3-torch" >&2
        exit 1
    fi
fi
echo "installing: ${missing[*]} (python3-torch $candidate)"
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
/usr/bin/python3 -c 'import torch, h5py, numpy' || {
    echo "install-python-deps.sh: installed, but /usr/bin/python3 cannot import them" >&2
    exit 1
}

#!/usr/bin/env bash
# install-deps.sh [PACKAGE...] — apt-get installs only the Debian packages that are missing:
# by default what the build, `make run` and the tests need (a C compiler, Lua 5.4, HDF5 and
# its tools, gnuplot, patchelf); other scripts pass their own list (paper/build.sh the TeX
# packages, scripts/install-python-deps.sh torch and h5py, `make test-deps` slurm-wlm and munge
# for tests/test_slurm.c, `make fuzz` clang, libclang-rt-dev
# and libomp-dev). `apt-get update` runs only when the package lists do not know a missing
# package. Quiet and quick when everything is present.
set -euo pipefail
want=("$@")
[ ${#want[@]} -gt 0 ] ||
    want=(build-essential pkg-config liblua5.4-dev libhdf5-dev zlib1g-dev hdf5-tools gnuplot-nox patchelf)
missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null || { echo "install-deps.sh: no apt-get; install ${missing[*]} by hand" >&2; exit 1; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt=($sudo apt-get -o DPkg::Lock::Timeout=900)
known() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }' | grep -qv '(none)'; }
known "${missing[0]}" || "${apt[@]}" update -qq
echo "installing: ${missing[*]}"
DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"

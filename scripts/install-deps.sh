#!/usr/bin/env bash
# install-deps.sh — apt-get installs only what is missing: Lua 5.4, HDF5 (library and tools),
# gnuplot, pkg-config and a C compiler. Quiet and quick when everything is present.
set -euo pipefail
want=(build-essential pkg-config liblua5.4-dev libhdf5-dev hdf5-tools gnuplot-nox patchelf)
missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

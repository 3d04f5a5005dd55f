#!/usr/bin/env bash
# fetch-cccl.sh DIR — CUB 3.3+'s headers for the native peer cub.topk (docs/PEERS.md,
# "cub.topk"): PyPI's nvidia-cuda-cccl 13.3 wheel, downloaded with pip (no install) and unpacked
# into DIR, whose include/cccl/ the Makefile's CCCL_133 then names. Quick when DIR has them.
set -euo pipefail
dir=${1:-.cccl-133}
version=${CCCL_VERSION:-13.3.*}
if [[ -f $dir/include/cccl/cub/device/device_topk.cuh ]]; then
    echo "fetch-cccl: $dir/include/cccl already holds CUB's DeviceTopK"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "nvidia-cuda-cccl==$version"
wheel=$(ls "$tmp"/nvidia_cuda_cccl-*.whl)
python3 - "$wheel" "$tmp/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
include=$(dirname "$(find "$tmp/x" -path '*/include/cccl/cub/device/device_topk.cuh' | head -1)")
[[ -n $include ]] || { echo "fetch-cccl: $wheel has no cub/device/device_topk.cuh" >&2; exit 1; }
mkdir -p "$dir"
rm -rf "$dir/include"
cp -r "${include%/cccl/cub/device}" "$dir/include"
basename "$wheel" > "$dir/WHEEL"
echo "fetch-cccl: $(cat "$dir/WHEEL") -> $dir/include/cccl (CUB $(sed -n 's/^#define CUB_VERSION \([0-9]*\).*/\1/p' "$dir/include/cccl/cub/version.cuh"))"

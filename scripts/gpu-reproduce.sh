#!/usr/bin/env bash
# gpu-reproduce.sh [BUDGET] — one device call of `make reproduce` on the GPU machine
# (docs/CAMPAIGN.md, "On a GPU machine"): unpacks the bundle .gpu-carry/gpu.tar.xz into build/gpu
# (once per machine), installs the peers kit (.peers-kit, scripts/gpu-peers.sh), finds the
# campaign folder under build/campaign/ (restoring it from .gpu-carry/campaign.tar on a fresh
# machine), runs the chunks that are not yet ok for at most BUDGET seconds (default 560: the
# device tool's calls stop at 600), and packs the folder into $OUT/campaign.tar, the one file
# to bring back (the tool returns at most 8). Call it again until it prints "not ok: none".
set -uo pipefail
budget=${1:-560}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
out=${OUT:?gpu-reproduce.sh runs on the GPU machine, where the device tool sets OUT}
t0=$SECONDS
if [[ ! -x build/gpu/topkp ]]; then
    [[ -f .gpu-carry/gpu.tar.xz ]] || { echo "no build/gpu and no .gpu-carry/gpu.tar.xz (make gpu-bundle, then tar)" >&2; exit 1; }
    mkdir -p build && tar -xJf .gpu-carry/gpu.tar.xz -C build || exit 1
fi
# shellcheck source=scripts/gpu-peers.sh
source scripts/gpu-peers.sh .peers-kit || echo "no peers kit: the peers' cells will read unsupported"
export TRITON_CACHE_DIR=$top/build/triton-cache # kept between calls on a warm machine
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader

folders=(build/campaign/*/campaign.tsv)
if [[ ! -f ${folders[0]} && -f .gpu-carry/campaign.tar ]]; then
    mkdir -p build/campaign && tar -xf .gpu-carry/campaign.tar -C build/campaign
    folders=(build/campaign/*/campaign.tsv)
fi
((${#folders[@]} <= 1)) || { echo "several campaign folders under build/campaign: ${folders[*]}" >&2; exit 1; }
args=()
[[ -f ${folders[0]} ]] && args=(--out "$(dirname "${folders[0]}")")
echo "setup $((SECONDS - t0)) s"
RESULTS_ROOT=build/campaign TOPKP=build/gpu/topkp bash scripts/reproduce.sh --backend gpu \
    --budget $((budget - (SECONDS - t0) - 15)) "${args[@]}"
rc=$?
folders=(build/campaign/*/campaign.tsv)
[[ -f ${folders[0]} ]] || { echo "no campaign folder under build/campaign" >&2; exit 1; }
folder=$(dirname "${folders[0]}")
tar -cf "$out/campaign.tar" -C build/campaign "$(basename "$folder")" && ls -l "$out/campaign.tar"
exit $rc

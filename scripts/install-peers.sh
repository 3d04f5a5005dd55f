#!/usr/bin/env bash
# install-peers.sh [--cpu] — the peer libraries of docs/PEERS.md from PyPI, in a
# virtual environment .venv-peers/ at the repository root, which topkp uses when TOPKP_PYTHON
# is unset. Default: torch, numpy, flashinfer-python and vllm (a GPU machine with CUDA);
# --cpu: torch and numpy only (the peers with a CPU path: torch.sort, torch.sample, torch.topk;
# vllm.pytorch needs vllm). No peer needs sgl-kernel: SGLang's sampler calls FlashInfer's
# sampler (docs/PEERS.md, "SGLang"). Ends with `topkp list`'s peers section: what imports now.
# The GPU machine of this project has no package registry: there scripts/gpu-peers.sh
# installs the prebuilt kit instead.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(torch numpy flashinfer-python vllm)
for arg in "$@"; do
    case $arg in
        --cpu) packages=(torch numpy) ;;
        *) echo "usage: install-peers.sh [--cpu]" >&2; exit 2 ;;
    esac
done
python3 -m venv .venv-peers
.venv-peers/bin/python -m pip install -q --upgrade pip
echo "install-peers.sh: pip install ${packages[*]} into .venv-peers/"
.venv-peers/bin/python -m pip install -q "${packages[@]}"
[ -x build/topkp ] || make -s build/topkp
build/topkp list | sed -n '/^peers:/,/^datasets:/p' | grep -E '^  [a-z]|importable'

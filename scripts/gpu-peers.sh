#!/usr/bin/env bash
# gpu-peers.sh [KIT] — source it on the GPU machine (no package registry) before `topkp run`:
# installs the two wheels of the prebuilt peers kit (../shared/peers-kit, carried to the
# machine in the git-ignored folder KIT, default .peers-kit) into /tmp/peers-site and exports
# PYTHONPATH so that the kit's vLLM and FlashInfer files import under their usual names, with
# FlashInfer's JIT off (a missing prebuilt module fails at once instead of compiling).
#   source scripts/gpu-peers.sh && build/gpu/topkp list | grep -A3 '^  vllm'
kit=${1:-.peers-kit}
if [ ! -d "$kit/py" ]; then
    echo "gpu-peers.sh: no peers kit at $kit (copy ../shared/peers-kit there)" >&2
    return 1 2>/dev/null || exit 1
fi
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/peers-site "$kit"/whl/*.whl
export PYTHONPATH="/tmp/peers-site:$(cd "$kit/py" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
export FLASHINFER_DISABLE_JIT=1 FLASHINFER_WORKSPACE_BASE=/tmp/peers-flashinfer-ws
export FLASHINFER_LOGGING_LEVEL=warning

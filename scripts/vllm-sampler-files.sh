#!/usr/bin/env bash
# vllm-sampler-files.sh — assemble OUT/vllm (default .vllm-src/, git-ignored, never committed):
# the peers kit's vLLM 0.33.0 files and stand-ins (.peers-kit/README.md), vLLM's v1 Sampler
# and the vllm/v1/sample/ files it imports, copied unchanged from a vLLM source tree, and our
# stand-ins for the rest of vLLM that they import. scripts/vllm_sampler_client.py runs the
# result (docs/PYTHON.md, "A real client").
#   scripts/vllm-sampler-files.sh --from DIR [--rev REV] [--kit DIR] [--out DIR]
# --from: a vLLM git checkout (with --rev: the files at that revision, `git show`), or any
# directory holding vllm/v1/sample/sampler.py (an unpacked vLLM wheel, site-packages).
set -euo pipefail
cd "$(dirname "$0")/.."
FROM= REV= KIT=.peers-kit OUT=.vllm-src
while [ $# -gt 0 ]; do
    case "$1" in
        --from) FROM=$2; shift 2 ;; --rev) REV=$2; shift 2 ;;
        --kit) KIT=$2; shift 2 ;; --out) OUT=$2; shift 2 ;;
        *) echo "vllm-sampler-files.sh: unknown argument '$1' (see the header)" >&2; exit 2 ;;
    esac
done
# The one list of the upstream files taken (beside the kit's): the Sampler and its imports
# from vllm/v1/sample/.
UPSTREAM="vllm/v1/sample/sampler.py vllm/v1/sample/metadata.py vllm/v1/sample/ops/bad_words.py
vllm/v1/sample/ops/logprobs.py vllm/v1/sample/ops/penalties.py"
[ -n "$FROM" ] || { echo "vllm-sampler-files.sh: --from DIR is required (a vLLM source tree)" >&2; exit 2; }
[ -d "$KIT/py/vllm" ] || { echo "vllm-sampler-files.sh: no peers kit at $KIT (no $KIT/py/vllm; --kit DIR)" >&2; exit 2; }
rm -rf "$OUT/vllm"
mkdir -p "$OUT"
cp -r "$KIT/py/vllm" "$OUT/vllm"
find "$OUT/vllm" -name __pycache__ -prune -exec rm -rf {} +
for f in $UPSTREAM; do
    mkdir -p "$OUT/$(dirname "$f")"
    if [ -n "$REV" ]; then
        git -C "$FROM" show "$REV:$f" > "$OUT/$f" \
            || { echo "vllm-sampler-files.sh: $FROM has no $f at $REV" >&2; exit 1; }
    else
        [ -f "$FROM/$f" ] || { echo "vllm-sampler-files.sh: $FROM/$f is missing" >&2; exit 1; }
        cp "$FROM/$f" "$OUT/$f"
    fi
done

# Stand-ins (ours): the kit's platform and Triton shims assume a GPU; these keep them for a
# GPU and give vLLM's platform-neutral answers (forward_native, the PyTorch op) on a CPU.
V=$OUT/vllm
mv "$V/platforms/__init__.py" "$V/platforms/kit_cuda.py"
cat > "$V/platforms/__init__.py" <<'EOF'
# Stand-in (topkp, scripts/vllm-sampler-files.sh): the kit's CUDA platform where a GPU is
# visible, else a platform that is neither CUDA, CPU nor XPU, so that TopKTopPSampler takes
# forward_native (the path it takes on CUDA with FlashInfer's sampler off).
import torch

from .interface import CpuArchEnum, DeviceCapability  # noqa: F401
from .kit_cuda import _CudaPlatform


class _NeutralPlatform:
    device_type = device_name = "cpu"
    simple_compile_backend = "inductor"

    def __getattr__(self, name):
        if name.startswith("is_"):
            return lambda *a, **k: False
        raise AttributeError(f"stand-in platform has no {name}")


_CudaPlatform.simple_compile_backend = "inductor"
current_platform = _CudaPlatform() if torch.cuda.is_available() else _NeutralPlatform()
EOF
mv "$V/triton_utils/__init__.py" "$V/triton_utils/kit.py"
cat > "$V/triton_utils/__init__.py" <<'EOF'
# Stand-in (topkp, scripts/vllm-sampler-files.sh): the kit's Triton shim where a GPU and
# Triton are present, else HAS_TRITON = False (vLLM's answer without Triton).
import importlib.util

import torch

HAS_TRITON = torch.cuda.is_available() and importlib.util.find_spec("triton") is not None
if HAS_TRITON:
    from .kit import LOG2E, LOGE2, tl, triton  # noqa: F401
EOF
cat >> "$V/utils/platform_utils.py" <<'EOF'


# Stand-in (topkp, scripts/vllm-sampler-files.sh): pinned memory wherever CUDA is.
def is_pin_memory_available() -> bool:
    import torch

    return torch.cuda.is_available()
EOF
cat > "$V/utils/torch_utils.py" <<'EOF'
# Stand-in (topkp, scripts/vllm-sampler-files.sh): only penalties use this; the client
# runs without penalties.
def make_tensor_with_pad(*args, **kwargs):
    raise NotImplementedError("stand-in: penalties are not carried")
EOF
mkdir -p "$V/model_executor/layers"
: > "$V/model_executor/layers/__init__.py"
cp "$V/utils/torch_utils.py" "$V/model_executor/layers/utils.py"
sed -i 's/make_tensor_with_pad/apply_penalties/' "$V/model_executor/layers/utils.py"
cat > "$V/v1/outputs.py" <<'EOF'
# Stand-in (topkp, scripts/vllm-sampler-files.sh): the two output types sampler.py builds.
from dataclasses import dataclass
from typing import NamedTuple

import torch


class LogprobsTensors(NamedTuple):
    logprob_token_ids: torch.Tensor
    logprobs: torch.Tensor
    selected_token_ranks: torch.Tensor


@dataclass
class SamplerOutput:
    sampled_token_ids: torch.Tensor
    logprobs_tensors: LogprobsTensors | None
EOF
mkdir -p "$V/v1/sample/logits_processor"
cat > "$V/v1/sample/logits_processor/__init__.py" <<'EOF'
# Stand-in (topkp, scripts/vllm-sampler-files.sh): the processors a batch carries, by kind.
class LogitsProcessors:
    def __init__(self, argmax_invariant=(), non_argmax_invariant=()):
        self.argmax_invariant = list(argmax_invariant)
        self.non_argmax_invariant = list(non_argmax_invariant)
EOF
(cd "$OUT" && find vllm -type f -name '*.py' | sort | xargs sha256sum) > "$OUT/MANIFEST"
echo "vllm-sampler-files.sh: $OUT/vllm ready ($(wc -l < "$OUT/MANIFEST") files, $OUT/MANIFEST);" \
     "upstream from $FROM${REV:+ at $REV}"

"""catalog.py — every peer the bridge knows (docs/PEERS.md): a name the Lua configs use, the
package it calls, the devices it runs on, and `prepare(cell) -> Call`. harness/module/peers.c holds
the same names with their ops, outputs and options, for `topkp list` and config checks; the
test suite checks that the two lists agree."""
import flashinfer_peers
import sglang_peers
import torch_peers
import vllm_peers

PEERS = torch_peers.PEERS + vllm_peers.PEERS + flashinfer_peers.PEERS + sglang_peers.PEERS


def find(name):
    for peer in PEERS:
        if peer.name == name:
            return peer
    raise KeyError(f"no peer named {name!r}")


def drop_caches():
    """Drop the workspaces peers create lazily and keep, so a call's memory counts them."""
    for module in (vllm_peers, flashinfer_peers):
        module.drop_caches()


def device_broken(torch):
    """True when the CUDA context is unusable (a sticky error): the harness restarts us."""
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    try:
        torch.cuda.synchronize()
        return False
    except Exception:  # noqa: BLE001
        return True

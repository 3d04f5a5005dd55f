"""catalog.py — every peer the bridge knows (docs/PEERS.md): a name the Lua configs use, the
package it calls, the devices it runs on, and `prepare(cell) -> Call`. harness/peers.c holds
the same names with their ops, outputs and options, for `topkp list` and config checks; the
test suite checks that the two lists agree."""
import importlib
import sys


class Peer:
    def __init__(self, name, package, modules, devices, prepare):
        self.name = name
        self.package = package      # the distribution whose version is reported
        self.modules = modules      # what must import for the peer to run
        self.devices = devices      # ("cpu", "cuda") or ("cuda",)
        self.prepare = prepare
        self._available = None

    def available(self):
        """(True, "package version") or (False, why it cannot be imported here)."""
        if self._available is None:
            try:
                for m in self.modules:
                    importlib.import_module(m)
                self._available = (True, f"{self.package} {version_of(self.package)}")
            except Exception as e:  # noqa: BLE001  any import failure makes the peer unavailable
                self._available = (False, f"{self.package} cannot be imported: {type(e).__name__}: {e}")
        return self._available


def version_of(package):
    try:
        from importlib import metadata
        return metadata.version(package)
    except Exception:  # noqa: BLE001  a vendored copy has no distribution metadata
        module = sys.modules.get(package.replace("-python", "").replace("-", "_"))
        return getattr(module, "__version__", "(version unknown)")


import flashinfer_peers  # noqa: E402
import sglang_peers  # noqa: E402
import torch_peers  # noqa: E402
import vllm_peers  # noqa: E402

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

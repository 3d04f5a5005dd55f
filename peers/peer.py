"""peer.py — one peer of the bridge (docs/PEERS.md): its name, the package it calls, the
modules that must import, the devices it runs on and `prepare(cell) -> Call`; the family
modules (torch_peers.py, vllm_peers.py, ...) build their lists of these, catalog.py joins them."""
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

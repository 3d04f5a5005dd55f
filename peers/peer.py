"""peer.py — one peer of the bridge (docs/PEERS.md): its name, the package it calls, the
modules that must import, the devices it runs on, what it does with 16-bit logits (`cast`) and
`prepare(cell) -> Call`; the family modules (torch_peers.py, vllm_peers.py, ...) build their
lists of these, catalog.py joins them."""
import importlib
import sys


# What a peer does with a 16-bit cell's logits (docs/PEERS.md, "16-bit logits"): its library
# reads them as they are, or needs float32 and the timed call starts with the cast x.float().
NATIVE = "native"
FLOAT32 = "float32"


class Peer:
    def __init__(self, name, package, modules, devices, prepare, cast, cast_note):
        self.name = name
        self.package = package      # the distribution whose version is reported
        self.modules = modules      # what must import for the peer to run
        self.devices = devices      # ("cpu", "cuda") or ("cuda",)
        self.prepare = prepare
        if cast not in (NATIVE, FLOAT32):
            raise ValueError(f"{name}: cast {cast!r} is neither {NATIVE!r} nor {FLOAT32!r}")
        self.cast = cast            # NATIVE or FLOAT32
        self.cast_note = cast_note  # how, in a few words
        self._available = None

    def cast_text(self):
        """The `cast` note the worker reports: "native: ..." or "float32: ..."."""
        return f"{self.cast}: {self.cast_note}"

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

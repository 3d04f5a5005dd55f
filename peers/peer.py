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
    def __init__(self, name, package, modules, devices, prepare, cast, cast_note, row_keys=False):
        self.name = name
        self.package = package      # the distribution whose version is reported
        self.modules = modules      # what must import for the peer to run
        self.devices = devices      # ("cpu", "cuda") or ("cuda",)
        # row_keys: the peer draws with per-row seeds and offsets when a cell asks (the
        # row_keys axis); a peer without them is `unsupported` there rather than drawing
        # otherwise (docs/SEMANTICS.md, "Sampling: two keying modes")
        self.prepare = prepare if row_keys else without_row_keys(name, prepare)
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


def without_row_keys(name, prepare):
    def prepare_batch_keyed(cell):
        if cell.request.get("row_keys", "0") == "1":
            from cell import Unsupported
            raise Unsupported(f"{name} takes no per-row seeds and offsets (row_keys = 1)")
        return prepare(cell)
    return prepare_batch_keyed


def version_of(package):
    try:
        from importlib import metadata
        return metadata.version(package)
    except Exception:  # noqa: BLE001  a vendored copy has no distribution metadata
        module = sys.modules.get(package.replace("-python", "").replace("-", "_"))
        return getattr(module, "__version__", "(version unknown)")

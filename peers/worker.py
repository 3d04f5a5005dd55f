#!/usr/bin/env python3
"""worker.py — the peer bridge's Python side (docs/PEERS.md).

`topkp run` starts this script once and talks to it over its stdin and stdout, one request
line and one reply line at a time (tab-separated `key=value` fields after a command word).
The harness owns the logits (it writes the very bytes its modules read to a raw little-endian
file: float32, or the uint16 encodings of a bf16 / f16 cell), the stopping rule, the oracle and
the results file; this side only loads the logits (as a float32, bfloat16 or float16 tensor),
calls one peer library, times each call between two CUDA events (or the host clock on the
CPU) with L2 flushed first, and hands back the kept masks or draws. A peer library may print
to stdout: the protocol therefore runs on a private copy of the original stdout, and fd 1 is
pointed at stderr before any peer is imported.

Requests (replies are `ok ...`, `unsupported msg=...`, `oom msg=...` or `error msg=...`):
  probe                          one `peer name=.. available=0|1 info=.. cast=..` line per peer,
                                 then ok
  open peer= logits= rows= device=cpu|cuda flush_bytes= vocab= batch= k= p= seed=
       dtype=f32|bf16|f16 options=
                                 -> ok crc=<crc32 of the file's bytes> info=<package version>
                                    cast=<what the peer does with 16-bit logits>
                                 (fields in any order; vocab= ... dtype= are the sweep axes
                                 harness/plan/axes.def marks TKP_AXIS_PEER, all in Cell.request)
  graph                          (a cell opened with graph=1, after its warm-up) capture the
                                 peer's call once as a CUDA graph; `rep` and `fetch` then
                                 replay it -> ok, or unsupported msg=<why it cannot be captured>
  rep flush=0|1                  one timed call (or replay) -> ok us=<microseconds>
  fetch kept=PATH samples=PATH draws=N
                                 an untimed call whose output is written to PATH(s)
                                 -> ok extra_bytes=<peak device bytes beyond the inputs>
  close                          drop the cell's tensors -> ok
"""
import os
import sys
import time
import traceback
import zlib

PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import catalog  # noqa: E402
from cell import Cell, Unsupported  # noqa: E402

HOLD_US = 1000  # the GPU-side wait between the L2 flush and the start event (Session.hold)
KEEP_FILES = 6  # logits files kept loaded, the newest (the harness's cache keeps up to 8)
# Test hook: TOPKP_PEER_FAULT=WHAT[:PEER] makes every `rep` of PEER's cells (of every peer's,
# without :PEER) raise, hang, exit, exit leaving a child that holds the pipes (orphan) or write
# into the input logits (write), or makes `open` report a wrong CRC (WHAT = crc).
FAULT, _, FAULT_PEER = os.environ.get("TOPKP_PEER_FAULT", "").partition(":")


def clean(text):
    """One protocol field: no tabs or newlines, at most 400 characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= 400 else text[:397] + "..."


def reply(status, **fields):
    parts = [status] + [f"{k}={clean(v)}" for k, v in fields.items()]
    PROTO.write("\t".join(parts) + "\n")


# The element types of the harness's logits files (docs/PEERS.md, "16-bit logits"): the tag of
# the `open` request and of the file's name (logits-<n>.<tag>), the little-endian integer type
# of the same width that numpy reads, and the torch type those bits are viewed as.
DTYPES = {"f32": ("<i4", 4, "float32"), "bf16": ("<i2", 2, "bfloat16"), "f16": ("<i2", 2, "float16")}


def device_checksum(x):
    """Two sums of the logits' bit patterns, on the tensor's device: a write changes them."""
    import torch
    bits = x.view(torch.int32 if x.element_size() == 4 else torch.int16)
    low = 0xFFFF if x.element_size() == 4 else 0xFF
    return int(bits.sum(dtype=torch.int64)), int((bits & low).sum(dtype=torch.int64))


def read_logits(torch, path, dtype, rows, vocab):
    """The harness's file as a host tensor [rows, vocab] of its type, and the file's bytes.
    A tag that is not f32/bf16/f16, a file named for another type, or a file of another size
    is an error naming the file."""
    import numpy as np
    if dtype not in DTYPES:
        raise ValueError(f"{path}: element type {dtype!r} is not one of {', '.join(DTYPES)}")
    suffix = path.rsplit(".", 1)[-1] if "." in os.path.basename(path) else ""
    if suffix in DTYPES and suffix != dtype:
        raise ValueError(f"{path} is named as a {suffix} file but the request reads it as {dtype}")
    numpy_type, size, torch_type = DTYPES[dtype]
    raw = open(path, "rb").read()
    if rows <= 0 or vocab <= 0 or len(raw) != rows * vocab * size:
        raise ValueError(f"{path}: {len(raw)} bytes, expected {rows} x {vocab} {dtype} values "
                         f"({rows * vocab * size} bytes)")
    bits = np.frombuffer(raw, dtype=numpy_type).reshape(rows, vocab).copy()
    return torch.from_numpy(bits).view(getattr(torch, torch_type)), raw


def parse(line):
    words = line.rstrip("\n").split("\t")
    fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words[0], fields


class Session:
    """The state between requests: the torch module, loaded files, the open cell."""

    def __init__(self):
        self.torch = None
        self.files = {}   # (path, dtype, device) -> (tensor [rows, V] on it, CRC-32, device_checksum)
        self.cell_key = None  # the files key of the open cell
        self.cell = None
        self.call = None
        self.graph = None  # (torch.cuda.CUDAGraph, its output) once `graph` captured the call
        self.peer = None
        self.flush = None
        self.cycles_per_us = None

    def need_torch(self):
        if self.torch is None:
            import torch
            self.torch = torch
        return self.torch

    def load(self, key, rows, vocab):
        """The harness's raw file, once per key (path, dtype, device): a request that reads a
        loaded file as another type reads it again, and fails read_logits' checks."""
        path, dtype, device = key
        if key not in self.files:
            host, raw = read_logits(self.need_torch(), path, dtype, rows, vocab)
            while len(self.files) >= KEEP_FILES:  # the oldest first (dicts keep insertion order)
                self.files.pop(next(iter(self.files)))
            logits = host.to(device)
            self.files[key] = (logits, zlib.crc32(raw), device_checksum(logits))
        return self.files[key][:2]

    def open(self, f):
        self.close()
        peer = catalog.find(f["peer"])
        ok, info = peer.available()
        if not ok:
            raise Unsupported(info)
        device = f["device"]
        if device not in peer.devices:
            raise Unsupported(f"{peer.name} runs on {' and '.join(peer.devices)} only")
        torch = self.need_torch()
        if device == "cuda" and not torch.cuda.is_available():
            raise Unsupported("torch sees no CUDA device")
        rows, batch, vocab = int(f["rows"]), int(f["batch"]), int(f["vocab"])
        if not 0 < batch <= rows:
            raise ValueError(f"{f['logits']}: the cell reads {batch} rows of its {rows}")
        self.cell_key = (f["logits"], f.get("dtype", "f32"), device)
        logits, crc = self.load(self.cell_key, rows, vocab)
        options = dict(o.split("=", 1) for o in f.get("options", "").split(",") if "=" in o)
        self.cell = Cell(torch, logits[:batch], int(f["k"]), float(f["p"]), int(f["seed"]),
                         options, request=f)
        self.peer = peer.name
        self.call = peer.prepare(self.cell)
        nflush = int(f.get("flush_bytes", "0"))
        if device == "cuda" and nflush > 0 and (self.flush is None or self.flush.numel() != nflush):
            self.flush = torch.empty(nflush, dtype=torch.uint8, device=device)
        return {"crc": crc + self.faulty("crc"), "info": info, "cast": peer.cast_text()}

    def faulty(self, what):
        return FAULT == what and FAULT_PEER in ("", self.peer)

    def rep(self, f):
        if self.faulty("raise"):
            raise RuntimeError("TOPKP_PEER_FAULT=raise")
        if self.faulty("hang"):
            time.sleep(3600)
        if self.faulty("exit"):
            os._exit(3)
        if self.faulty("orphan") and os.fork() != 0:  # the child keeps the pipes open
            os._exit(3)
        if self.faulty("orphan"):
            time.sleep(3600)
        if self.faulty("write"):
            self.cell.logits.add_(1.0)
        call = self.call
        call.reset()
        run = self.graph[0].replay if self.graph else call.run
        if self.cell.device.type != "cuda":
            t0 = time.perf_counter_ns()
            call.run()
            return {"us": f"{(time.perf_counter_ns() - t0) * 1e-3:.3f}"}
        torch = self.torch
        if f.get("flush") == "1" and self.flush is not None:
            self.flush.fill_(1)
        self.hold()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        return {"us": f"{start.elapsed_time(end) * 1e3:.3f}"}

    def capture(self, f):
        """Graph mode (docs/PEERS.md, "Graph mode"): the peer's call captured once as a CUDA
        graph on torch's capture stream, after the harness's eager warm-up calls; a call that
        cannot be captured (a host synchronisation, a generator torch cannot capture...) is
        unsupported, with the reason, and never timed eagerly instead."""
        torch, call = self.torch, self.call
        if self.cell.device.type != "cuda":
            raise Unsupported(f"{self.peer}: graph = 1 needs CUDA (the CPU times eager calls)")
        call.reset()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                out = call.run()
        except Exception as e:  # noqa: BLE001 - any refusal of the capture is the answer
            torch.cuda.synchronize()
            raise Unsupported(f"{self.peer}: CUDA graph capture failed, so it is not timed "
                              f"(graph = 1 times replays only): {type(e).__name__}: {e}") from e
        self.graph = (graph, out)
        return {}

    def hold(self):
        """Keep the GPU busy for about HOLD_US after the flush, so that the start event is
        reached only once Python has enqueued the peer's call: what is timed is the device's
        work, not the interpreter's launch path (a C module's launch is hidden by the flush
        alone). A peer that waits for the device inside its call still shows its gaps."""
        torch = self.torch
        if self.cycles_per_us is None:
            if not hasattr(torch.cuda, "_sleep"):
                self.cycles_per_us = 0
                return
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1000)  # warm
            start.record()
            torch.cuda._sleep(1_000_000)
            end.record()
            end.synchronize()
            self.cycles_per_us = 1_000_000 / max(start.elapsed_time(end) * 1e3, 1.0)
        if self.cycles_per_us:
            torch.cuda._sleep(int(HOLD_US * self.cycles_per_us))

    def fetch(self, f):
        """An untimed call: its peak device memory, then its kept mask or its draws."""
        torch, call, cell = self.torch, self.call, self.cell
        cuda = cell.device.type == "cuda"
        call.reset()
        cell.reseed()
        catalog.drop_caches()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        out = self.replay() if self.graph else call.run()
        extra = 0
        if cuda:
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - base
        if f.get("kept"):
            kept = call.kept(out).to(torch.uint8).cpu().numpy()
            kept.tofile(f["kept"])
        if f.get("samples"):
            draws = int(f.get("draws", "1"))
            columns = [call.sample(out).to(torch.int64).cpu()]
            for _ in range(draws - 1):
                call.reset()
                columns.append(call.sample(self.replay() if self.graph else call.run())
                               .to(torch.int64).cpu())
            torch.stack(columns, dim=1).numpy().tofile(f["samples"])
        self.check_input_intact()
        return {"extra_bytes": int(extra)}

    def replay(self):
        """One replay of the captured call: its output tensors, rewritten in place."""
        self.graph[0].replay()
        return self.graph[1]

    def check_input_intact(self):
        """The cached logits are shared by every later cell of the file: a peer that wrote
        into them would spoil those cells without the CRC noticing. Compare their checksum
        with the one taken at load; on a difference drop the file and fail this cell."""
        key = self.cell_key
        logits, crc, checksum = self.files[key]
        if device_checksum(logits) != checksum:
            del self.files[key]
            raise RuntimeError(f"{self.peer} wrote into its input logits (their checksum changed); "
                               "the harness's file is reloaded for the next cell")

    def close(self):
        self.cell = self.call = self.graph = None
        if self.torch is not None and self.torch.cuda.is_available() and self.torch.cuda.is_initialized():
            self.torch.cuda.empty_cache()  # the next cell's peer starts from the same pool

    def probe(self, f):
        for peer in catalog.PEERS:
            ok, info = peer.available()
            reply("peer", name=peer.name, available=int(ok), info=info, cast=peer.cast_text())
        return {}


def missing_kernel(e):
    """Is `e` torch's refusal of an element type it has no kernel for on this device (e.g.
    `"topk_cpu" not implemented for 'Half'`)? The peer cannot do the cell here: unsupported."""
    return isinstance(e, (RuntimeError, NotImplementedError)) and "not implemented for '" in str(e)


def error_reply(e, session):
    """An exception as a reply: oom for an allocation failure, unsupported for an element type
    without a kernel, else error; restart=1 when the CUDA context is broken (the harness then
    starts a new worker)."""
    if os.environ.get("TOPKP_PEER_TRACEBACK"):
        traceback.print_exc()
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":  # torch.cuda's
        reply("oom", msg=f"{type(e).__name__}: {e}")
    elif missing_kernel(e):
        reply("unsupported", msg=f"{session.peer}: {type(e).__name__}: {e}")
    else:
        reply("error", msg=f"{type(e).__name__}: {e}", restart=int(catalog.device_broken(session.torch)))


def main():
    session = Session()
    handlers = {"probe": session.probe, "open": session.open, "graph": session.capture,
                "rep": session.rep,
                "fetch": session.fetch, "close": lambda f: session.close() or {}}
    for line in sys.stdin:
        command, fields = parse(line)
        if command == "quit":
            break
        try:
            reply("ok", **handlers[command](fields))
        except Unsupported as e:
            reply("unsupported", msg=str(e))
        except Exception as e:  # noqa: BLE001  a failing peer is a row, never a crash
            error_reply(e, session)


if __name__ == "__main__":
    main()

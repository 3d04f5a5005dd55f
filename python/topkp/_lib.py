"""_lib.py — ctypes over the C entry point include/topkp_ops.h (libtopkp_ops.so, shipped inside
this package): the structs, the error type, and one `run` that plans and runs a module on raw
pointers. Why ctypes: docs/PYTHON.md, "Why ctypes"."""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

CPU, GPU = 1, 2
DTYPES = {"f32": 0, "bf16": 1, "f16": 2}
OUT_SET, OUT_SAMPLE = 1, 2


class TopkpError(ValueError):
    """A refusal of the C entry point; the text is its message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Spec(ctypes.Structure):
    _fields_ = [("size", ctypes.c_int32), ("algo", ctypes.c_char_p),
                ("options", ctypes.c_char_p), ("backend", ctypes.c_int32),
                ("dtype", ctypes.c_int32), ("batch", ctypes.c_int64), ("vocab", ctypes.c_int64),
                ("row_stride", ctypes.c_int64), ("want_kept", ctypes.c_int32),
                ("draws", ctypes.c_int32), ("row_keyed", ctypes.c_int32),
                ("k", ctypes.c_void_p), ("p", ctypes.c_void_p), ("min_p", ctypes.c_void_p),
                ("has_k", ctypes.c_int32), ("has_p", ctypes.c_int32),
                ("has_min_p", ctypes.c_int32), ("k_bound", ctypes.c_int32)]


class IO(ctypes.Structure):
    _fields_ = [("size", ctypes.c_int32), ("logits", ctypes.c_void_p), ("k", ctypes.c_void_p),
                ("p", ctypes.c_void_p), ("min_p", ctypes.c_void_p), ("kept", ctypes.c_void_p),
                ("samples", ctypes.c_void_p), ("seed", ctypes.c_uint64),
                ("offset", ctypes.c_uint64), ("row_seed", ctypes.c_void_p),
                ("row_offset", ctypes.c_void_p)]


def _load():
    path = os.environ.get("TOPKP_OPS_LIB") or os.path.join(_HERE, "libtopkp_ops.so")
    lib = ctypes.CDLL(path)
    lib.topkp_ops_version.restype = ctypes.c_int
    lib.topkp_ops_backends.restype = ctypes.c_int
    u = ctypes.POINTER(ctypes.c_uint)
    lib.topkp_ops_algo.argtypes = [ctypes.c_int, u, u, u]
    lib.topkp_ops_algo.restype = ctypes.c_char_p
    lib.topkp_ops_plan_create.argtypes = [ctypes.POINTER(Spec), ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.c_char_p, ctypes.c_size_t]
    lib.topkp_ops_plan_workspace.argtypes = [ctypes.c_void_p]
    lib.topkp_ops_plan_workspace.restype = ctypes.c_size_t
    lib.topkp_ops_plan_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(IO), ctypes.c_void_p,
                                       ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p,
                                       ctypes.c_size_t]
    lib.topkp_ops_plan_destroy.argtypes = [ctypes.c_void_p]
    return lib


LIB = _load()


def algos():
    """{name: (ops bits, outputs bits, backends bits)} of every module in the library."""
    out, i = {}, 0
    ops, outs, bes = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    while True:
        name = LIB.topkp_ops_algo(i, ctypes.byref(ops), ctypes.byref(outs), ctypes.byref(bes))
        if name is None:
            return out
        out[name.decode()] = (ops.value, outs.value, bes.value)
        i += 1


class Plan:
    """One planned problem (topkp_ops_plan_create); destroyed with the object."""

    def __init__(self, spec):
        spec.size = ctypes.sizeof(Spec)
        self.handle = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(512)
        rc = LIB.topkp_ops_plan_create(ctypes.byref(spec), ctypes.byref(self.handle), msg, 512)
        if rc:
            raise TopkpError(rc, msg.value.decode(errors="replace"))
        self.workspace_bytes = LIB.topkp_ops_plan_workspace(self.handle)

    def run(self, io, workspace, stream=None):
        io.size = ctypes.sizeof(IO)
        msg = ctypes.create_string_buffer(512)
        rc = LIB.topkp_ops_plan_run(self.handle, ctypes.byref(io), workspace,
                                    self.workspace_bytes, stream, msg, 512)
        if rc:
            raise TopkpError(rc, msg.value.decode(errors="replace"))

    def __del__(self):
        if getattr(self, "handle", None) and self.handle.value:
            LIB.topkp_ops_plan_destroy(self.handle)
            self.handle = ctypes.c_void_p()

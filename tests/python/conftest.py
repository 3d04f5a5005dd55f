"""conftest.py — what the Python tests share: the CLI `topkp apply` as the reference (its
logits file and output layouts: docs/DESIGN.md, "The logits file"), seeded logits, and the
counts `make test` folds into the suite's last line (docs/PYTHON.md, "Tests")."""
import os
import subprocess

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPKP = os.environ.get("TOPKP") or os.path.join(ROOT, "build", "topkp")


def logits(batch=6, vocab=300, seed=1, ties=False):
    """Seeded float32 logits; ties=True draws them from a few values, so that rows tie."""
    rng = np.random.default_rng(seed)
    if ties:
        return rng.integers(-4, 4, size=(batch, vocab)).astype(np.float32)
    return (rng.standard_normal((batch, vocab)) * 3).astype(np.float32)


def apply(tmp_path, x, algo, k=None, p=None, min_p=None, seeds=None, offsets=None, dtype=None,
          draws=None, seed=None, offset=None, options=()):
    """`topkp apply` on float32 logits x (rounded to `dtype` by --dtype): (kept, samples)."""
    if not os.access(TOPKP, os.X_OK):
        pytest.skip(f"{TOPKP} is not built (make build/topkp)")
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    b = x.shape[0]
    with h5py.File(src, "w") as f:
        f["logits"] = x
        for name, value, t in (("k", k, np.int32), ("p", p, np.float32),
                               ("min_p", min_p, np.float32), ("seed", seeds, np.uint64),
                               ("offset", offsets, np.uint64)):
            if value is not None:
                f[name] = np.broadcast_to(np.asarray(value).astype(t), (b,))
    cmd = [TOPKP, "apply", algo, "--in", str(src), "--out", str(out), "--backend", "cpu",
           "--force"]
    for flag, value in (("--dtype", dtype), ("--draws", draws), ("--seed", seed),
                        ("--offset", offset)):
        if value is not None:
            cmd += [flag, str(value)]
    for o in options:
        cmd += ["--set", o]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, f"{' '.join(cmd)}: {run.stderr}"
    with h5py.File(out, "r") as f:
        kept = f["kept"][()].astype(bool) if "kept" in f else None
        samples = f["samples"][()] if "samples" in f else None
    return kept, samples


def pytest_sessionfinish(session, exitstatus):
    """Write "passed failed skipped" to $TOPKP_PYTEST_COUNTS for `make test`'s last line."""
    path = os.environ.get("TOPKP_PYTEST_COUNTS")
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if not path or rep is None:
        return
    n = {key: len(rep.stats.get(key, [])) for key in ("passed", "failed", "error", "skipped")}
    failed = n["failed"] + n["error"] + (1 if exitstatus not in (0, 5) and
                                         not (n["failed"] or n["error"]) else 0)
    with open(path, "w") as f:
        f.write(f"{n['passed']} {failed} {n['skipped']}\n")

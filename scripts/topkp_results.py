"""topkp_results.py — read a `topkp run` results file into pandas (or plain Python), as
`topkp export` prints it: one row per cell, a first column `sweep`, then every column of
/sweeps/<sweep>/cells by name (docs/RESULTS.md, "Results").

    import sys; sys.path.insert(0, "scripts")
    import topkp_results
    df = topkp_results.load("results/quick.h5")            # every sweep; or sweep="quick"
    df[df.algo == "qrita"]                                  # strings are str, not bytes
    df[df.hit_rate.notna()]                                 # NaN: the column does not apply
    topkp_results.samples("results/quick.h5", "quick", df.iloc[0])   # its repetition times

The cells table stores its strings as fixed-length byte strings (the HDF5 layout is a
contract), which h5py returns as `bytes`: this module decodes them (UTF-8, undecodable bytes
replaced), so `df.algo == "qrita"` selects rows. A float column that does not apply to a cell
(the times of an unsupported cell, hit_rate of a module without truncation) holds NaN and stays
NaN. Without pandas, load() returns a list of dicts of plain Python values. A path ending in
.xz is a results file compressed by `xz` (results/README.md): it is read from memory,
decompressed once while the file is unchanged.

    python3 scripts/topkp_results.py FILE [SWEEP]   # prints the cells as JSON lines

Needs h5py and numpy (scripts/install-python-deps.sh); pandas is optional."""
import functools
import io
import json
import lzma
import math
import os
import sys

import h5py
import numpy

try:
    import pandas
except ImportError:  # list of dicts instead
    pandas = None


def _open(path):
    """The results file at `path`, read-only; one ending in .xz decompressed into memory (once
    while the file is unchanged: a loop of samples() over its cells reads it once)."""
    path = os.fspath(path)
    if path.endswith(".xz"):
        st = os.stat(path)
        return h5py.File(io.BytesIO(_unpacked(path, st.st_mtime_ns, st.st_size)), "r")
    return h5py.File(path, "r")


@functools.lru_cache(maxsize=2)
def _unpacked(path, mtime_ns, size):
    """The bytes of the .xz file `path` as it was at (mtime_ns, size): the cache's key."""
    with lzma.open(path, "rb") as packed:
        return packed.read()


def _sweeps_of(f):
    """The names of the sweeps of the open file `f` that have a cells table."""
    group = f.get("sweeps")
    if group is None:
        return []
    return [name for name in group if isinstance(group[name], h5py.Group)
            and "cells" in group[name]]


def sweeps(path):
    """The names of the sweeps of a results file that have a cells table, in HDF5's order."""
    with _open(path) as f:
        return _sweeps_of(f)


def _decode(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _columns(table, sweep):
    """{column: list or numpy array} for one cells table, `sweep` first, strings as str."""
    rows = table[()]
    columns = {"sweep": [sweep] * len(rows)}
    for name in rows.dtype.names:
        values = rows[name]
        if values.dtype.kind == "S":
            columns[name] = [_decode(v) for v in values.tolist()]
        else:
            columns[name] = values
    return columns


def _records(columns):
    names = list(columns)
    count = len(columns["sweep"])
    plain = {n: (v.tolist() if isinstance(v, numpy.ndarray) else v) for n, v in columns.items()}
    return [{n: plain[n][i] for n in names} for i in range(count)]


def load(path, sweep=None):
    """Every cell of `path` (or of the one sweep named `sweep`): a pandas.DataFrame, or a list
    of dicts when pandas is absent. Raises KeyError for a sweep the file does not have and
    ValueError for a file without cells tables."""
    with _open(path) as f:
        names = _sweeps_of(f)
        if sweep is not None:
            if sweep not in names:
                raise KeyError("%s: no sweep named %s with cells" % (path, sweep))
            names = [sweep]
        if not names:
            raise ValueError("%s: not a topkp results file (no /sweeps/<name>/cells)" % path)
        parts = [_columns(f["sweeps"][name]["cells"], name) for name in names]
    if pandas is not None:
        frames = [pandas.DataFrame(p) for p in parts]
        return pandas.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return [row for p in parts for row in _records(p)]


def records(path):
    """Every cell as a list of dicts of plain Python values: from a results file (load()), or
    from the TSV `topkp export FILE` prints (a path ending in .tsv; numbers parsed, "nan" a
    float NaN), so that a script can be tried on a synthetic export without a GPU run."""
    if not path.endswith(".tsv"):
        table = load(path)
        rows = table.to_dict("records") if pandas is not None else table
        return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError("%s: empty, not a `topkp export` TSV" % path)
    header = lines[0].split("\t")
    out = []
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ValueError("%s:%d: %d fields, the header has %d"
                             % (path, number, len(fields), len(header)))
        out.append({name: _parse(value) for name, value in zip(header, fields)})
    return out


def _parse(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def samples(path, sweep, cell):
    """The repetition times (us) of one cell: a row of load() (a dict or a pandas row)."""
    n, offset = int(cell["n_samples"]), int(cell["samples_offset"])
    with _open(path) as f:
        return f["sweeps"][sweep]["samples"][offset:offset + n].tolist() if n else []


def _json_value(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: topkp_results.py FILE [SWEEP]\n")
        return 2
    table = load(argv[1], argv[2] if len(argv) == 3 else None)
    rows = table.to_dict("records") if pandas is not None else table
    for row in rows:
        clean = {k: _json_value(v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        print(json.dumps(clean))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

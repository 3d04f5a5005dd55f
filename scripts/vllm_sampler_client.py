"""vllm_sampler_client.py — vLLM's own v1 Sampler (vllm/v1/sample/sampler.py) run on batches of
logits, first with its top-k/top-p op, then with ours (topkp.compat.vllm.apply_top_k_top_p,
put where the Sampler calls it), and what that shows (docs/PYTHON.md, "A real client"):
  (a) greedy rows (temperature 0) give the argmax with either op;
  (b) the kept sets inside the Sampler with our op equal topkp.top_k_top_p_mask's on the same
      temperature-scaled logits (and how many rows vLLM's own op keeps the same set on);
  (c) the sampled tokens follow the same distribution: for a few rows, many draws with each op,
      a two-sample chi-square test (ours against vLLM's) and a goodness-of-fit test (ours
      against the renormalised probabilities of our kept set), with a PASS/FAIL threshold;
  (d) the time per Sampler call with each op: CUDA events on a GPU, wall time on a CPU.
vLLM is not installed: --vllm-src holds its Sampler files and stand-ins for the rest of vLLM,
assembled by scripts/vllm-sampler-files.sh (git-ignored, never committed). No model runs.

    python3 scripts/vllm_sampler_client.py --vllm-src .vllm-src --logits datasets/real/X.h5 \
        [--batch 64 --vocab 128256] [--out results/vllm-client/<name>.json]   # and <name>.tsv
Exits 0 when every check passes, 1 when one fails, 2 on a usage error."""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_EPS = 1e-5  # vLLM's _SAMPLING_EPS: a temperature below it is greedy

# The one table of row kinds; row i of a batch is CONFIGS[i % len(CONFIGS)].
# (name, temperature, k or None for off, p or None for off)
CONFIGS = (
    ("greedy", 0.0, None, None),
    ("top-k 50", 1.0, 50, None),
    ("top-p 0.9", 0.8, None, 0.9),
    ("top-k 20 + top-p 0.95", 1.2, 20, 0.95),
    ("top-k 1000 + top-p 0.5", 0.7, 1000, 0.5),
    ("unfiltered", 1.0, None, None),
)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vllm-src", default=os.path.join(ROOT, ".vllm-src"),
                    help="folder holding vllm/ (scripts/vllm-sampler-files.sh)")
    ap.add_argument("--logits", action="append", default=None,
                    help="logits file(s) (HDF5, dataset 'logits' [B, V]); default "
                         "datasets/real/*.h5; 'none' for random logits only")
    ap.add_argument("--rows", type=int, default=0, help="rows of each file (0: all)")
    ap.add_argument("--batch", type=int, default=64, help="random batch rows (0: none)")
    ap.add_argument("--vocab", type=int, default=128256, help="random batch vocabulary")
    ap.add_argument("--dist-rows", type=int, default=4, help="rows of the distribution test")
    ap.add_argument("--draws", type=int, default=20000, help="draws per row and op")
    ap.add_argument("--chunk", type=int, default=1024, help="draws per row per Sampler call")
    ap.add_argument("--alpha", type=float, default=1e-3,
                    help="family-wise level: a row FAILs when a p-value < alpha / rows")
    ap.add_argument("--reps", type=int, default=50, help="timed Sampler calls per op")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls first")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None,
                    help="write NAME.json and NAME.tsv beside it (default on a GPU: "
                         "results/vllm-client/<gpu>-<date>.json; on a CPU: none)")
    args = ap.parse_args(argv)
    if args.logits is None:
        args.logits = sorted(glob.glob(os.path.join(ROOT, "datasets", "real", "*.h5")))
    args.logits = [f for f in args.logits if f != "none"]
    if args.out is not None and not args.out.endswith(".json"):
        ap.error(f"--out {args.out}: name a .json file (its .tsv goes beside it)")
    for name in ("dist_rows", "draws", "chunk", "reps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def load_vllm(src):
    """Import vLLM's Sampler from src; our op is swapped into its topk_topp_sampler module."""
    if not os.path.isfile(os.path.join(src, "vllm", "v1", "sample", "sampler.py")):
        sys.exit(f"vllm_sampler_client.py: no {src}/vllm/v1/sample/sampler.py; assemble it with "
                 "scripts/vllm-sampler-files.sh (docs/PYTHON.md, \"A real client\")")
    # FlashInfer's sampler (the kit has no attention backend to vet it) off: vLLM then takes
    # forward_native, which calls apply_top_k_top_p.
    os.environ["VLLM_USE_FLASHINFER_SAMPLER"] = "0"
    sys.path.insert(0, os.path.abspath(src))
    from vllm.v1.sample import sampler, metadata
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.ops import topk_topp_sampler
    return argparse.Namespace(Sampler=sampler.Sampler, SamplingMetadata=metadata.SamplingMetadata,
                              LogitsProcessors=LogitsProcessors, tts=topk_topp_sampler)


class Ops:
    """Which top-k/top-p op vLLM's TopKTopPSampler.forward_native calls (a module global)."""

    def __init__(self, tts, ours):
        self.tts, self.fns = tts, {"vllm": tts.apply_top_k_top_p, "ours": ours}
        self.calls = {"vllm": 0, "ours": 0}

    def use(self, which, count=True):
        fn = self.fns[which]

        def counted(*a, **kw):
            self.calls[which] += 1
            return fn(*a, **kw)
        self.tts.apply_top_k_top_p = counted if count else fn


def batches(args, torch, device):
    """(name, float32 logits [B, V] on device): the random batch, then each logits file."""
    if args.batch > 0:
        gen = torch.Generator().manual_seed(args.seed)
        yield (f"random-{args.batch}x{args.vocab}",
               (torch.randn(args.batch, args.vocab, generator=gen) * 3).to(device))
    for path in args.logits:
        import h5py
        with h5py.File(path, "r") as f:
            if "logits" not in f:
                sys.exit(f"vllm_sampler_client.py: {path} has no dataset 'logits'")
            x = f["logits"][: args.rows] if args.rows > 0 else f["logits"][()]
        yield os.path.basename(path), torch.from_numpy(x).float().to(device)


def row_params(torch, b, v, device):
    """Per-row (kinds, temperature, k, p) as vLLM's input batch holds them: k = V where top-k
    is off or k >= V, p = 1 where top-p is off (k int32, p and temperature float32)."""
    kinds = [CONFIGS[i % len(CONFIGS)] for i in range(b)]
    temp = torch.tensor([c[1] for c in kinds], dtype=torch.float32, device=device)
    k = torch.tensor([min(c[2] or v, v) for c in kinds], dtype=torch.int32, device=device)
    p = torch.tensor([c[3] or 1.0 for c in kinds], dtype=torch.float32, device=device)
    return kinds, temp, k, p


def metadata(vl, torch, temp, k, p, logprobs=None, all_random=False):
    """A SamplingMetadata with no penalties, bad words, allowed ids or processors."""
    b = temp.shape[0]
    empty = torch.empty(0, device=temp.device)
    return vl.SamplingMetadata(
        temperature=temp, all_greedy=False, all_random=all_random, top_p=p, top_k=k,
        generators={}, max_num_logprobs=logprobs, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=empty, presence_penalties=empty, repetition_penalties=empty,
        output_token_ids=[[] for _ in range(b)], allowed_token_ids_mask=None,
        bad_words_token_ids={}, logitsprocs=vl.LogitsProcessors())


def scaled(torch, x, temp):
    """The logits the Sampler hands its op: float32, divided in place by the temperature
    (1 where greedy), as Sampler.apply_temperature does."""
    t = torch.where(temp < _EPS, 1.0, temp)
    return x.to(torch.float32).clone().div_(t.unsqueeze(dim=1))


def check_sets(vl, ops, torch, topkp, x, params):
    """(a) and (b): one Sampler call with each op, processed logits returned in full."""
    kinds, temp, k, p = params
    runs = {}
    for which in ("vllm", "ours"):
        ops.use(which)
        before = ops.calls[which]
        out = vl.Sampler(logprobs_mode="processed_logits")(
            x.clone(), metadata(vl, torch, temp, k, p, logprobs=-1))
        if ops.calls[which] == before:
            sys.exit(f"vllm_sampler_client.py: the Sampler never called the {which} op")
        runs[which] = (out.sampled_token_ids[:, 0].long(),
                       torch.isfinite(out.logprobs_tensors.logprobs))
    greedy = temp < _EPS
    argmax = x.argmax(dim=-1)
    bad_greedy = {w: int((runs[w][0][greedy] != argmax[greedy]).sum()) for w in runs}
    ref = topkp.top_k_top_p_mask(scaled(torch, x, temp), k=k, p=p)
    filt = ~greedy & ((k < x.shape[1]) | (p < 1.0))
    same = {w: (runs[w][1] == ref).all(dim=1) for w in runs}
    diff_rows = [int(i) for i in torch.nonzero(filt & ~same["vllm"]).flatten()]
    return {
        "greedy_rows": int(greedy.sum()),
        "greedy_mismatch_vllm": bad_greedy["vllm"], "greedy_mismatch_ours": bad_greedy["ours"],
        "a_pass": bad_greedy["vllm"] == 0 and bad_greedy["ours"] == 0,
        "filtered_rows": int(filt.sum()),
        "kept_mismatch_ours": int((filt & ~same["ours"]).sum()),
        "kept_same_vllm_op": int((filt & same["vllm"]).sum()),
        "vllm_op_differs": [{"row": i, "kind": kinds[i][0],
                             "only_vllm": int((runs["vllm"][1][i] & ~ref[i]).sum()),
                             "only_ours": int((ref[i] & ~runs["vllm"][1][i]).sum())}
                            for i in diff_rows[:8]],
        "b_pass": bool((filt & ~same["ours"]).sum() == 0),
    }


def draw_counts(vl, ops, which, torch, x, temp, k, p, draws, chunk):
    """Token counts [R, V] of `draws` Sampler draws per row of x [R, V] (all random)."""
    r, v = x.shape
    counts = torch.zeros(r, v, dtype=torch.int64, device=x.device)
    ops.use(which)
    sampler = vl.Sampler()
    done = 0
    while done < draws:
        m = min(chunk, draws - done)
        md = metadata(vl, torch, temp.repeat(m), k.repeat(m), p.repeat(m), all_random=True)
        tok = sampler(x.repeat(m, 1), md).sampled_token_ids[:, 0].long()
        rows = torch.arange(m * r, device=x.device) % r
        counts.index_put_((rows, tok), torch.ones_like(tok), accumulate=True)
        done += m
    return counts.cpu()


def chi2_sf(torch, stat, df):
    """P(X >= stat) for X ~ chi-square(df): the regularised upper incomplete gamma."""
    if df < 1:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(df / 2.0, dtype=torch.float64),
                                         torch.tensor(stat / 2.0, dtype=torch.float64)))


def pooled(pairs, floor):
    """Bins (a, b, weight) with weight >= floor kept; the rest pooled into one bin, kept when
    its weight reaches floor too (the usual rule that keeps the chi-square approximation)."""
    big = [t for t in pairs if t[2] >= floor]
    rest = [sum(t[i] for t in pairs if t[2] < floor) for i in range(3)]
    return big + ([tuple(rest)] if rest[2] >= floor else [])


def two_sample(torch, c1, c2):
    """Chi-square test that two equal-sized count vectors share one distribution."""
    pairs = [(a, b, a + b) for a, b in zip(c1.tolist(), c2.tolist()) if a + b > 0]
    bins = pooled(pairs, 10)
    stat = sum((a - b) ** 2 / (a + b) for a, b, _ in bins)
    return stat, len(bins) - 1, chi2_sf(torch, stat, len(bins) - 1)


def goodness(torch, counts, probs):
    """Chi-square goodness of fit of counts to the probabilities probs (float64)."""
    n = int(counts.sum())
    pairs = [(o, e * n, e * n) for o, e in zip(counts.tolist(), probs.tolist()) if e > 0]
    bins = pooled(pairs, 5)
    stat = sum((o - e) ** 2 / e for o, e, _ in bins)
    return stat, len(bins) - 1, chi2_sf(torch, stat, len(bins) - 1)


def check_distribution(vl, ops, torch, topkp, x, params, args):
    """(c): the first --dist-rows filtered rows that sample from more than one token."""
    kinds, temp, k, p = params
    ref = topkp.top_k_top_p_mask(scaled(torch, x, temp), k=k, p=p)
    filt = (k < x.shape[1]) | (p < 1.0)
    pick = [i for i in range(x.shape[0])
            if temp[i] >= _EPS and bool(filt[i]) and int(ref[i].sum()) > 1]
    pick = pick[: args.dist_rows]
    if not pick:
        return {"rows": [], "c_pass": False, "why": "no row samples from more than one token"}
    idx = torch.tensor(pick, device=x.device)
    xs, ts, ks, ps = x[idx], temp[idx], k[idx], p[idx]
    counts = {w: draw_counts(vl, ops, w, torch, xs, ts, ks, ps, args.draws, args.chunk)
              for w in ("vllm", "ours")}
    z = scaled(torch, xs, ts).double().masked_fill(~ref[idx], float("-inf"))
    probs = torch.softmax(z, dim=-1).cpu()
    level = args.alpha / len(pick)
    rows = []
    for j, i in enumerate(pick):
        s2, d2, p2 = two_sample(torch, counts["ours"][j], counts["vllm"][j])
        sf, df, pf = goodness(torch, counts["ours"][j], probs[j])
        outside = int(counts["ours"][j][~ref[i].cpu()].sum())
        rows.append({"row": i, "kind": kinds[i][0], "kept": int(ref[i].sum()),
                     "chi2_two_sample": s2, "df_two_sample": d2, "p_two_sample": p2,
                     "chi2_fit": sf, "df_fit": df, "p_fit": pf, "draws_outside_kept": outside,
                     "pass": p2 >= level and pf >= level and outside == 0})
    return {"rows": rows, "draws_per_row": args.draws, "level_per_row": level,
            "c_pass": all(r["pass"] for r in rows)}


def time_calls(vl, ops, which, torch, x, params, args, cuda):
    """(d): microseconds per Sampler call (median, min) over --reps calls after --warmup."""
    _, temp, k, p = params
    ops.use(which, count=False)
    sampler, md = vl.Sampler(), metadata(vl, torch, temp, k, p)
    marks = []
    for i in range(args.warmup + args.reps):
        xi = x.clone()  # the Sampler writes its input; the copy stays outside the timing
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            sampler(xi, md)
            e.record()
            marks.append((s, e))
        else:
            t0 = time.perf_counter()
            sampler(xi, md)
            marks.append(time.perf_counter() - t0)
    if cuda:
        torch.cuda.synchronize()
        marks = [s.elapsed_time(e) * 1e-3 for s, e in marks]
    us = sorted(t * 1e6 for t in marks[args.warmup:])
    return {"median_us": us[len(us) // 2], "min_us": us[0], "reps": len(us)}


def describe(torch, device):
    """What ran where: the device, the software, the vLLM files (their MANIFEST digest)."""
    cuda = device.type == "cuda"
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # a copy of the tree without .git
        commit = os.environ.get("TOPKP_COMMIT", "unknown")
    return {"device": torch.cuda.get_device_name(device) if cuda else "CPU",
            "timer": "CUDA events" if cuda else "CPU wall time (time.perf_counter)",
            "torch": torch.__version__, "commit": commit,
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def manifest_digest(src):
    import hashlib
    path = os.path.join(src, "MANIFEST")
    if not os.path.isfile(path):
        return "no MANIFEST"
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def run_batch(vl, ops, torch, topkp, name, x, args, cuda):
    params = row_params(torch, x.shape[0], x.shape[1], x.device)
    res = {"batch": name, "rows": x.shape[0], "vocab": x.shape[1]}
    res["sets"] = check_sets(vl, ops, torch, topkp, x, params)
    res["distribution"] = check_distribution(vl, ops, torch, topkp, x, params, args)
    res["time"] = {w: time_calls(vl, ops, w, torch, x, params, args, cuda)
                   for w in ("vllm", "ours")}
    return res


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(res, info):
    """Print one batch's results; return its TSV lines (batch, check, value, verdict)."""
    s, d, t = res["sets"], res["distribution"], res["time"]
    name = res["batch"]
    print(f"\n== {name}: {res['rows']} rows x V={res['vocab']} ({info['device']})")
    print(f"(a) greedy rows {s['greedy_rows']}: argmax mismatches vllm op "
          f"{s['greedy_mismatch_vllm']}, ours {s['greedy_mismatch_ours']}  {verdict(s['a_pass'])}")
    print(f"(b) filtered rows {s['filtered_rows']}: kept set != topkp.top_k_top_p_mask on "
          f"{s['kept_mismatch_ours']} rows with our op  {verdict(s['b_pass'])}; vLLM's own op "
          f"keeps the same set on {s['kept_same_vllm_op']}")
    for r in s["vllm_op_differs"]:
        print(f"    row {r['row']} ({r['kind']}): vLLM's op keeps {r['only_vllm']} more, "
              f"{r['only_ours']} fewer tokens")
    print(f"(c) {d.get('draws_per_row', 0)} draws per row and op; a row passes when both "
          f"p-values >= {d.get('level_per_row', 0):.2g} and no draw falls outside the kept set")
    for r in d["rows"]:
        print(f"    row {r['row']} ({r['kind']}, {r['kept']} kept): two-sample chi2 "
              f"{r['chi2_two_sample']:.1f} df {r['df_two_sample']} p={r['p_two_sample']:.4f}; "
              f"fit chi2 {r['chi2_fit']:.1f} df {r['df_fit']} p={r['p_fit']:.4f}; outside "
              f"{r['draws_outside_kept']}  {verdict(r['pass'])}")
    print(f"(c) {verdict(d['c_pass'])}" + (f": {d['why']}" if "why" in d else ""))
    print(f"(d) {info['timer']}, per Sampler call: vllm op {t['vllm']['median_us']:.1f} us "
          f"(min {t['vllm']['min_us']:.1f}), ours {t['ours']['median_us']:.1f} us "
          f"(min {t['ours']['min_us']:.1f}), {t['ours']['reps']} calls each")
    lines = [(name, "a_greedy", s["greedy_mismatch_ours"], verdict(s["a_pass"])),
             (name, "b_kept", s["kept_mismatch_ours"], verdict(s["b_pass"])),
             (name, "b_kept_same_vllm_op", s["kept_same_vllm_op"], "-")]
    lines += [(name, f"c_row{r['row']}_p_two_sample", f"{r['p_two_sample']:.6g}",
               verdict(r["pass"])) for r in d["rows"]]
    lines += [(name, f"d_{w}_median_us", f"{t[w]['median_us']:.2f}", "-") for w in t]
    return lines


def write(out, info, results, lines):
    out = out[: -len(".json")]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump({"info": info, "batches": results}, f, indent=1)
        f.write("\n")
    with open(out + ".tsv", "w") as f:
        f.write("# " + " ".join(f"{k}={v}" for k, v in info.items()) + "\n")
        f.write("batch\tcheck\tvalue\tverdict\n")
        f.writelines("\t".join(str(c) for c in line) + "\n" for line in lines)
    print(f"wrote {out}.json and {out}.tsv")


def main(argv):
    args = parse(argv)
    import torch
    import topkp
    from topkp.compat.vllm import apply_top_k_top_p
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    vl = load_vllm(args.vllm_src)
    ops = Ops(vl.tts, apply_top_k_top_p)
    torch.manual_seed(args.seed)
    info = describe(torch, device)
    info["vllm_files"] = manifest_digest(args.vllm_src)
    info["topk_topp_op"] = "triton" if vl.tts.HAS_TRITON else "pytorch"
    results, lines = [], []
    for name, x in batches(args, torch, device):
        res = run_batch(vl, ops, torch, topkp, name, x, args, cuda)
        results.append(res)
        lines += report(res, info)
    if not results:
        sys.exit("vllm_sampler_client.py: no batch (--batch 0 and no --logits file)")
    ok = all(r["sets"]["a_pass"] and r["sets"]["b_pass"] and r["distribution"]["c_pass"]
             for r in results)
    print(f"\nvllm_sampler_client: {verdict(ok)} ({len(results)} batches, {info['device']})")
    out = args.out
    if out is None and cuda:
        gpu = info["device"].replace("NVIDIA ", "").replace(" ", "-")
        out = os.path.join(ROOT, "results", "vllm-client", f"{gpu}-{info['date']}.json")
    if out:
        write(out, info, results, lines)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

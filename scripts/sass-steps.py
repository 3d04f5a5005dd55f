#!/usr/bin/env python3
"""sass-steps.py — the straight-line blocks of a kernel's machine code that end in the
validity test of a streamed step (a float compare with -FLT_MAX and the branch on it): the
instructions a thread issues to process one step of its stream when no value is a candidate
and every value is valid, counted per opcode. Reads `cuobjdump -sass OBJ` (cuobjdump comes
with PyPI's nvidia-cuda-cuobjdump where the toolkit lacks it) on stdin; prints, per kernel,
each such block of at least --min instructions: its start, its length and its commonest
opcodes. algos/cake/README.md, "Fewer instructions a logit", cites its counts.

usage: cuobjdump -sass build/gpu-obj/algos/cake/cake_gpu.o | scripts/sass-steps.py [--min N]
"""
import argparse
import re
import sys

FLT_MAX_TEST = "-3.40282346638528859812e+38"
BLOCK_END = re.compile(r"\bBRA\b|BSYNC|BSSY|BAR")


def kernels(lines):
    """{kernel name: [(address, instruction text)]} from a cuobjdump -sass listing."""
    out, cur = {}, None
    for line in lines:
        if "Function :" in line:
            cur = line.split()[-1]
            out[cur] = []
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s*(.*?)\s*;?\s*(/\*.*)?$", line)
        if cur and m:
            out[cur].append((int(m.group(1), 16), m.group(2)))
    return out


def step_blocks(ins, least):
    """(start, length, opcode counts) of each block that ends in a step's validity test."""
    for i, (_, text) in enumerate(ins):
        if "FSETP.GE" not in text or FLT_MAX_TEST not in text:
            continue
        pred = text.split()[1].rstrip(",")
        after = [t for _, t in ins[i + 1:i + 12]]
        ends = [n for n, t in enumerate(after) if t.startswith("@" + pred + " BRA")]
        if not ends:
            continue
        j = i
        while j > 0 and not BLOCK_END.search(ins[j - 1][1]):
            j -= 1
        block = ins[j:i + ends[0] + 2]
        if len(block) < least:
            continue
        ops = {}
        for _, t in block:
            op = (t.split()[1] if t.startswith("@") else t.split()[0]).split(".")[0]
            ops[op] = ops.get(op, 0) + 1
        yield ins[j][0], len(block), ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min", type=int, default=40, help="shortest block shown (instructions)")
    args = ap.parse_args()
    for name, ins in kernels(sys.stdin).items():
        for start, n, ops in step_blocks(ins, args.min):
            top = " ".join(f"{k}:{v}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:6])
            print(f"{name}\t0x{start:x}\t{n}\t{top}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A whole step's warp-state samples by kernel: pc_samples.py's CSV matched to the kernel library's SASS.

Usage: kernel_stalls.py SAMPLES.csv LIBRARY.sass [--skip-waits] [--top=N]
  SAMPLES.csv   pc_samples.py of an `ncu --graph-profiling graph --section SourceCounters` report
  LIBRARY.sass  `nvdisasm LIBRARY.cubin` of the kernel library that ran (build-dev/kcache: the cubin
                device_prepare.sh carried; nvdisasm from PyPI's nvidia-cuda-nvdisasm where the toolkit
                has none)
  --skip-waits  leave out the programmatic-launch waits (ACQBULK: a block launched early, waiting for
                the kernel before it), so the shares are of the kernels' own work
  --top=N       print each kernel's N largest stall reasons (default 5)
The report names no function for an address, and the driver places each function where it likes, so
each kernel's load address is found by votes: an instruction whose text occurs at few places in the
library votes for (function, address - offset) at each, and a function's true address collects the
votes of all its sampled instructions. Prints each kernel's share of the samples and its five largest
stall reasons (--top); "?" are the samples no kernel took (other modules: the step's small kernels).
"""
import collections
import re
import sys

from samples_csv import load

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*(/\*.*)?$")


def norm(text):
    text = text.strip().rstrip(";").strip()
    text = re.sub(r"0x7[0-9a-f]{10,}", "ADDR", text)  # ncu: absolute branch targets
    text = re.sub(r"`\([^)]*\)", "ADDR", text)  # nvdisasm: labels
    return re.sub(r"\s+", " ", text)


def library(path):
    funcs, cur = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*\.section\s+\.text\.(\S+?),", line)
            if m:
                cur = funcs.setdefault(m.group(1), {})
                continue
            m = INSTRUCTION.match(line) if cur is not None else None
            if m and not m.group(2).startswith("."):
                cur[int(m.group(1), 16)] = norm(m.group(2))
    return funcs


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    rows, funcs = [(pc, norm(t), c) for pc, t, c in load(args[0])], library(args[1])
    if "--skip-waits" in sys.argv:
        rows = [r for r in rows if not r[1].startswith("ACQBULK")]
    where = collections.defaultdict(list)
    for f, body in funcs.items():
        for off, text in body.items():
            where[text].append((f, off))
    size = {f: max(body) + 16 for f, body in funcs.items() if body}
    votes = collections.Counter()
    for pc, text, _ in rows:
        if 0 < len(where.get(text, ())) <= 40:
            for f, off in where[text]:
                votes[(f, pc - off)] += 1
    kernel_of = {}
    for (f, base), v in votes.most_common():
        if v < 5:
            break
        hits = [pc for pc, text, _ in rows
                if pc not in kernel_of and 0 <= pc - base < size[f] and funcs[f].get(pc - base) == text]
        if len(hits) >= 5:
            kernel_of.update((pc, f) for pc in hits)
    total = sum(sum(c.values()) for _, _, c in rows) or 1
    per = collections.defaultdict(collections.Counter)
    for pc, _, c in rows:
        per[kernel_of.get(pc, "?")].update(c)
    n_top = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("--top=")), 5)
    print(f"{len(kernel_of)} of {len(rows)} sampled instructions matched; {total} samples")
    for f, c in sorted(per.items(), key=lambda x: -sum(x[1].values())):
        s = sum(c.values())
        top = ", ".join(f"{r} {100.0 * v / s:.0f}%" for r, v in c.most_common(n_top) if v)
        print(f"{100.0 * s / total:5.1f}%  {f:45s} {top}")


if __name__ == "__main__":
    main()

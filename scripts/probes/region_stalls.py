#!/usr/bin/env python3
"""Stall-reason shares of one stretch of code in several pc_samples.py CSVs (runs anywhere, no ncu).

Usage: region_stalls.py ANCHOR FROM TO CSV...
  ANCHOR  text that the stretch's first instruction's SASS contains (its first match in each CSV sets
          that CSV's base address: the same code sits at other addresses in another run)
  FROM TO byte offsets from the anchor, hex, inclusive (e.g. 0x100 0x7bb0)
For each CSV: the samples in [anchor + FROM, anchor + TO], their shares by stall reason, and the
stretch's five most sampled instructions. How the thirty-second session compared the router's tail in
the whole step (ncu --graph-profiling graph) with the same kernel alone (docs/perf.md).
"""
import collections
import sys

from samples_csv import load


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    anchor, lo, hi = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)
    for path in sys.argv[4:]:
        rows = load(path)
        base = next((pc for pc, text, _ in rows if anchor in text), None)
        if base is None:
            print(f"== {path}: no instruction holds {anchor!r}")
            continue
        total, by_pc = collections.Counter(), []
        for pc, text, counts in rows:
            if lo <= pc - base <= hi:
                total.update(counts)
                by_pc.append((sum(counts.values()), pc - base, text))
        n = sum(total.values()) or 1
        print(f"== {path}: {n} samples from +{lo:#x} to +{hi:#x} of {base:#x}")
        for reason, v in total.most_common():
            if v:
                print(f"  {reason:20s} {100.0 * v / n:5.1f}%")
        for s, off, text in sorted(by_pc, reverse=True)[:5]:
            print(f"  +{off:#07x} {100.0 * s / n:5.1f}%  {text[:60]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where the mixture's gate/up blocks arrive against the router's last block (docs/perf.md, the
thirty-third session): from a stamps file of qwen3-30b-a3b (LATHE_STAMPS; scripts/product_stamps.py
reads the same files), for each o-with-router launch and the gate/up launch after it, the times from
the moment the router's last block knows it is last: gate/up's first, median and last block entries,
the last block's pick phase and its end, and how many gate/up blocks ran on the last block's SM or
entered during its pick. Medians over the launches, us.

Usage: scripts/probes/stamps_arrival.py STAMPS.csv[.xz]... [--router N_OUTxK] [--gate-up N_OUTxK]
  (the products' shapes as product_stamps.py prints them; defaults 2048x4096 and 6144x2048, the 30B's)
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from product_stamps import launches_of, read_rows  # noqa: E402


def shape_arg(name, default):
    for a in sys.argv:
        if a.startswith(name + "="):
            n, k = a.split("=", 1)[1].split("x")
            return int(n), int(k)
    return default


def main():
    files = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not files:
        sys.exit(__doc__)
    router, gate_up = shape_arg("--router", (2048, 4096)), shape_arg("--gate-up", (6144, 2048))
    med = statistics.median
    for path in files:
        launches = launches_of(read_rows(path)[1])
        cols = {k: [] for k in ("first gate/up entry", "median entry", "last entry", "pick begins", "pick ends",
                                "last block ends")}
        same_sm, in_pick = [], []
        for L, N in zip(launches, launches[1:]):
            if (L[0]["n_out"], L[0]["k"]) != router or (N[0]["n_out"], N[0]["k"]) != gate_up:
                continue
            last = max(L, key=lambda r: r["end"])
            if last["xb"] < 0 or last["xa"] < 0:
                continue  # no tail stamps (an older file)
            t0 = last["xb"]  # the last block knows it is last
            entries = sorted(r["entry"] - t0 for r in N)
            for k, v in zip(cols, (entries[0], entries[len(entries) // 2], entries[-1], last["first"] - t0,
                                   last["xa"] - t0, last["end"] - t0)):
                cols[k].append(v)
            same_sm.append(sum(r["sm"] == last["sm"] for r in N))
            in_pick.append(sum(last["first"] <= r["entry"] <= last["xa"] for r in N))
        if not same_sm:
            print(f"{path}: no router launch followed by gate/up with the tail's stamps")
            continue
        print(f"{path}: {len(same_sm)} launch pairs (us from the router's last block knowing it is last)")
        for k, v in cols.items():
            print(f"  {k:22s} {med(v) / 1000:7.2f}")
        print(f"  gate/up blocks on the last block's SM {med(same_sm)}, entering during its pick {med(in_pick)}")


if __name__ == "__main__":
    main()

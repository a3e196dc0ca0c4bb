#!/usr/bin/env python3
"""Reads the decode products' block stamps (LATHE_STAMPS=FILE lathe bench ...; runtime/product_stamps.h)
and prints, per product shape, where a launch's time goes, in microseconds (medians over its launches):

  release  the previous product's last block end -> this launch's first wait return (the dependency)
  x        its blocks' wait return -> x in place (median block), and inside it (thread 0):
             xa  wait return -> the norm's or the copy's loads landed
             xb  -> the norm's block sum
             xc  -> the quantization written (a norm's, or a quantizing row's, from the wait)
             xbar  the last of these -> x in place (the block's barrier: the slowest warp)
  first    x in place -> warp 0's first chunk landed (median block; 0 where it had landed already)
  stream   first chunk -> the block's end (median block)
  tail     median block end -> last block end
  span     first wait return -> last block end
  period   previous product's last end -> this one's (other kernels between them included)

The mixture's router stamps too (its row: n_out = the experts, k = the row's width): there `first` is
x in place -> the block's sums written, and `stream` those -> the block's end (the cluster barrier or
the count, and in the block that picks, the top k).

The router in o's epilogue adds a table: its last block's time from the others' median end until it
knows it is last (every block's count in), then until every part is in its shared memory, then to its
end (the sums, the top k, x's int8 form); and inside that, where stamped (its product's x, first and xa
slots, free by then): the parts added, the logits and their keys, thread 0's pick written, the end;
and the launches in quartiles by the last block's time from entry to its wait's return, with their
pick phases.

The decode attention stamps too (its row: n_out = the query heads, k = the head size), and a table of
its own phases after the products' (medians over its launches of the median block, us): entry to
wait; the prologue (rope and the cache append); warp 0's first chunk landed after it; its chunks'
arithmetic; the block's combine; the finishing loop (the output and its int8 form stored); the end
(the block's last warp; a merge where the row used several splits).

With --by-block, also each product's blocks in groups of 16 by index: the median time a block waited
before its wait returned (entry -> wait: how early it was resident) and its x phase's parts, to see
whether the blocks that start early (on SMs the launch before left free) or that take more items stage
x differently (the twenty-ninth session's gate/up on qwen3-0.6b: blocks 0-63 quantize ~0.5 us slower).

Usage: scripts/product_stamps.py FILE.csv[.xz] [--by-block]"""
import csv
import lzma
import statistics
import sys
from collections import defaultdict


def by_block(rows):
    """Per product shape (not the attention), blocks by index in groups of 16: the median pre-wait
    time and the x phase's parts (thread 0's stamps, where the product has them), us."""
    med = statistics.median
    shapes = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["k"] >= 512:
            shapes[(r["n_out"], r["k"])][r["block"] // 16].append(r)
    print(f"{'n_out x k':>16} {'blocks':>8} {'records':>8} {'pre-wait':>9} {'x':>8} {'xa':>8} {'xb':>8} {'xc':>8}")
    for shape, groups in sorted(shapes.items()):
        for g, rs in sorted(groups.items()):
            def part(a, b):
                v = [r[b] - r[a] for r in rs if r[a] >= 0 and r[b] >= 0]
                return f"{med(v) / 1000:8.2f}" if v else f"{'-':>8}"
            print(f"{shape[0]:>7} x {shape[1]:<6} {16 * g:>3}-{16 * g + 15:<4} {len(rs):>8} "
                  f"{med([r['wait'] - r['entry'] for r in rs]) / 1000:9.2f} {part('wait', 'x')} {part('wait', 'xa')} "
                  f"{part('xa', 'xb')} {part('xb', 'xc')}")


def read_rows(path):
    """The file's first line (what was dropped) and its block records, times as ints (ns)."""
    opener = lzma.open if path.endswith(".xz") else open
    rows = []
    with opener(path, "rt") as f:
        head = f.readline().strip()
        for r in csv.DictReader(f):
            row = {k: (v if k == "weights" else int(v)) for k, v in r.items()}
            for k in ("xa", "xb", "xc"):  # files from before the inside-x stamps
                row.setdefault(k, -1)
            rows.append(row)
    return head, rows


def launches_of(rows):
    """A launch: one product's blocks of one token. Records of a weights address split where entries
    are more than 100 us apart (the same product a token later); in the order their waits returned."""
    by_w = defaultdict(list)
    for r in rows:
        by_w[r["weights"]].append(r)
    launches = []
    for recs in by_w.values():
        recs.sort(key=lambda r: r["entry"])
        cur = [recs[0]]
        for r in recs[1:]:
            if r["entry"] - cur[-1]["entry"] > 100_000:
                launches.append(cur)
                cur = []
            cur.append(r)
        launches.append(cur)
    launches.sort(key=lambda L: min(r["wait"] for r in L))
    return launches


def main(path, blocks=False):
    head, rows = read_rows(path)
    print(head)
    if blocks:
        by_block(rows)
    launches = launches_of(rows)
    med = statistics.median
    per_shape = defaultdict(lambda: defaultdict(list))
    prev_end = None
    for L in launches:
        shape = (L[0]["n_out"], L[0]["k"])
        wait0 = min(r["wait"] for r in L)
        ends = [r["end"] for r in L]
        last = max(ends)
        d = per_shape[shape]
        d["blocks"].append(len(L))
        if prev_end is not None:
            d["release"].append(wait0 - prev_end)
        d["x"].append(med([r["x"] - r["wait"] for r in L]))
        for key, a, b in (("xa", "wait", "xa"), ("xb", "xa", "xb"), ("xc", None, "xc")):
            v = []
            for r in L:
                if r[b] < 0:
                    continue
                start = r[a] if a else max(r["wait"], r["xa"], r["xb"])
                v.append(r[b] - start)
            if v:
                d[key].append(med(v))
        inside = [max(r["wait"], r["xa"], r["xb"], r["xc"]) for r in L]
        d["xbar"].append(med([r["x"] - t for r, t in zip(L, inside)]))
        firsts = [r["first"] - r["x"] for r in L if r["first"] >= 0]
        d["first"].append(med(firsts) if firsts else 0)
        d["stream"].append(med([r["end"] - r["first"] for r in L if r["first"] >= 0] or [0]))
        d["tail"].append(last - med(ends))
        d["span"].append(last - wait0)
        if prev_end is not None:
            d["period"].append(last - prev_end)
        prev_end = last
    cols = ["release", "x", "xa", "xb", "xc", "xbar", "first", "stream", "tail", "span", "period"]
    print(f"{'n_out x k':>16} {'launches':>8} {'blocks':>6} " + " ".join(f"{c:>8}" for c in cols))
    for shape, d in sorted(per_shape.items()):
        vals = " ".join(f"{med(d[c]) / 1000:8.2f}" if d[c] else f"{'-':>8}" for c in cols)
        label = f"{shape[0]:>7} x {shape[1]:<6}" if shape[1] >= 512 else f"{'attn ' + str(shape[0]) + 'x' + str(shape[1]):>16}"
        print(f"{label} {len(d['blocks']):>8} {med(d['blocks']):>6} {vals}")
    # The router in o's epilogue (moe_route_epilogue.cuh): only its last block stamps xb (it knows it
    # is last: every block's parts counted) and xc (every part, s and w in its shared memory).
    route = []
    for L in launches:
        lasts = [r for r in L if r["xc"] > 0 and r["xb"] > 0]
        if len(L) > 1 and len(lasts) == 1 and all(r["xc"] <= 0 for r in L if r is not lasts[0]):
            r = lasts[0]
            others = med([q["end"] for q in L if q is not r])
            # Inside the tail where stamped (slots x, first, xa: the parts added, the keys, thread 0's pick).
            inside = (r["x"] - r["xc"], r["first"] - r["x"], r["xa"] - r["first"], r["end"] - r["xa"]) \
                if r["xa"] > r["first"] > r["x"] > r["xc"] else (-1, -1, -1, -1)
            route.append((r["xb"] - others, r["xc"] - r["xb"], r["end"] - r["xc"], r["end"] - others) + inside
                         + (r["wait"] - r["entry"],))
    if route:
        print(f"{'router tail':>16} {'counted':>9} {'parts in':>9} {'picks':>9} {'tail':>9}  (the last block, after"
              " the others' median end)")
        print(f"{len(route):>16} " + " ".join(f"{med([t[i] for t in route]) / 1000:9.2f}" for i in range(4)))
        if all(t[4] >= 0 for t in route):
            print(f"{'picks, inside':>16} {'sums':>9} {'keys':>9} {'pick 0':>9} {'to end':>9}")
            print(f"{len(route):>16} " + " ".join(f"{med([t[i] for t in route]) / 1000:9.2f}" for i in range(4, 8)))
            # The launches in quartiles by how long the last block was resident before its wait returned,
            # and their pick phases: does a longer wait make a slower pick? (perf.md, thirty-third session)
            by_wait = sorted(route, key=lambda t: t[8])
            quarters = [by_wait[i * len(by_wait) // 4:(i + 1) * len(by_wait) // 4] for i in range(4)]
            print(f"{'by its wait':>16} " + " ".join(f"{'wait q' + str(i + 1):>9}" for i in range(4))
                  + " " + " ".join(f"{'pick q' + str(i + 1):>9}" for i in range(4)))
            print(f"{'':>16} " + " ".join(f"{med([t[8] for t in q]) / 1000:9.2f}" for q in quarters)
                  + " " + " ".join(f"{med([t[6] for t in q]) / 1000:9.2f}" for q in quarters))
    attention = [L for L in launches if L[0]["k"] < 512]
    if attention:
        phases = [("entry", "wait", "to wait"), ("wait", "x", "prologue"), ("x", "first", "landed"),
                  ("first", "xa", "chunks"), ("xa", "xb", "combine"), ("xb", "xc", "finish"), ("xc", "end", "end")]
        print(f"{'attention':>16} " + " ".join(f"{p[2]:>9}" for p in phases))
        per = defaultdict(list)
        for L in attention:
            for a, b, name in phases:
                v = [r[b] - r[a] for r in L if r[a] >= 0 and r[b] >= 0]
                if v:
                    per[name].append(med(v))
        print(f"{len(attention):>16} " + " ".join(f"{med(per[p[2]]) / 1000:9.2f}" if per[p[2]] else f"{'-':>9}" for p in phases))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--by-block"]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], "--by-block" in sys.argv[1:])

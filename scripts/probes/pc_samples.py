#!/usr/bin/env python3
"""Every sampled instruction of an Nsight Compute result, as CSV: pc, its SASS, samples by stall reason.

Usage (where ncu is installed; PYTHONPATH holds its extras/python): pc_samples.py REPORT.ncu-rep > OUT.csv
Works on a kernel's result and on a whole graph's (--graph-profiling graph), whose instructions are
those of every kernel in it: a tail's code is read off by its SASS and addresses.
"""
import csv
import sys

import ncu_report

PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def main():
    ctx = ncu_report.load_report(sys.argv[1])
    out = csv.writer(sys.stdout)
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            reasons = sorted(n[len(PREFIX):] for n in act.metric_names()
                             if n.startswith(PREFIX) and not n.endswith("_not_issued"))
            rows = {}
            for reason in reasons:
                m = act.metric_by_name(PREFIX + reason)
                ids = m.correlation_ids()
                for i in range(m.num_instances()):
                    rows.setdefault(ids.as_uint64(i), {})[reason] = m.as_uint64(i)
            out.writerow(["action", act.name(), "pc", "sass"] + reasons)
            for pc in sorted(rows):
                if not any(rows[pc].values()):
                    continue
                try:
                    text = act.sass_by_pc(pc)
                except Exception as e:  # noqa: BLE001
                    text = f"? {e}"
                out.writerow(["", "", hex(pc), text] + [rows[pc].get(x, 0) for x in reasons])


if __name__ == "__main__":
    main()

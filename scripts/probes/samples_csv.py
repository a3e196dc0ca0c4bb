"""pc_samples.py's CSV read back: (pc, SASS text, {stall reason: samples}) an instruction, by address.

Shared by region_stalls.py and kernel_stalls.py (scripts in this folder import it by name).
"""
import csv


def load(path):
    rows, reasons = [], []
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if r and r[0] == "action":
                reasons = r[4:]
            elif len(r) > 3 and r[2].startswith("0x"):
                rows.append((int(r[2], 16), r[3].strip(), dict(zip(reasons, map(int, r[4:])))))
    return sorted(rows, key=lambda row: row[0])

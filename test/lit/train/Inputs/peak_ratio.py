"""Ratio of rank 0's activation peak under a plan to one device's.

    peak_ratio.py report ONE.json PLAN.json LIMIT     (dist-opt --report=json)
    peak_ratio.py measured ONE.txt PLAN.txt LIMIT     (dist-train --bench output)

Prints the ratio; exits 1 when it is above LIMIT."""
import json
import re
import sys


def peak(kind, path):
    if kind == "report":
        with open(path) as f:
            return json.load(f)["memory"]["activation_bytes_peak"]
    with open(path) as f:
        for line in f:
            m = re.match(r"rank 0: .* peak activations ([0-9.]+) MiB", line)
            if m:
                return float(m.group(1))
    raise SystemExit(f"{path}: no 'rank 0: ... peak activations' line")


kind, one, plan, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
ratio = peak(kind, plan) / peak(kind, one)
ok = ratio <= limit
print(f"activation peak ratio {ratio:.3f} {'<=' if ok else '>'} {limit}")
sys.exit(0 if ok else 1)

#!/usr/bin/env python3
"""Compares the `step K/N: loss X` lines of two dist-train outputs: the
same steps, each loss within --rtol of the other's. Two ways of computing
one step (one device against dp ranks) sum in different orders, so their
losses agree to rounding, not digit for digit.

  losses_close.py A.txt B.txt [--rtol 1e-6]
"""
import argparse
import re
import sys


def losses(path):
    with open(path) as f:
        return [(m.group(1), float(m.group(2)))
                for m in re.finditer(r"step (\d+/\d+): loss (\S+)", f.read())]


ap = argparse.ArgumentParser()
ap.add_argument("a")
ap.add_argument("b")
ap.add_argument("--rtol", type=float, default=1e-6)
args = ap.parse_args()
a, b = losses(args.a), losses(args.b)
if not a or [s for s, _ in a] != [s for s, _ in b]:
    sys.exit("different steps: %s against %s" % ([s for s, _ in a], [s for s, _ in b]))
for (step, x), (_, y) in zip(a, b):
    if abs(x - y) > args.rtol * max(abs(x), abs(y)):
        sys.exit("step %s: loss %r against %r (rtol %g)" % (step, x, y, args.rtol))
print("%d losses within rtol %g" % (len(a), args.rtol))

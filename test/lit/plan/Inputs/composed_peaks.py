"""Reads a --plan auto --report from stdin and checks, for every candidate a
whole compile confirmed, that the peak memory composed from layer terms is
within --min and --max of the compiled peak (ratios composed / compiled).
Prints one line per candidate and a summary; exits 1 when one is outside."""
import argparse, re, sys

p = argparse.ArgumentParser()
p.add_argument("--min", type=float, required=True)
p.add_argument("--max", type=float, required=True)
a = p.parse_args()
line = re.compile(r"^  (.+?)\s+(\S+=\S+)\s+step [0-9.]+ -> [0-9.]+ ms, "
                  r"peak ([0-9.]+) -> ([0-9.]+) MiB$")
inside = False
rows = []
# All of it read first: the tool writing the rest must not meet a closed pipe.
for text in sys.stdin.read().splitlines():
    if text.startswith("confirmed by a whole compile"):
        inside = True
        continue
    if inside:
        m = line.match(text)
        if not m:
            break
        rows.append((m.group(1), m.group(2), float(m.group(3)),
                     float(m.group(4))))
if not rows:
    sys.exit("no confirmed candidates in the report")
bad = 0
for plan, mesh, composed, compiled in rows:
    ratio = composed / compiled
    ok = a.min <= ratio <= a.max
    bad += not ok
    print(f"{plan} on {mesh}: composed {composed} MiB, compiled {compiled} "
          f"MiB, ratio {ratio:.3f}{'' if ok else ' OUTSIDE'}")
print(f"{len(rows) - bad} of {len(rows)} composed peaks within "
      f"{a.min}..{a.max} of the compiled ones")
sys.exit(1 if bad else 0)

"""Reads a --plan auto --report from stdin and checks, for every candidate a
whole compile confirmed, that the peak memory composed from layer terms is
within --min and --max of the compiled peak, and with --step-min/--step-max
the step time too (ratios composed / compiled). Prints one line per
candidate and a summary; exits 1 when one is outside."""
import argparse, re, sys

p = argparse.ArgumentParser()
p.add_argument("--min", type=float, required=True)
p.add_argument("--max", type=float, required=True)
p.add_argument("--step-min", type=float)
p.add_argument("--step-max", type=float)
a = p.parse_args()
line = re.compile(r"^  (.+?)\s+(\S+=\S+)\s+step ([0-9.]+) -> ([0-9.]+) ms, "
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
        rows.append((m.group(1), m.group(2)) +
                    tuple(float(m.group(k)) for k in range(3, 7)))
if not rows:
    sys.exit("no confirmed candidates in the report")
bad = 0
for plan, mesh, step, compiled_step, peak, compiled_peak in rows:
    ratio = peak / compiled_peak
    step_ratio = step / compiled_step
    ok = a.min <= ratio <= a.max
    if a.step_min is not None:
        ok = ok and a.step_min <= step_ratio <= a.step_max
    bad += not ok
    print(f"{plan} on {mesh}: peak {peak} / {compiled_peak} MiB = {ratio:.3f}, "
          f"step {step} / {compiled_step} ms = {step_ratio:.3f}"
          f"{'' if ok else ' OUTSIDE'}")
print(f"{len(rows) - bad} of {len(rows)} composed predictions within "
      f"the bounds of the compiled ones")
sys.exit(1 if bad else 0)

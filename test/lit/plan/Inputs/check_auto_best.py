"""Checks --plan auto's choice against the hand plans' own reports.

Each hand plan (a preset on the fixed mesh, with and without recompute of the
model's layers) is compiled by `dist-opt --report=json`; its predicted step is
the report's step estimate and its peak memory per rank the busiest rank's
parameters and optimizer states plus the activation peak. The best hand plan
(fastest that fits the budget) must be what `--plan auto` names, at the same
predicted time. With --below-fastest, the budget is set just under the
fastest plan's peak (and the check needs another plan to fit it)."""
import argparse, json, re, subprocess, sys

p = argparse.ArgumentParser()
p.add_argument("--dist-opt", required=True)
p.add_argument("--case", required=True)
p.add_argument("--mesh", required=True)
p.add_argument("--presets", required=True, help="comma-separated")
p.add_argument("--layers", required=True, help="recompute glob")
p.add_argument("--tmp", required=True)
p.add_argument("--below-fastest", action="store_true")
a = p.parse_args()

model, config = a.case + "/model.onnx", a.case + "/train.json"
with open(config) as f:
    text = f.read()
recompute_config = a.tmp + "/recompute.json"
with open(recompute_config, "w") as f:
    f.write(text.replace('"steps"', '"recompute": ["%s"], "steps"' % a.layers, 1))

plans = []
for preset in a.presets.split(","):
    for recompute in (False, True):
        cfg = recompute_config if recompute else config
        out = subprocess.run([a.dist_opt, model, "--train", cfg, "--mesh", a.mesh,
                              "--plan", preset, "--report=json", "-o", "/dev/null"],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        mem = r["memory"]
        states = max(pb + ob for pb, ob in zip(mem["per_rank_parameter_bytes"],
                                              mem["per_rank_optimizer_state_bytes"]))
        peak = states + mem["activation_bytes_peak"]
        name = preset + (" + recompute" if recompute else "")
        plans.append((r["estimate"]["step_us"], peak, name))

plans.sort()
budget = None
if a.below_fastest:
    budget = plans[0][1] - 1
fits = [pl for pl in plans if budget is None or pl[1] <= budget]
if not fits:
    sys.exit("no hand plan fits the budget %d" % budget)
best = fits[0]
# Plans predicted equally fast (to the printed microsecond) are all right.
fastest = "%.3f" % (best[0] / 1e3)
tied = [pl[2] for pl in fits if "%.3f" % (pl[0] / 1e3) == fastest]
cmd = [a.dist_opt, model, "--train", config, "--mesh", a.mesh, "--plan", "auto",
       "-o", "/dev/null"]
if budget is not None:
    cmd += ["--memory-budget", str(budget)]
err = subprocess.run(cmd, check=True, capture_output=True, text=True).stderr
m = re.search(r"auto plan: (.*) on mesh (\S+): predicted step ([0-9.]+) ms", err)
if not m:
    sys.exit("no 'auto plan:' line in:\n" + err)
print("hand plans (step us, peak bytes):", plans)
print("budget:", budget)
print("best hand plan(s):", tied, fastest, "ms")
print("auto:", m.group(1), m.group(3), "ms")
if m.group(1) not in tied or m.group(3) != fastest:
    sys.exit("MISMATCH: auto chose %s, the best hand plan is %s" % (m.group(1), tied))
if a.below_fastest and plans[0][2] in tied:
    sys.exit("the budget did not rule out the fastest plan")
print("OK")

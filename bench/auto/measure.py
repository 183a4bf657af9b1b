#!/usr/bin/env python3
"""Predicted against measured step time and memory, every hand plan and the
auto plan, on 2 thread ranks of this machine (one thread each).

For each model (a training-case folder: model.onnx, train.json) and each plan
(dp, zero1, zero2, fsdp, tp, tp+sp, pp 1f1b, pp zb-h1, each with and without
recompute of the repeated layers, and --plan auto), the prediction is the
compiler's report (`dist-opt --report=json`: the step estimate, or with a
pipeline the simulated makespan plus communication; memory: the busiest
rank's parameters and optimizer states plus the activation peak) and the
measurement `dist-train --bench N` (median step, each rank's "weights and
states" plus "peak activations"). Prints a table per model, Spearman's rank
correlation of predicted vs measured time, the mean absolute error of the
time prediction relative to the measurement, and the memory ratios.

  bench/auto/measure.py [--bench 5] MODEL_DIR...
"""
import argparse, json, os, re, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
bin_dir = os.path.join(os.environ.get("DISTOPT_BUILD_DIR", os.path.join(root, "build")), "bin")


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=int, default=5)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="auto-measure")
    for case in a.models:
        model, config = os.path.join(case, "model.onnx"), os.path.join(case, "train.json")
        # The auto plan, and the layers it found (the pipeline's split).
        auto_file = os.path.join(tmp, "auto.yaml")
        rep = run([bin_dir + "/dist-opt", model, "--train", config, "--plan", "auto",
                   "--devices", "2", "--emit-plan", auto_file, "--report", "-o", "/dev/null"])
        m = re.search(r"repeated layers: (\S+)", rep.stdout)
        layers = m.group(1) if m else None
        with open(config) as f:
            text = f.read()
        rc_config = os.path.join(tmp, "recompute.json")
        with open(rc_config, "w") as f:
            f.write(text.replace('"steps"', '"recompute": ["%s"], "steps"' % layers, 1))
        plans = [("dp", "dp=2", "dp"), ("zero1", "dp=2", "zero1"), ("zero2", "dp=2", "zero2"),
                 ("fsdp", "dp=2", "fsdp"), ("tp", "tp=2", "tp"), ("tp+sp", "tp=2", "tp,sp")]
        if layers:
            for sched in ("1f1b", "zb-h1"):
                path = os.path.join(tmp, "pp-%s.yaml" % sched)
                with open(path, "w") as f:
                    f.write('pipeline: {split: "%s", microbatches: 2, schedule: %s}\n' % (layers, sched))
                plans.append(("pp " + sched, "pp=2", path))
        rows = []
        for name, mesh, plan in plans:
            for rc in ([False, True] if layers else [False]):
                cfg = rc_config if rc else config
                rows.append((name + (" +rc" if rc else ""), ["--train", cfg, "--mesh", mesh, "--plan", plan]))
        rows.append(("auto", ["--train", config, "--plan", auto_file]))
        table = []
        for name, flags in rows:
            try:
                r = json.loads(run([bin_dir + "/dist-opt", model] + flags + ["--report=json", "-o", "/dev/null"]).stdout)
                est, mem = r["estimate"], r["memory"]
                pred_ms = (r["pipeline"]["makespan_us"] + est["communication_us"]) / 1e3 if "pipeline" in r \
                    else est["step_us"] / 1e3
                states = max(p + o for p, o in zip(mem["per_rank_parameter_bytes"],
                                                   mem["per_rank_optimizer_state_bytes"]))
                peaks = [s.get("activation_bytes_peak", 0) for s in r["pipeline"]["stages"]] if "pipeline" in r \
                    else [mem["activation_bytes_peak"]]
                pred_mib = (states + max(peaks)) / 1048576
                out = run([bin_dir + "/dist-train", model] + flags +
                          ["--steps", "1", "--bench", str(a.bench), "--threads", "1"]).stdout
                meas_ms = float(re.search(r"median_ms: ([0-9.]+)", out).group(1))
                meas_mib = max(float(w) + float(p) for w, p in re.findall(
                    r"weights and states ([0-9.]+) MiB, peak activations ([0-9.]+) MiB", out))
                table.append((name, pred_ms, meas_ms, pred_mib, meas_mib))
            except (subprocess.CalledProcessError, AttributeError, KeyError) as e:
                print("%s: %s failed: %s" % (case, name, getattr(e, "stderr", e)), file=sys.stderr)
        print("\n== %s (2 thread ranks, one thread each; --bench %d median)" % (case, a.bench))
        print("%-14s %10s %10s %7s %10s %10s %7s" % ("plan", "pred ms", "meas ms", "ratio", "pred MiB", "meas MiB", "ratio"))
        for name, pm, mm, pb, mb in table:
            print("%-14s %10.3f %10.3f %7.2f %10.2f %10.2f %7.2f" % (name, pm, mm, pm / mm, pb, mb, pb / mb))
        hand = [t for t in table if t[0] != "auto"]
        if len(hand) > 1:
            print("spearman(pred, meas time) over all plans: %.3f" % spearman([t[1] for t in table], [t[2] for t in table]))
            print("mean abs error of time: %.1f%%" % (100 * sum(abs(t[1] - t[2]) / t[2] for t in table) / len(table)))
            best = min(hand, key=lambda t: t[2])
            auto = [t for t in table if t[0] == "auto"]
            if auto:
                print("auto measured %.3f ms vs best hand plan %s %.3f ms (%+.1f%%)" % (
                    auto[0][2], best[0], best[2], 100 * (auto[0][2] / best[2] - 1)))


if __name__ == "__main__":
    main()

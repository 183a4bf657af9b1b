#!/usr/bin/env python3
"""Predicted against measured step time and memory, every hand plan and the
auto plan, on 2 thread ranks of this machine (one thread each), or on 4
(--devices 4: oversubscribed on 2 cores; dp, ZeRO, HSDP, tp, dp x tp,
dp x pp and pp hand plans, without their recompute twins). --backend mpi
runs each rank as an MPI process instead (`mpirun --oversubscribe -np N
... --backend mpi`, the calibration too; as root, Open MPI needs
OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1).

For each model (a training-case folder: model.onnx, train.json) and each plan
(dp, zero1, zero2, fsdp, tp, tp+sp, pp 1f1b, pp zb-h1, each with and without
recompute of the repeated layers, and --plan auto), the prediction is the
compiler's report (`dist-opt --report=json`: the step estimate, or with a
pipeline the simulated makespan plus communication; memory: the busiest
rank's parameters and optimizer states plus the activation peak) and the
measurement `dist-train --bench N` (median step, each rank's "weights and
states" plus "peak activations"). Prints a table per model, Spearman's rank
correlation of predicted vs measured time, the mean absolute error of the
time prediction relative to the measurement, and the memory ratios; with
two rounds or more also the measurement against itself (the even rounds'
times ranked against the odd rounds'), the most a prediction can agree.

The machine profile is calibrated at the start (`dist-run --calibrate`)
unless --machine names one; every plan is measured --rounds times,
interleaved (each round runs every plan of every model). A third auto row,
"auto trials", is the plan `dist-train --plan auto --auto-trials K` keeps
after training the K fastest predicted (--trials, --trial-steps; --trials 0
leaves it out). A second auto plan
is searched under a --memory-budget that rules out the hand plan predicted
fastest (--budget-fraction of its predicted memory) and compared with the hand plans whose measured memory
fits the budget. The measured time is the fastest step of all rounds (as the
calibration keeps the fastest run: other work on a shared machine only
slows a step down), with the median of the rounds' medians beside it.

Paired with a reference (--reference, default dp): in every round the
reference plan runs right before each other plan, and the plan's paired time
is the median over rounds of its median step over the reference's median
step just before it, times the reference's median step in its fastest run. A
machine that turns slower or faster for minutes at a time (shared hosts do)
then scales both runs of a pair alike; the paired columns compare plans
under one machine state. --reference none measures each plan once per round.
Without MODEL_DIRs it measures the bench models of make_models.py (a GPT
and a Llama of about 4M parameters), made once into BUILD/bench-models.

  bench/auto/measure.py [--bench 5] [--rounds 3] [--machine FILE] [--budget-fraction 0.75]
                        [--trials 4] [--trial-steps 5]
                        [--devices 2|4] [--backend local|mpi] [--reference PLAN|none]
                        [MODEL_DIR...]
"""
import argparse, json, os, re, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
bin_dir = os.path.join(os.environ.get("DISTOPT_BUILD_DIR", os.path.join(root, "build")), "bin")


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True)


def launcher(backend, devices):
    """What a command of `devices` ranks starts with, and the flags it
    takes: nothing for thread ranks, mpirun for MPI processes."""
    if backend == "mpi":
        return ["mpirun", "--oversubscribe", "-np", str(devices)], ["--backend", "mpi"]
    return [], []


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


def cpu_line():
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return "CPU: %s, %d cores; load average %s" % (info.get("model name", "?"), os.cpu_count(), load)


def default_models():
    """The bench models (make_models.py), made once into the build folder."""
    out = os.path.join(os.path.dirname(bin_dir), "bench-models")
    names = ["gpt_bench", "llama_bench"]
    if not all(os.path.exists(os.path.join(out, n, "model.onnx")) for n in names):
        subprocess.run(["/usr/bin/python3", os.path.join(root, "bench", "auto", "make_models.py"), out],
                       check=True, stdout=sys.stderr)
    return [os.path.join(out, n) for n in names]


def predict(model, flags, machine):
    """The report's step time (ms) and busiest rank's memory (MiB)."""
    r = json.loads(run([bin_dir + "/dist-opt", model] + flags +
                       ["--machine", machine, "--report=json", "-o", "/dev/null"]).stdout)
    est, mem = r["estimate"], r["memory"]
    pred_ms = (r["pipeline"]["makespan_us"] + est["communication_us"]) / 1e3 if "pipeline" in r \
        else est["step_us"] / 1e3
    states = max(p + o for p, o in zip(mem["per_rank_parameter_bytes"],
                                       mem["per_rank_optimizer_state_bytes"]))
    peaks = [s.get("activation_bytes_peak", 0) for s in r["pipeline"]["stages"]] if "pipeline" in r \
        else [mem["activation_bytes_peak"]]
    return pred_ms, (states + max(peaks)) / 1048576


def measure(model, flags, machine, bench, backend="local", devices=2):
    """dist-train's median and fastest step (ms) and busiest rank's memory
    (MiB; under MPI the processes other than the root print theirs on
    stderr)."""
    pre, post = launcher(backend, devices)
    done = run(pre + [bin_dir + "/dist-train", model] + flags + post +
               ["--machine", machine, "--steps", "1", "--bench", str(bench), "--threads", "1"])
    out = done.stdout + done.stderr
    median_ms = float(re.search(r"median_ms: ([0-9.]+)", out).group(1))
    min_ms = float(re.search(r"min_ms: ([0-9.]+)", out).group(1))
    meas_mib = max(float(w) + float(p) for w, p in re.findall(
        r"weights and states ([0-9.]+) MiB, peak activations ([0-9.]+) MiB", out))
    return median_ms, min_ms, meas_mib


def hand_plans(devices, layers, tmp):
    """(name, mesh, --plan) of every hand plan a user would try on
    `devices` ranks; pipelines split the repeated layers `layers`."""
    def pipeline(sched, microbatches, presets=None):
        path = os.path.join(tmp, "pp-%s-%d%s.yaml" % (sched, microbatches, "-dp" if presets else ""))
        with open(path, "w") as f:
            if presets:
                f.write("presets: [%s]\n" % presets)
            f.write('pipeline: {split: "%s", microbatches: %d, schedule: %s}\n' % (
                layers, microbatches, sched))
        return path
    if devices == 2:
        plans = [("dp", "dp=2", "dp"), ("zero1", "dp=2", "zero1"), ("zero2", "dp=2", "zero2"),
                 ("fsdp", "dp=2", "fsdp"), ("tp", "tp=2", "tp"), ("tp+sp", "tp=2", "tp,sp")]
        if layers:
            plans += [("pp " + s, "pp=2", pipeline(s, 2)) for s in ("1f1b", "zb-h1")]
        return plans
    plans = [("dp", "dp=4", "dp"), ("zero1", "dp=4", "zero1"), ("zero2", "dp=4", "zero2"),
             ("fsdp", "dp=4", "fsdp"), ("hsdp", "rep=2,dp=2", "fsdp"),
             ("tp4", "tp=4", "tp"), ("tp4+sp", "tp=4", "tp,sp"),
             ("zero1,tp", "dp=2,tp=2", "zero1,tp"), ("zero1,tp+sp", "dp=2,tp=2", "zero1,tp,sp")]
    if layers:
        plans += [("dp,pp " + s, "pp=2,dp=2", pipeline(s, 2, "zero1")) for s in ("1f1b", "zb-h1")]
        plans.append(("pp4 1f1b", "pp=4", pipeline("1f1b", 4)))
    return plans


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=int, default=5, help="steps timed per run (dist-train --bench)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs of every plan, interleaved; the measured time is their median")
    ap.add_argument("--machine", help="a machine profile (default: dist-run --calibrate, now)")
    ap.add_argument("--budget-fraction", type=float, default=0.75,
                    help="the budgeted auto row's --memory-budget: this fraction of the predicted "
                         "memory of the hand plan predicted fastest")
    ap.add_argument("--devices", type=int, default=2, choices=(2, 4),
                    help="thread ranks (4: oversubscribed on a 2-core machine; no recompute rows)")
    ap.add_argument("--backend", default="local", choices=("local", "mpi"),
                    help="ranks as threads of one process (local) or as MPI processes")
    ap.add_argument("--reference", default="dp",
                    help="the hand plan run before every other plan in each round, "
                         "for the paired times ('none': no pairs)")
    ap.add_argument("--trials", type=int, default=4,
                    help="the auto trials row: dist-train --auto-trials K (0: no such row)")
    ap.add_argument("--trial-steps", type=int, default=5,
                    help="the auto trials row: --auto-trial-steps S")
    ap.add_argument("models", nargs="*", help="training-case folders (default: the bench models)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="auto-measure")
    print(cpu_line())
    machine = a.machine
    if not machine:
        machine = os.path.join(tmp, "machine.json")
        pre, post = launcher(a.backend, a.devices)
        cal = run(pre + [bin_dir + "/dist-run", "--calibrate", "--out", machine] + post)
        print("calibrated: " + " | ".join(l.strip() for l in cal.stdout.splitlines()
                                          if re.match(r"\s*(f32 |memory:|2 +[0-9.]+ +[0-9.]+)", l)))
    print("machine profile: " + machine)
    cases = []
    for case in a.models or default_models():
        model, config = os.path.join(case, "model.onnx"), os.path.join(case, "train.json")
        # The auto plan, and the layers it found (the pipeline's split).
        auto_file = os.path.join(tmp, "auto.yaml")
        rep = run([bin_dir + "/dist-opt", model, "--train", config, "--plan", "auto",
                   "--devices", str(a.devices), "--machine", machine, "--emit-plan", auto_file,
                   "--report", "-o", "/dev/null"])
        m = re.search(r"repeated layers: (\S+)", rep.stdout)
        layers = m.group(1) if m else None
        m = re.search(r"auto plan: .*", rep.stdout + rep.stderr)
        auto_line = m.group(0) if m else "auto plan: ?"
        with open(config) as f:
            text = f.read()
        rc_config = os.path.join(tmp, "recompute-%s.json" % os.path.basename(case.rstrip("/")))
        with open(rc_config, "w") as f:
            f.write(text.replace('"steps"', '"recompute": ["%s"], "steps"' % layers, 1))
        # The pipelines' plan files name this model's layers.
        case_tmp = os.path.join(tmp, os.path.basename(case.rstrip("/")))
        os.makedirs(case_tmp, exist_ok=True)
        plans = hand_plans(a.devices, layers, case_tmp)
        rows = []
        for name, mesh, plan in plans:
            for rc in ([False, True] if layers and a.devices == 2 else [False]):
                cfg = rc_config if rc else config
                rows.append((name + (" +rc" if rc else ""), ["--train", cfg, "--mesh", mesh, "--plan", plan]))
        auto_copy = os.path.join(tmp, "auto-%s.yaml" % os.path.basename(case.rstrip("/")))
        os.replace(auto_file, auto_copy)
        rows.append(("auto", ["--train", config, "--plan", auto_copy]))
        trials_line = None
        if a.trials > 0:
            # The plan the measured finalists choose, trained here once.
            trials_file = os.path.join(tmp, "auto-trials-%s.yaml" % os.path.basename(case.rstrip("/")))
            pre, post = launcher(a.backend, a.devices)
            rep = run(pre + [bin_dir + "/dist-train", model, "--train", config, "--plan", "auto",
                             "--devices", str(a.devices), "--machine", machine,
                             "--auto-trials", str(a.trials), "--auto-trial-steps", str(a.trial_steps),
                             "--steps", "0", "--emit-plan", trials_file] + post)
            trials_line = "\n".join(l for l in (rep.stdout + rep.stderr).splitlines()
                                    if l.startswith(("auto trials:", "  ", "auto plan (measured):")))
            rows.append(("auto trials", ["--train", config, "--plan", trials_file]))
        predicted = {}
        for name, flags in rows:
            try:
                predicted[name] = predict(model, flags, machine)
            except (subprocess.CalledProcessError, KeyError) as e:
                print("%s: %s failed: %s" % (case, name, getattr(e, "stderr", e)), file=sys.stderr)
        # A budget that rules out the hand plan predicted fastest: the auto
        # plan under it is compared with the hand plans that fit it.
        quickest = min((n for n in predicted if not n.startswith("auto")), key=lambda n: predicted[n][0])
        budget = int(a.budget_fraction * predicted[quickest][1])
        budget_file = os.path.join(tmp, "auto-budget-%s.yaml" % os.path.basename(case.rstrip("/")))
        rep = run([bin_dir + "/dist-opt", model, "--train", config, "--plan", "auto",
                   "--devices", str(a.devices), "--machine", machine, "--memory-budget", "%dMiB" % budget,
                   "--emit-plan", budget_file, "--report", "-o", "/dev/null"])
        m = re.search(r"auto plan: .*", rep.stdout + rep.stderr)
        budget_line = "under --memory-budget %dMiB (%.2f of %s's predicted %.1f MiB): %s" % (
            budget, a.budget_fraction, quickest, predicted[quickest][1], m.group(0) if m else "?")
        rows.append(("auto budget", ["--train", config, "--plan", budget_file]))
        predicted["auto budget"] = predict(model, rows[-1][1], machine)
        cases.append(dict(case=case, model=model, rows=rows, predicted=predicted, budget=budget,
                          auto_line=auto_line, budget_line=budget_line, trials_line=trials_line,
                          medians={}, fastest={},
                          mems={}, ratios={}, reference_runs=[]))
    # Every plan of every model in each round, so that a slow stretch of the
    # machine hits both models' plans alike.
    for _ in range(a.rounds):
        for c in cases:
            case, model, predicted = c["case"], c["model"], c["predicted"]
            medians, fastest, mems = c["medians"], c["fastest"], c["mems"]
            reference = dict(c["rows"]).get(a.reference) if a.reference in predicted else None

            def timed(name, flags, counted=True):
                try:
                    med, low, mib = measure(model, flags, machine, a.bench, a.backend, a.devices)
                except (subprocess.CalledProcessError, AttributeError) as e:
                    print("%s: %s failed: %s" % (case, name, getattr(e, "stderr", e)), file=sys.stderr)
                    return None
                # The fastest and median columns count one run per plan and
                # round (the reference's first pair of the round), so that
                # the reference's many runs do not give it more chances.
                if counted:
                    medians.setdefault(name, []).append(med)
                    fastest[name] = min(low, fastest.get(name, low))
                mems[name] = mib
                return med

            first_pair = True
            for name, flags in c["rows"]:
                if name not in predicted or (reference and name == a.reference):
                    continue
                # The reference right before the plan: the pair shares the
                # machine's state.
                ref = timed(a.reference, reference, first_pair) if reference else None
                first_pair = False
                med = timed(name, flags)
                if ref and med:
                    c["ratios"].setdefault(name, []).append(med / ref)
                    c["reference_runs"].append(ref)
    for c in cases:
        case, rows, predicted, budget = c["case"], c["rows"], c["predicted"], c["budget"]
        medians, fastest, mems = c["medians"], c["fastest"], c["mems"]
        auto_line, budget_line = c["auto_line"], c["budget_line"]
        # Measured time: the fastest step of all rounds, as the calibration
        # takes the fastest run (other work on a shared machine only slows a
        # step down); the median of the rounds' medians is shown beside it.
        table = [(n, predicted[n][0], fastest[n], median(medians[n]), predicted[n][1], mems[n])
                 for n, _ in rows if n in fastest]
        # Paired: each plan's median ratio to the reference run before it,
        # at the reference's fastest run; the reference itself at that run.
        ratios, ref_runs = c["ratios"], c["reference_runs"]
        paired = {}
        if ref_runs:
            paired[a.reference] = min(ref_runs)
            for n, rs in ratios.items():
                paired[n] = median(rs) * min(ref_runs)
        print("\n== %s (%d %s, one thread each%s; %d runs of --bench %d)" % (
            case, a.devices, "MPI processes" if a.backend == "mpi" else "thread ranks",
            ", oversubscribed" if a.devices > (os.cpu_count() or 1) else "", a.rounds, a.bench))
        print(auto_line)
        if c["trials_line"]:
            print(c["trials_line"])
        print(budget_line)
        if paired:
            print("paired with %s: %d pairs, the reference's median step %.1f-%.1f ms over them" % (
                a.reference, len(ref_runs), min(ref_runs), max(ref_runs)))
        print("%-14s %9s %9s %7s %9s %7s %9s %7s %9s %9s %7s" % (
            "plan", "pred ms", "fastest", "ratio", "median", "ratio", "paired", "ratio",
            "pred MiB", "meas MiB", "ratio"))
        for name, pm, low, med, pb, mb in table:
            pr = paired.get(name)
            print("%-14s %9.1f %9.1f %7.2f %9.1f %7.2f %9s %7s %9.2f %9.2f %7.2f" % (
                name, pm, low, pm / low, med, pm / med, "%.1f" % pr if pr else "-",
                "%.2f" % (pm / pr) if pr else "-", pb, mb, pb / mb))
        # The paired column as a table column (index 6), where every row has one.
        if paired and all(t[0] in paired for t in table):
            table = [t + (paired[t[0]],) for t in table]
        hand = [t for t in table if not t[0].startswith("auto")]
        if len(hand) > 1:
            columns = (("fastest", 2), ("median", 3)) + ((("paired", 6),) if len(table[0]) > 6 else ())
            # The rows of earlier runs: the trials' plan is a hand plan again.
            ranked = [t for t in table if t[0] != "auto trials"]
            for label, col in columns:
                meas = [t[col] for t in ranked]
                print("%-7s: spearman(pred, meas time) %.3f, mean abs error %.1f%%" % (
                    label, spearman([t[1] for t in ranked], meas),
                    100 * sum(abs(t[1] - m) / m for t, m in zip(ranked, meas)) / len(ranked)))
            # The measurement against itself: the rounds split in two
            # halves (even, odd), each half's times ranked against the
            # other's. What the machine repeats is the most a prediction's
            # rank order can agree with.
            if a.rounds >= 2:
                names = [t[0] for t in ranked]
                halves = []
                for label, per_round in (("median", medians), ("paired", c["ratios"])):
                    if not all(len(per_round.get(n, [])) >= 2 for n in names if n != a.reference):
                        continue
                    if label == "paired" and a.reference in names:
                        # The reference is each pair's own divisor: 1.
                        half = lambda n, k: 1.0 if n == a.reference else median(per_round[n][k::2])
                    else:
                        half = lambda n, k: median(per_round[n][k::2])
                    halves.append("%s %.3f" % (label, spearman([half(n, 0) for n in names],
                                                               [half(n, 1) for n in names])))
                if halves:
                    print("repeatability: spearman(even rounds, odd rounds) %s" % " / ".join(halves))
            print("memory: predicted / measured %.2f .. %.2f" % (
                min(t[4] / t[5] for t in table), max(t[4] / t[5] for t in table)))
            for row in ("auto", "auto trials"):
                auto = [t for t in table if t[0] == row]
                for label, col in columns:
                    best = min(hand, key=lambda t: t[col])
                    if auto:
                        print("%s (%s) %.1f ms vs best hand plan %s %.1f ms (%+.1f%%)" % (
                            row, label, auto[0][col], best[0], best[col], 100 * (auto[0][col] / best[col] - 1)))
            auto = [t for t in table if t[0] == "auto"]
            # Where the auto plan is one of the hand plans, their two rows
            # are the same plan measured twice: how far apart they are is
            # how repeatable the measurement is.
            m = re.match(r"auto plan: (.+?) on mesh", auto_line)
            same = [t for t in hand if m and t[0] == m.group(1)]
            if auto and same:
                print("auto's plan is the hand plan %s; the same plan's two rows differ by %s" % (
                    same[0][0], ", ".join("%+.1f%% (%s)" % (100 * (auto[0][col] / same[0][col] - 1), label)
                                           for label, col in columns)))
            under = [t for t in table if t[0] == "auto budget"]
            fitting = [t for t in hand if t[5] <= budget]
            if under:
                print("auto under the budget: measured %.2f MiB %s %d MiB" % (
                    under[0][5], "<=" if under[0][5] <= budget else "> (over the budget!)", budget))
            for label, col in columns:
                if under and fitting:
                    best = min(fitting, key=lambda t: t[col])
                    print("auto under the budget (%s) %.1f ms vs best hand plan that fits %s %.1f ms (%+.1f%%)" % (
                        label, under[0][col], best[0], best[col], 100 * (under[0][col] / best[col] - 1)))
    print(cpu_line())


if __name__ == "__main__":
    main()

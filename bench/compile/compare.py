#!/usr/bin/env python3
"""Times upstream MLIR's sharding passes against distopt's on the same linalg
chains (see gen_chain.py) and prints a markdown table per variant:

  upstream: mlir-opt --pass-pipeline=builtin.module(func.func(
                sharding-propagation,shard-partition))
  distopt:  dist-opt --dist-propagate-sharding --dist-insert-reshards
                --dist-partition --dist-reshard-to-collectives

Each run is the whole tool (parse, passes, verification, print to a file),
wall clock, best of --reps; a run that exceeds --timeout seconds is reported
as "timeout" and one that exceeds --mem-gb as "out of memory" (the other
reps of that cell are skipped). Both outputs are checked to contain one
all-reduce per row-split layer, so a fast wrong answer does not count.

Columns: compute ops (matmul + relu); whole-run seconds and the
upstream/distopt ratio; the same for the passes alone (MLIR's --mlir-timing
total minus parsing and printing; it includes the verification after each
pass); microseconds per op (whole run); and the scaling exponent k of the
whole run between consecutive sizes (time ~ ops^k: 1 is linear, 2
quadratic).
"""
import argparse
import math
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

UPSTREAM_PIPELINE = ("--pass-pipeline=builtin.module(func.func("
                     "sharding-propagation,shard-partition))")
DISTOPT_PASSES = ["--dist-propagate-sharding", "--dist-insert-reshards",
                  "--dist-partition", "--dist-reshard-to-collectives"]

VARIANTS = {
    "args": ("weights are function arguments", ["--weights", "args"]),
    "ops": ("weights are ops in the body", ["--weights", "ops"]),
    "shared": ("weights are ops; zero inits and shardings shared (CSE'd IR)",
               ["--weights", "ops", "--share"]),
}


def run_once(cmd, timeout, mem_gb):
    def limit():
        if mem_gb > 0:
            cap = int(mem_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd + ["--mlir-timing"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout,
                              preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return None, None, "timeout"
    elapsed = time.perf_counter() - start
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        if proc.returncode < 0 or "bad_alloc" in err or "memory" in err.lower():
            return None, None, "out of memory"
        sys.stderr.write(err[-2000:])
        return None, None, "failed"
    return elapsed, passes_seconds(err), None


def passes_seconds(report):
    """Total minus Parser and Output rows of an --mlir-timing report."""
    rows = {}
    for line in report.splitlines():
        m = re.match(r"\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$", line)
        if m:
            rows.setdefault(m.group(2).strip(), float(m.group(1)))
    if "Total" not in rows:
        return None
    return rows["Total"] - rows.get("Parser", 0) - rows.get("Output", 0)


def best_of(cmd, reps, timeout, mem_gb):
    best, best_passes = None, None
    for _ in range(reps):
        t, passes, problem = run_once(cmd, timeout, mem_gb)
        if problem:
            return None, None, problem
        if best is None or t < best:
            best = t
        if passes is not None and (best_passes is None or passes < best_passes):
            best_passes = passes
    return best, best_passes, None


def count_all_reduces(path, dialect):
    pattern = re.compile(r"= %s\.all_reduce " % dialect)
    with open(path) as f:
        return sum(1 for line in f if pattern.search(line))


def fmt_time(t, problem):
    return problem if problem else "%.2f" % t


def exponent(prev, cur):
    (n0, t0), (n1, t1) = prev, cur
    if None in (t0, t1) or t0 <= 0:
        return "-"
    return "%.2f" % (math.log(t1 / t0) / math.log(n1 / n0))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist-opt", required=True)
    p.add_argument("--mlir-opt", required=True)
    p.add_argument("--sizes", default="1000,10000,30000,100000")
    p.add_argument("--variants", default="args,ops",
                   help="comma-separated: " + ", ".join(VARIANTS))
    p.add_argument("--devices", type=int, default=4)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--mem-gb", type=float, default=8,
                   help="address-space cap per run (0: none)")
    p.add_argument("--workdir", required=True)
    a = p.parse_args()

    os.makedirs(a.workdir, exist_ok=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    print("mesh: 1-D, %d devices; best of %d; timeout %g s; memory cap %g GB"
          % (a.devices, a.reps, a.timeout, a.mem_gb))
    for variant in a.variants.split(","):
        title, gen_flags = VARIANTS[variant]
        print("\n### %s (%s)\n" % (variant, title))
        print("| ops | upstream s | distopt s | ratio | upstream passes s "
              "| distopt passes s | passes ratio | upstream us/op "
              "| distopt us/op | upstream k | distopt k |")
        print("| ---: " * 11 + "|")
        prev_up = prev_di = None
        for n in sizes:
            layers = max(2, n // 2)
            files, outs = {}, {}
            for form in ("upstream", "distopt"):
                files[form] = os.path.join(a.workdir, "%s-%s-%d.mlir" % (variant, form, n))
                outs[form] = files[form] + ".out"
                subprocess.run([sys.executable, os.path.join(HERE, "gen_chain.py"),
                                "--ops", str(n), "--form", form,
                                "--devices", str(a.devices), "-o", files[form]]
                               + gen_flags, check=True)
            up_cmd = [a.mlir_opt, files["upstream"], UPSTREAM_PIPELINE,
                      "-o", outs["upstream"]]
            di_cmd = [a.dist_opt, files["distopt"]] + DISTOPT_PASSES + [
                "-o", outs["distopt"]]
            up, up_passes, up_problem = best_of(up_cmd, a.reps, a.timeout, a.mem_gb)
            di, di_passes, di_problem = best_of(di_cmd, a.reps, a.timeout, a.mem_gb)
            want = layers // 2
            if up is not None and count_all_reduces(outs["upstream"], "shard") != want:
                up, up_problem = None, "wrong output"
            if di is not None and count_all_reduces(outs["distopt"], "dist") != want:
                di, di_problem = None, "wrong output"
            ratio = "%.2f" % (up / di) if up and di else "-"
            passes_ratio = ("%.2f" % (up_passes / di_passes)
                            if up_passes and di_passes else "-")
            fmt_passes = lambda t: "%.2f" % t if t is not None else "-"
            per_up = "%.1f" % (up / n * 1e6) if up else "-"
            per_di = "%.1f" % (di / n * 1e6) if di else "-"
            k_up = exponent(prev_up, (n, up)) if prev_up else "-"
            k_di = exponent(prev_di, (n, di)) if prev_di else "-"
            print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, fmt_time(up, up_problem), fmt_time(di, di_problem), ratio,
                fmt_passes(up_passes if up else None),
                fmt_passes(di_passes if di else None), passes_ratio,
                per_up, per_di, k_up, k_di), flush=True)
            prev_up, prev_di = (n, up), (n, di)
            for path in list(files.values()) + list(outs.values()):
                if os.path.exists(path):
                    os.remove(path)


if __name__ == "__main__":
    main()

"""Compares dist-train logs (--log-file) of the same runs in f32 and in
bf16 mixed precision, one log per data order (shuffle seed) on each side,
in the same order: the mean of the final evaluation losses of the bf16
runs must lie within --rtol of the f32 runs' mean, each bf16 run within
--pair-rtol of the f32 run of the same order, and the two sides must
differ somewhere (else the policy did not reach the step). The mean is the
claim; one pair alone moves with the data order by about half a percent on
a model this small. Prints one line for FileCheck, then the numbers."""
import argparse
import json


def read(path):
    steps, evals = [], []
    for line in open(path):
        record = json.loads(line)
        if "eval_loss" in record:
            evals.append(record["eval_loss"])
        if "loss" in record:
            steps.append(record["loss"])
    return steps, evals


ap = argparse.ArgumentParser()
ap.add_argument("--f32", nargs="+", required=True)
ap.add_argument("--bf16", nargs="+", required=True)
ap.add_argument("--rtol", type=float, required=True)
ap.add_argument("--pair-rtol", type=float, required=True)
a = ap.parse_args()
if len(a.f32) != len(a.bf16):
    raise SystemExit("as many bf16 logs as f32 logs, in the same data orders")
f32 = [read(p) for p in a.f32]
bf16 = [read(p) for p in a.bf16]
f32_final = [evals[-1] for _, evals in f32]
bf16_final = [evals[-1] for _, evals in bf16]
f32_mean = sum(f32_final) / len(f32_final)
bf16_mean = sum(bf16_final) / len(bf16_final)
mean_rel = abs(bf16_mean - f32_mean) / f32_mean
pairs = [abs(b - f) / f for f, b in zip(f32_final, bf16_final)]
differ = all(max(abs(x - y) for x, y in zip(fs, bs)) > 1e-4
             for (fs, _), (bs, _) in zip(f32, bf16))
steps = sorted({len(s) for s, _ in f32 + bf16})
print(f"runs {len(f32)} steps {steps} mean final eval loss within {a.rtol}: "
      f"{mean_rel <= a.rtol} each within {a.pair_rtol}: "
      f"{max(pairs) <= a.pair_rtol} runs differ: {differ}")
print(f"f32 mean {f32_mean:.5f} bf16 mean {bf16_mean:.5f} relative "
      f"{(bf16_mean - f32_mean) / f32_mean:+.2e}; per order: " +
      ", ".join(f"{f:.5f}/{b:.5f}" for f, b in zip(f32_final, bf16_final)))

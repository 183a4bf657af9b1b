"""Compares two dist-train logs (--log-file) of the same run in f32 and in
bf16 mixed precision: the final evaluation losses must agree within
--rtol, and the two runs must differ somewhere (else the policy did not
reach the step). Prints one line for FileCheck."""
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
ap.add_argument("f32")
ap.add_argument("bf16")
ap.add_argument("--rtol", type=float, required=True)
a = ap.parse_args()
f32_steps, f32_evals = read(a.f32)
bf16_steps, bf16_evals = read(a.bf16)
final = abs(bf16_evals[-1] - f32_evals[-1]) / f32_evals[-1]
differ = max(abs(x - y) for x, y in zip(f32_steps, bf16_steps)) > 1e-4
print(f"steps {len(f32_steps)} {len(bf16_steps)} final eval loss within {a.rtol}: "
      f"{final <= a.rtol} runs differ: {differ}")
print(f"f32 {f32_evals[-1]:.5f} bf16 {bf16_evals[-1]:.5f} relative {final:.2e}")

#!/usr/bin/env bash
# Pipeline throughput against the schedule's predicted bubble.
#
#   bench/pipeline/run.sh [ITERATIONS] [BATCH]
#
# The GPT-2-small-shaped model (exported with a dynamic batch axis) cut into
# 2 stages over `pp`, a global batch of BATCH (default 8) sequences of 128
# tokens split into 1, 2, 4 and 8 microbatches, both schedules, on the local
# backend (2 ranks, 1 thread each, on 2 cores). For each row:
#   step ms        median dist-run --bench time of one step (all microbatches)
#   samples/s      BATCH / step
#   efficiency     measured: single-device step / (2 x pipelined step), the
#                  share of the two workers' time spent computing
#   predicted      1 - the bubble fraction dist-opt --report predicts
# Needs a build and Debian's python3-torch for the export.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
iters=${1:-3}
batch=${2:-8}
model=$cache/gpt2-small-dyn/model.onnx
if [ ! -f "$model" ]; then
  echo "exporting the GPT-2-small-shaped model with a dynamic batch ..." >&2
  /usr/bin/python3 "$root/bench/models/make_gpt2_small.py" "$cache/gpt2-small-dyn" --dynamic-batch >/dev/null
fi
mkdir -p "$cache/pipeline"
median() { sed -n 's/median_ms: //p'; }

single=$("$bin/dist-run" "$model" --dim batch="$batch" --bench "$iters" 2>/dev/null | median)
printf "single device, batch %d: %.1f ms per step (%.2f samples/s)\n\n" "$batch" "$single" \
  "$(awk -v b="$batch" -v t="$single" 'BEGIN { print b * 1000 / t }')"
printf "%-9s %4s %10s %10s %11s %10s\n" schedule m "step ms" samples/s efficiency predicted
for schedule in gpipe 1f1b; do
  for m in 1 2 4 8; do
    plan=$cache/pipeline/pp-$schedule-m$m.yaml
    printf 'pipeline:\n  axis: pp\n  split: "blocks.*"\n  microbatches: %d\n  schedule: %s\n' \
      "$m" "$schedule" > "$plan"
    mb=$((batch / m))
    step=$("$bin/dist-run" "$model" --dim batch="$mb" --mesh pp=2 --plan "$plan" \
             --bench "$iters" 2>/dev/null | median)
    bubble=$("$bin/dist-opt" "$model" --dim batch="$mb" --mesh pp=2 --plan "$plan" \
               --report=json -o /dev/null | sed -n 's/.*"bubble_fraction": *\([0-9.e-]*\).*/\1/p')
    printf "%-9s %4d %10.1f %10.2f %10.0f%% %9.0f%%\n" "$schedule" "$m" "$step" \
      "$(awk -v b="$batch" -v t="$step" 'BEGIN { print b * 1000 / t }')" \
      "$(awk -v s="$single" -v t="$step" 'BEGIN { print 100 * s / (2 * t) }')" \
      "$(awk -v f="$bubble" 'BEGIN { print 100 * (1 - f) }')"
  done
done

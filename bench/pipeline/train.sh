#!/usr/bin/env bash
# Pipeline training: step time per schedule against one device, the
# measured bubble against the formulas and the report's simulation, and
# each stage's activation peak.
#
#   bench/pipeline/train.sh [STEPS] [BATCH] [MICROBATCHES]   (defaults 2, 4, 4)
#
# The GPT-2-small-shaped training model of bench/train (12 layers, d=768,
# vocabulary 50257, BATCH x 128 tokens, AdamW) cut into p = 2 stages over
# `pp` (2 ranks on the local backend, one thread each, on 2 cores), the batch
# split into MICROBATCHES. For each schedule:
#   step ms      median of STEPS timed `dist-train --bench` steps (1 warm-up)
#   bubble       measured idle share of the two workers: 1 - t1 / (p x step),
#                t1 the single-device step at 1 thread running the same
#                microbatches one after another (the pipeline plan on pp=1:
#                the same GEMM sizes; the whole batch at once is also shown)
#   formula      textbook idle share: GPipe and 1F1B (p-1)/(m+p-1),
#                interleaved over v chunks (p-1)/(v*m+p-1), ZB-H1 as 1F1B
#                with the weight half of the backward off the critical path
#   simulated    dist-opt --report's prediction from its cost model
#   peak MiB     measured activation peak of stage 0 / stage 1 (the
#                executor's live buffers, dist-train --bench)
# SHAPE=layers,d,heads,vocab,pos,seq picks another model (as bench/train).
# Needs a build and Debian's python3-torch and python3-onnx for the export.
# See docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
steps=${1:-2}
batch=${2:-4}
m=${3:-4}
p=2
py=/usr/bin/python3
shape=${SHAPE:-}
if [ -z "$shape" ]; then dir=$cache/train-gpt2-small; else dir=$cache/train-${shape//,/_}; fi
if [ ! -f "$dir/model.onnx" ]; then
  echo "exporting the model into $dir ..." >&2
  "$py" "$root/bench/train/make_model.py" "$dir" ${shape:+--shape "$shape"} >/dev/null 2>&1
fi
seq=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['seq'])" "$dir/shape.json")
mkdir -p "$cache/pipeline-train"
median() { sed -n 's/median_ms: //p'; }
train() { # [flags]
  "$bin/dist-train" "$dir/model.onnx" --train "$dir/train.json" --tokens "$dir/tokens.bin" \
    --batch "$batch" --seq "$seq" --dim batch="$batch" --steps 1 --bench "$steps" "$@" 2>/dev/null
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores"
echo "model: $dir/model.onnx, batch $batch x $seq tokens in $m microbatches, p = $p stages"
whole=$(train --threads 1 | median)
printf 'pipeline: {axis: pp, split: "blocks.*", microbatches: %d}\n' "$m" > "$cache/pipeline-train/one.yaml"
single=$(train --mesh pp=1 --plan "$cache/pipeline-train/one.yaml" --threads 1 | median)
printf "one device, 1 thread: %.1f ms per step (whole batch at once), %.1f ms (%d microbatches in turn)\n\n" \
  "$whole" "$single" "$m"
printf "%-17s %10s %8s %8s %10s %16s\n" schedule "step ms" bubble formula simulated "peak MiB (0 / 1)"
for schedule in gpipe 1f1b zb-h1 interleaved-1f1b; do
  v=1
  [ "$schedule" = interleaved-1f1b ] && v=2
  plan=$cache/pipeline-train/$schedule.yaml
  printf 'pipeline: {axis: pp, split: "blocks.*", microbatches: %d, schedule: %s, virtual_stages: %d}\n' \
    "$m" "$schedule" "$v" > "$plan"
  out=$(train --mesh pp=$p --plan "$plan" --threads 1)
  step=$(median <<<"$out")
  peak0=$(sed -n 's/^rank 0: .*peak activations \([0-9.]*\) MiB/\1/p' <<<"$out")
  peak1=$(sed -n 's/^rank 1: .*peak activations \([0-9.]*\) MiB/\1/p' <<<"$out")
  report=$("$bin/dist-opt" "$dir/model.onnx" --train "$dir/train.json" --dim batch="$batch" \
             --mesh pp=$p --plan "$plan" --report=json -o /dev/null)
  simulated=$(sed -n 's/.*"bubble_fraction": *\([0-9.e-]*\).*/\1/p' <<<"$report")
  formula=$(awk -v p=$p -v m="$m" -v v=$v -v s="$schedule" 'BEGIN {
    f = (p - 1) / (v * m + p - 1)
    if (s == "zb-h1") f = (p - 1) / (3 * m + p - 1)   # F = B = W: a third of the idle time
    print f }')
  printf "%-17s %10.1f %7.0f%% %7.0f%% %9.0f%% %9.0f / %.0f\n" "$schedule" "$step" \
    "$(awk -v t1="$single" -v t="$step" -v p=$p 'BEGIN { print 100 * (1 - t1 / (p * t)) }')" \
    "$(awk -v f="$formula" 'BEGIN { print 100 * f }')" \
    "$(awk -v f="$simulated" 'BEGIN { print 100 * f }')" "$peak0" "$peak1"
done

#!/usr/bin/env bash
# Compile time and rank-program size against the number of microbatches, for
# gradient accumulation (dp=2, zero1) and a 1F1B pipeline (pp=2), on the
# 4-block test GPT (test/data/models/gpt4_op17_dyn, sequences of 16 tokens,
# AdamW with clipping). See docs/benchmarks.md.
#
#   bench/compile/microbatches.sh [COUNTS] [REPS]
#
# COUNTS (default "4 16 64 256") are the microbatches per step; REPS
# (default 3) runs per measurement, of which the fastest counts. Per row:
#   compile s     CPU seconds (user + sys) of dist-opt compiling the step to
#                 its partitioned (SPMD) IR, -o /dev/null
#   export s      CPU seconds of the same with --export-programs (every rank's
#                 program partitioned and written)
#   rank-0 bytes  size of rank 0's rank program (rank-0.pb)
# Accumulation runs each microbatch on a batch of 2 rows; the pipeline
# splits a batch of COUNT rows into COUNT microbatches of one row.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
model=$root/test/data/models/gpt4_op17_dyn/model.onnx
counts=${1:-4 16 64 256}
reps=${2:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/distopt-microbatches.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Fastest CPU time (user + sys) of "$@" over $reps runs; "-" if it fails.
cpu_seconds() {
  local best=""
  for _ in $(seq "$reps"); do
    if ! /usr/bin/time -f "%U %S" -o "$work/time" "$@" >/dev/null 2>"$work/err"; then
      echo "-"
      return
    fi
    local t
    t=$(awk '{ printf "%.2f", $1 + $2 }' "$work/time")
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$t
    fi
  done
  echo "$best"
}

row() {  # kind count compile-args...
  local kind=$1 m=$2
  shift 2
  local compile export bytes
  compile=$(cpu_seconds "$bin/dist-opt" "$@" -o /dev/null)
  rm -rf "$work/pkg"
  export=$(cpu_seconds "$bin/dist-opt" "$@" -o /dev/null --export-programs "$work/pkg")
  bytes=$( [ -f "$work/pkg/rank-0.pb" ] && stat -c %s "$work/pkg/rank-0.pb" || echo "-")
  printf "%-13s %6d %10s %10s %14s\n" "$kind" "$m" "$compile" "$export" "$bytes"
  if [ "$compile" = "-" ]; then sed 's/^/    /' "$work/err" | head -3; fi
}

echo "dist-opt: $bin/dist-opt; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-13s %6s %10s %10s %14s\n" kind m "compile s" "export s" "rank-0 bytes"
for m in $counts; do
  cat > "$work/acc$m.json" <<EOF
{"output": "logits", "loss": {"kind": "cross_entropy"},
 "optimizer": {"kind": "adamw", "lr": 3e-4, "weight_decay": 0.1},
 "clip_grad_norm": 1.0, "gradient_accumulation_steps": $m}
EOF
  row accumulation "$m" "$model" --dim batch=2,seq=16 --train "$work/acc$m.json" \
    --mesh dp=2 --plan zero1
done
cat > "$work/step.json" <<EOF
{"output": "logits", "loss": {"kind": "cross_entropy"},
 "optimizer": {"kind": "adamw", "lr": 3e-4, "weight_decay": 0.1},
 "clip_grad_norm": 1.0}
EOF
for m in $counts; do
  printf 'pipeline: {split: "blocks.*", microbatches: %d, schedule: 1f1b}\n' "$m" > "$work/pp$m.yaml"
  row "pipeline 1f1b" "$m" "$model" --dim batch="$m",seq=16 --train "$work/step.json" \
    --mesh pp=2 --plan "$work/pp$m.yaml"
done

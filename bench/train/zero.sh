#!/usr/bin/env bash
# Model-state memory and bytes communicated per training step at each ZeRO
# level, read from the compiler's report (nothing runs, nothing is timed:
# the numbers are deterministic and do not depend on the machine).
#
#   bench/train/zero.sh [MODEL_DIR ...]
#
# For each model (a directory holding model.onnx and train.json; default
# test/data/train/gpt_adamw, then the GPT-2-small-shaped decoder of
# bench/train/run.sh in bench/.cache/train-gpt2-small, written by
# make_model.py on first use, about 500 MB) and each plan dp, zero1, zero2,
# fsdp it runs
#
#   dist-opt MODEL --train CONFIG --mesh dp=$DP --plan PLAN --report=json
#
# and prints, with zero_table.py:
#  - rank 0's parameter, gradient and optimizer-state bytes
#    (memory.per_rank_*), their sum, the ratio to dp and ZeRO's formula for
#    fp32 AdamW (4 + 4 + 8 bytes per parameter: at dp=4, 1, 0.625, 0.4375,
#    0.25);
#  - bytes rank 0 sends per step (collectives: bytes x count, ring
#    algorithms) by phase (forward, loss, backward, optimizer) and in total,
#    the ratio to dp and the ZeRO paper's (1, 1, 1, 1.5);
#  - the three largest collectives of each plan and the op that caused them.
#
# Environment: DISTOPT_BUILD_DIR (default build/); DP (default 4); BATCH
# (default 4): bound with --dim batch=BATCH for models whose batch axis is
# symbolic (those make_model.py writes, which have a shape.json).
# See docs/benchmarks.md ("ZeRO memory and communication") and
# docs/training.md ("Distributed training").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
here=$root/bench/train
py=/usr/bin/python3
dp=${DP:-4}
batch=${BATCH:-4}
plans=(dp zero1 zero2 fsdp)

if [ $# -eq 0 ]; then
  gpt2=$root/bench/.cache/train-gpt2-small
  if [ ! -f "$gpt2/model.onnx" ]; then
    echo "exporting the GPT-2-small-shaped model into $gpt2 ..." >&2
    "$py" "$here/make_model.py" "$gpt2" >/dev/null 2>&1
  fi
  set -- "$root/test/data/train/gpt_adamw" "$gpt2"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "compile-time report of dist-opt (deterministic; no step is run or timed)"
for dir in "$@"; do
  dims=()
  [ -f "$dir/shape.json" ] && dims=(--dim "batch=$batch")
  echo
  echo "model: ${dir#"$root"/}/model.onnx, config ${dir#"$root"/}/train.json${dims[*]:+ (${dims[*]})}"
  args=()
  for plan in "${plans[@]}"; do
    "$bin/dist-opt" "$dir/model.onnx" --train "$dir/train.json" --mesh "dp=$dp" --plan "$plan" \
      "${dims[@]}" --report=json -o /dev/null >"$tmp/$plan.json"
    args+=("$plan=$tmp/$plan.json")
  done
  echo
  "$py" "$here/zero_table.py" "$(basename "$dir")" "${args[@]}"
done

#!/usr/bin/env bash
# A Llama-2-70B-shaped forward graph (80 layers, d=8192, GQA 64/8 heads,
# SwiGLU 28672, vocabulary 32000, 4 x 2048 tokens; weights in a sparse
# external-data file) from ONNX import to partitioned programs, and its
# training step (--train) from import to partitioned programs.
#
#   bench/compile/llama.sh [REPEATS]
#
# Rows (median wall time and peak RSS of the whole dist-opt process):
#   tp=8                    1-D tensor parallel, SPMD program printed
#   pp=4,rep=2,dp=4,tp=8    4-axis mesh: 4 pipeline stages (1F1B, 4
#                           microbatches), data, tensor and sequence parallel
#                           (rep: replicas), the 4 stage programs printed
#   ... --dist-emit-rank=0  the same, the program rank 0 runs
#   train:tp=8              the training step (forward, cross-entropy over the
#                           logits, backward, AdamW lr 3e-4, betas 0.9/0.95,
#                           weight decay 0.1 except "*norm*"; config written
#                           to $cache/train.json), tensor parallel, SPMD
#                           program printed
#   train:rep=2,dp=4,tp=8   the training step with ZeRO-1 over dp, tensor and
#                           sequence parallel over tp, SPMD program printed
#   ... --dist-emit-rank=0  the same, the program rank 0 runs
#   train:pp=4,dp=2,tp=8    the training step cut into 4 pipeline stages
#                           (1F1B over 2 microbatches of the 4 sequences,
#                           the schedule compiled into each stage's
#                           program), ZeRO-1 over dp, tensor and sequence
#                           parallel over tp: all stage programs, then the
#                           program rank 0 runs
# Peer, in the same run: ONNX's own shape inference over the same graph
# (/usr/bin/python3: onnx.load without weights + infer_shapes), the one
# graph-wide pass every ONNX tool runs. Needs a build and python3-onnx.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache/llama70b
repeats=${1:-5}
if [ ! -f "$cache/model.onnx" ]; then
  /usr/bin/python3 "$root/bench/compile/make_llama_shaped.py" "$cache" >&2
fi
plan=$cache/pp.yaml
printf 'pipeline:\n  axis: pp\n  split: "layers.*"\n  microbatches: 4\n  schedule: 1f1b\n' > "$plan"
trainplan=$cache/pp-train.yaml
printf 'pipeline:\n  axis: pp\n  split: "layers.*"\n  microbatches: 2\n  schedule: 1f1b\n' > "$trainplan"
model=$cache/model.onnx
train=$cache/train.json
printf '%s\n' '{"output": "logits", "loss": {"kind": "cross_entropy"},' \
  ' "optimizer": {"kind": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1},' \
  ' "no_decay": ["*norm*"]}' > "$train"

measure() {  # prints "median_s max_rss_mib" of REPEATS runs of "$@"
  local times=() rss=() stats
  stats=$(mktemp)
  for _ in $(seq "$repeats"); do
    /usr/bin/time -o "$stats" -f "%e %M" "$@" > /dev/null 2>&1
    times+=("$(awk '{ print $1 }' "$stats")")
    rss+=("$(awk '{ print $2 / 1024 }' "$stats")")
  done
  rm -f "$stats"
  printf "%s %s\n" "$(printf "%s\n" "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
    "$(printf "%s\n" "${rss[@]}" | sort -n | tail -1)"
}

read -r peer peer_rss < <(measure /usr/bin/python3 -c \
  "import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); onnx.shape_inference.infer_shapes(m)" "$model")
printf "%-44s %10s %12s %14s\n" "Llama-70B-shaped, 80 layers" "median s" "peak RSS MiB" "peer / distopt"
printf "%-44s %10s %12.0f %14s\n" "peer: onnx.load + infer_shapes" "$peer" "$peer_rss" "-"
while read -r name args; do
  # shellcheck disable=SC2086
  read -r t r < <(measure "$bin/dist-opt" "$model" $args -o /dev/null)
  printf "%-44s %10s %12.0f %14s\n" "$name" "$t" "$r" "$(awk -v a="$peer" -v b="$t" 'BEGIN { printf "%.1f", a / b }')"
done <<ROWS
import-only                                 
tp=8                                        --mesh tp=8 --plan tp
pp=4,rep=2,dp=4,tp=8(all-stages)            --mesh pp=4,rep=2,dp=4,tp=8 --plan dp,tp,sp --plan $plan
pp=4,rep=2,dp=4,tp=8(rank-0)                --mesh pp=4,rep=2,dp=4,tp=8 --plan dp,tp,sp --plan $plan --dist-emit-rank=0
train:tp=8                                  --train $train --mesh tp=8 --plan tp
train:rep=2,dp=4,tp=8(SPMD)                 --train $train --mesh rep=2,dp=4,tp=8 --plan zero1,tp,sp
train:rep=2,dp=4,tp=8(rank-0)               --train $train --mesh rep=2,dp=4,tp=8 --plan zero1,tp,sp --dist-emit-rank=0
train:pp=4,dp=2,tp=8(all-stages)            --train $train --mesh pp=4,dp=2,tp=8 --plan zero1,tp,sp --plan $trainplan
train:pp=4,dp=2,tp=8(rank-0)                --train $train --mesh pp=4,dp=2,tp=8 --plan zero1,tp,sp --plan $trainplan --dist-emit-rank=0
ROWS

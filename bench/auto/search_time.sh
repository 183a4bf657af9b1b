#!/usr/bin/env bash
# Search time of --plan auto at scale: Llama-3-8B- and Llama-2-70B-shaped
# training steps (synthetic, sparse weights; bench/compile/make_llama_shaped.py)
# planned for 8 and 1024 simulated devices on the built-in h100 profile with
# an 80 GiB budget, one dist-opt process (one core).
#
#   bench/auto/search_time.sh [ROWS...]     rows: 8b:8 70b:8 8b:1024 70b:1024
#                                           (8b:dp=8: a fixed mesh, --mesh)
#   LIMIT=600 (seconds per row; a row over it prints "timed out")
#
# Prints per row: wall and user CPU seconds, peak RSS, and the search's own
# count lines (candidates predicted from layer terms, compiles of the cut
# models, compiled whole, rejected, ruled out by the memory bound, skipped,
# pipelines not simulated; seconds spent compiling) and the chosen plan.
# Needs a build and python3-onnx (/usr/bin/python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(8b:8 70b:8 8b:1024 70b:1024)
train=$cache/auto-train.json
mkdir -p "$cache"
printf '%s\n' '{"output": "logits", "loss": {"kind": "cross_entropy"},' \
  ' "optimizer": {"kind": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1},' \
  ' "no_decay": ["*norm*"]}' > "$train"
for row in "${rows[@]}"; do
  shape=${row%%:*} devices=${row##*:}
  where=(--devices "$devices")
  [[ $devices == *=* ]] && where=(--mesh "$devices")
  # Sequences of 1024 tokens: 8 for 8B (room for dp and microbatches to
  # divide on 8 devices), 1024 for 70B (1024 devices: dp x microbatches
  # must divide the batch).
  batch=8
  [ "$shape" = 70b ] && batch=1024
  dir=$cache/auto-llama$shape-b$batch
  if [ ! -f "$dir/model.onnx" ]; then
    /usr/bin/python3 "$root/bench/compile/make_llama_shaped.py" "$dir" \
      --shape "$shape" --seq 1024 --batch "$batch" >&2
  fi
  stats=$(mktemp)
  out=$(mktemp)
  status=0
  /usr/bin/time -o "$stats" -f "%e %U %M" timeout "${LIMIT:-600}" \
    taskset -c 0 "$bin/dist-opt" "$dir/model.onnx" --train "$train" \
    --plan auto "${where[@]}" --machine h100 --memory-budget 80GiB --report \
    -o /dev/null > "$out" 2>&1 || status=$?
  read -r secs user rss < <(tail -1 "$stats")
  printf '%-12s %8.2f s wall %8.2f s user %6d MiB%s\n' "$shape:$devices" \
    "$secs" "$user" "$((rss / 1024))" \
    "$([ "$status" = 124 ] && echo "  timed out after ${LIMIT:-600} s")"
  grep -E '^(auto plan:|== --plan auto:|pipelines predicted|error:)|error:' \
    "$out" | sed 's/^/    /'
  rm -f "$stats" "$out"
done

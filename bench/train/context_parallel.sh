#!/usr/bin/env bash
# Context parallelism on threads: training step time and per-rank activation
# memory against the sequence length, for cp=1 (one device), 2 and 4.
#
#   bench/train/context_parallel.sh [SEQ ...]       (default 256 512 1024 2048)
#
# For each sequence length it exports the Llama of
# test/data/train/llama_long_context at that length (make_long_context.py,
# into bench/.cache/long-context-SEQ on first use; batch BATCH, default 1)
# and, for each cp and attention variant, runs
#
#   dist-train MODEL --train CONFIG [--mesh cp=N --plan PLAN] --steps 1 --bench 3
#
# (median step time; rank 0's measured activation peak) and
#
#   dist-opt MODEL --train CONFIG [--mesh cp=N --plan PLAN] --report=json
#
# (rank 0's activation_bytes_peak as the compiler counts it). The ratios are
# to cp=1 at the same length. Environment: DISTOPT_BUILD_DIR (default
# build/), BATCH, VARIANTS (default "allgather ulysses ring").
# See docs/benchmarks.md ("Context parallelism").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
here=$root/bench/train
py=/usr/bin/python3
batch=${BATCH:-1}
variants=(${VARIANTS:-allgather ulysses ring})
[ $# -eq 0 ] && set -- 256 512 1024 2048

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in "${variants[@]}"; do
  printf 'context_parallel:\n  axis: cp\n  attention: %s\n' "$v" >"$tmp/$v.yaml"
done

report_peak() { # json file -> MiB
  "$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.2f" % (r["memory"]["activation_bytes_peak"]/1048576))' "$1"
}

echo "batch $batch, threads (one per rank), $(nproc) cores"
echo
echo "| seq | cp | attention | step ms | measured peak MiB | vs cp=1 | report peak MiB | vs cp=1 |"
echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
for seq in "$@"; do
  dir=$root/bench/.cache/long-context-$seq-b$batch
  if [ ! -f "$dir/model.onnx" ]; then
    "$py" "$here/make_long_context.py" "$dir" "$seq" "$batch" >/dev/null 2>&1
  fi
  base_measured=""; base_report=""
  for run in "1 -" "2 allgather" "4 allgather" "2 ulysses" "4 ulysses" \
             "2 ring" "4 ring"; do
    set -- $run
    cp=$1; variant=$2
    args=()
    if [ "$cp" != 1 ]; then
      [[ " ${variants[*]} " == *" $variant "* ]] || continue
      args=(--mesh "cp=$cp" --plan "$tmp/$variant.yaml")
    fi
    "$bin/dist-train" "$dir/model.onnx" --train "$dir/train.json" "${args[@]}" \
      --steps 1 --bench 3 >"$tmp/run.txt" 2>&1
    ms=$(awk '/^median_ms:/ {print $2}' "$tmp/run.txt")
    measured=$(awk '/^rank 0:/ {for (i = 1; i <= NF; ++i) if ($i == "activations") print $(i+1)}' "$tmp/run.txt")
    "$bin/dist-opt" "$dir/model.onnx" --train "$dir/train.json" "${args[@]}" \
      --report=json -o /dev/null >"$tmp/report.json" 2>/dev/null
    report=$(report_peak "$tmp/report.json")
    if [ "$cp" = 1 ]; then base_measured=$measured; base_report=$report; fi
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
    echo "| $seq | $cp | $variant | $ms | $measured | $(ratio "$measured" "$base_measured") | $report | $(ratio "$report" "$base_report") |"
  done
done

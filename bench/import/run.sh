#!/usr/bin/env bash
# Import time and peak memory of the GPT-2-small-shaped export (12 layers,
# d=768, vocab 50257; about 650 MB of weights inline in the .onnx file)
# against the ONNX Python package's own loader in the same run.
#
#   bench/import/run.sh [REPEATS]
#
# Needs a build (scripts/build.sh) and, for the export, Debian's
# python3-torch (apt-get install -y python3-torch). Rows:
#   distopt import   onnx-import-test --time: the importer alone, in process
#   distopt process  the whole onnx-import-test run (MLIR start-up, import,
#                    printing the module), wall time and peak RSS
#   onnx.load        /usr/bin/python3 -c 'onnx.load(model)': parses the
#                    protobuf and holds every weight in memory
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
repeats=${1:-5}
model=$cache/gpt2-small/model.onnx
if [ ! -f "$model" ]; then
  echo "exporting the GPT-2-small-shaped model (about 650 MB) ..." >&2
  /usr/bin/python3 "$root/bench/models/make_gpt2_small.py" "$cache/gpt2-small" >/dev/null
fi
cat "$model" > /dev/null  # warm the page cache: both sides read a cached file

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

import_ms=() ; dist_wall=() ; dist_rss=() ; onnx_wall=() ; onnx_rss=()
for _ in $(seq "$repeats"); do
  out=$( { /usr/bin/time -f "TIME %e %M" "$bin/onnx-import-test" "$model" --time > /dev/null; } 2>&1 )
  import_ms+=("$(sed -n 's/^import took \([0-9.]*\) ms/\1/p' <<<"$out")")
  dist_wall+=("$(awk '/^TIME/ { print $2 * 1000 }' <<<"$out")")
  dist_rss+=("$(awk '/^TIME/ { print $3 / 1024 }' <<<"$out")")
  out=$( { /usr/bin/time -f "TIME %e %M" /usr/bin/python3 -c "import onnx, sys; onnx.load(sys.argv[1])" "$model"; } 2>&1 )
  onnx_wall+=("$(awk '/^TIME/ { print $2 * 1000 }' <<<"$out")")
  onnx_rss+=("$(awk '/^TIME/ { print $3 / 1024 }' <<<"$out")")
done
imp=$(printf "%s\n" "${import_ms[@]}" | median)
dw=$(printf "%s\n" "${dist_wall[@]}" | median)
dr=$(printf "%s\n" "${dist_rss[@]}" | median)
ow=$(printf "%s\n" "${onnx_wall[@]}" | median)
orss=$(printf "%s\n" "${onnx_rss[@]}" | median)
bytes=$(stat -c %s "$model")
printf "model: %s (%.0f MB), median of %d runs\n\n" "$(basename "$(dirname "$model")")" \
  "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$repeats"
printf "%-34s %12s %14s\n" "" "wall ms" "peak RSS MB"
printf "%-34s %12.1f %14s\n" "distopt import (in process)" "$imp" "-"
printf "%-34s %12.0f %14.0f\n" "distopt onnx-import-test process" "$dw" "$dr"
printf "%-34s %12.0f %14.0f\n" "python onnx.load process" "$ow" "$orss"
echo
echo "onnx.load / distopt process: time $(ratio "$ow" "$dw")x, memory $(ratio "$orss" "$dr")x"

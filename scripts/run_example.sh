#!/usr/bin/env bash
# The main job on the bundled example: set up, build, then compile the
# Megatron-style MLP in examples/mlp.onnx for tensor parallelism on 2 and 4
# devices, run every rank, and compare each result with a single-device run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
for mesh in tp=2 tp=4; do
  echo "== dist-run examples/mlp.onnx --mesh $mesh --plan tp --check"
  "$bin/dist-run" "$root/examples/mlp.onnx" --mesh "$mesh" --plan tp --check
done
echo "== the program rank 1 runs on tp=2"
"$bin/dist-opt" "$root/examples/mlp.onnx" --mesh tp=2 --plan tp --dist-emit-rank=1 \
  --mlir-elide-elementsattrs-if-larger=8

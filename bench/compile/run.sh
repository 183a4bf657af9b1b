#!/bin/sh
# Compile speed of distopt's sharding passes against upstream MLIR's
# (mlir-opt --sharding-propagation --shard-partition) on Megatron-style
# linalg chains of 1k to 100k ops. See docs/benchmarks.md.
#
#   bench/compile/run.sh [BUILD_DIR] [compare.py options...]
#
# BUILD_DIR (default: build) holds bin/dist-opt. mlir-opt comes from
# $MLIR_OPT, else mlir-opt-22 or mlir-opt on PATH, else Debian's LLVM 22.
# Examples:
#   bench/compile/run.sh build --sizes 1000,10000 --reps 1
#   bench/compile/run.sh build --variants args,ops,shared
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
dist_opt=$build/bin/dist-opt
if [ ! -x "$dist_opt" ]; then
  echo "run.sh: no dist-opt at $dist_opt (pass the build directory)" >&2
  exit 1
fi
mlir_opt=${MLIR_OPT:-}
if [ -z "$mlir_opt" ]; then
  mlir_opt=$(command -v mlir-opt-22 || command -v mlir-opt || echo /usr/lib/llvm-22/bin/mlir-opt)
fi
python=${PYTHON:-python3}
[ -x /usr/bin/python3 ] && python=${PYTHON:-/usr/bin/python3}
workdir=$(mktemp -d "${TMPDIR:-/tmp}/distopt-compile-bench.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
echo "dist-opt: $dist_opt"
echo "mlir-opt: $mlir_opt ($("$mlir_opt" --version | grep -i version | head -1 | sed 's/^ *//'))"
echo "machine:  $(nproc) cores, $(uname -m)"
"$python" "$here/compare.py" --dist-opt "$dist_opt" --mlir-opt "$mlir_opt" \
  --workdir "$workdir" "$@"

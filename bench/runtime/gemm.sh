#!/usr/bin/env bash
# The matmul instruction's GFLOP/s on a training step's products (forward,
# input gradient, weight gradient of each linear layer), one thread: with
# the executor's choice of library, with oneDNN wherever it has a kernel
# (DISTRT_GEMM=onednn) and with every GEMM on OpenBLAS
# (DISTRT_GEMM=openblas), side by side.
#
#   bench/runtime/gemm.sh [M K N ...]       (default: distrt-gemm-bench's list)
#
# See docs/runtime.md ("Matmul") and docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; flags: $(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "GEMM kernels: $("$bin/dist-run" "$root/test/data/models/gpt_op17/model.onnx" --bench 1 2>/dev/null | sed -n 's/.*GEMM \([^;]*\);.*/\1/p')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/distrt-gemm-bench" "$@" >"$tmp/chosen"
DISTRT_GEMM=onednn "$bin/distrt-gemm-bench" "$@" >"$tmp/onednn"
DISTRT_GEMM=openblas "$bin/distrt-gemm-bench" "$@" >"$tmp/openblas"
echo
echo "| product | M | K | N | executor's choice | oneDNN | OpenBLAS | oneDNN / OpenBLAS |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
paste "$tmp/chosen" "$tmp/onednn" "$tmp/openblas" | tail -n +4 | awk -F'\t' '{
  split($1, a, "  +"); split($2, b, "  +"); split($3, c, "  +");
  printf "| %s | %s | %s | %s | %s | %s | %s | %.2f |\n", a[1], a[2], a[3], a[4], a[5], b[5], c[5], b[5] / c[5] }'

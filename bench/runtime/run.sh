#!/usr/bin/env bash
# distrt against ONNX Runtime on one rank, bf16 against f32 inference,
# memory per rank under tensor parallelism, and tensor-parallel scaling on a
# compute-bound MLP.
#
#   bench/runtime/run.sh [ITERATIONS]
#
# Needs a build (scripts/build.sh), Node.js + npm (ONNX Runtime is installed
# into bench/.cache/ort on first use), Open MPI for the memory rows, and for
# the GPT-2-small export Debian's python3-torch (apt-get install -y
# python3-torch). See docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DISTOPT_BUILD_DIR:-$root/build}/bin
cache=$root/bench/.cache
iters=${1:-20}
mkdir -p "$cache"

if [ ! -d "$cache/ort/node_modules/onnxruntime-node" ]; then
  echo "installing onnxruntime-node into $cache/ort ..." >&2
  mkdir -p "$cache/ort"
  (cd "$cache/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent onnxruntime-node@1.30.0 >/dev/null)
fi
gpt2=$cache/gpt2-small/model.onnx
if [ ! -f "$gpt2" ]; then
  echo "exporting the GPT-2-small-shaped model (about 650 MB) ..." >&2
  /usr/bin/python3 "$root/bench/models/make_gpt2_small.py" "$cache/gpt2-small" >/dev/null
fi
median() { sed -n 's/median_ms: //p'; }
ort() { NODE_PATH="$cache/ort/node_modules" node "$root/bench/runtime/ort_bench.js" "$@" | median; }
distrun() { "$bin/dist-run" "$@" --bench "$iters" 2>/dev/null | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# OpenBLAS picks its kernels by CPU unless OPENBLAS_CORETYPE says otherwise;
# some machines of ours set it to Haswell. distrt is measured both ways,
# and each way also with every GEMM on OpenBLAS (DISTRT_GEMM=openblas, as
# distrt was before it used oneDNN). ONNX Runtime uses its own kernels
# (MLAS): it is timed once per model and thread count.
echo "OPENBLAS_CORETYPE in the environment: ${OPENBLAS_CORETYPE:-(unset)}"
echo "GEMM kernels: $(env -u OPENBLAS_CORETYPE "$bin/dist-run" "$root/test/data/models/gpt_op17/model.onnx" --bench 1 2>/dev/null | sed -n 's/.*GEMM \([^;]*\);.*/\1/p')"
echo
printf "%-26s %-10s %10s %10s %9s %11s %11s\n" "single rank vs ONNX Runtime" "OpenBLAS" "distrt ms" "OpenBLAS" "ORT ms" "ORT/distrt" "ORT/OpenBLAS"
printf "%-26s %-10s %10s %10s %9s %11s %11s\n" "" "core type" "" "only ms" "" "" "only"
for threads in 1 2; do
  # (model, token-id bound: the test GPT has a vocabulary of 96)
  for spec in "$gpt2 50257" "$root/test/data/models/gpt_op17/model.onnx 96"; do
    read -r model ids <<<"$spec"
    name="$(basename "$(dirname "$model")"), $threads thread(s)"
    o=$(ort "$model" "$threads" "$iters" "$ids")
    for core in detected Haswell; do
      if [ "$core" = detected ]; then run=(env -u OPENBLAS_CORETYPE); else run=(env OPENBLAS_CORETYPE=Haswell); fi
      d=$("${run[@]}" "$bin/dist-run" "$model" --threads "$threads" --bench "$iters" 2>/dev/null | median)
      b=$("${run[@]}" DISTRT_GEMM=openblas "$bin/dist-run" "$model" --threads "$threads" --bench "$iters" 2>/dev/null | median)
      label=$("${run[@]}" "$bin/dist-run" "$model" --bench 1 2>/dev/null | sed -n 's/.*OpenBLAS \([^;]*\);.*/\1/p')
      printf "%-26s %-10s %10s %10s %9s %11s %11s\n" "$name" "$label" "$d" "$b" "$o" "$(ratio "$o" "$d")" "$(ratio "$o" "$b")"
      name=""
      [ "$model" = "$gpt2" ] && [ "$threads" = 1 ] && [ "$core" = detected ] && gpt2_ms=$d
    done
  done
done

# bf16 inference: GPT-2-small's exported rank program retyped to bf16 (the
# same instructions; weights rounded to bf16 at load, activations bf16)
# against the same program in f32, distrt only (ONNX Runtime's CPU provider
# has no bf16). The kernels column says how distrt ran the bf16
# instructions on this CPU (docs/runtime.md, "bf16 and f16 on the host").
program=$cache/gpt2-small-program/rank-0.pb
if [ ! -f "$program" ]; then
  "$bin/dist-opt" "$gpt2" --export-programs="$(dirname "$program")" >/dev/null
fi
echo
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
printf "%-26s %10s %10s %12s  %s\n" "bf16 vs f32 (distrt)" "f32 ms" "bf16 ms" "f32/bf16" "bf16 kernels"
for threads in 1 2; do
  f=$("$bin/distrt-dtype-bench" "$program" --dtype f32 --threads "$threads" --runs "$iters" --ids 50257 | median)
  out=$("$bin/distrt-dtype-bench" "$program" --dtype bf16 --threads "$threads" --runs "$iters" --ids 50257 2>&1)
  h=$(median <<<"$out")
  converted=$(sed -n 's/.*as f32 with conversions: \([0-9]*\).*/\1/p' <<<"$out")
  kernels="native"
  [ "${converted:-0}" -gt 0 ] && kernels="bf16 via f32 conversion ($converted instructions)"
  printf "%-26s %10s %10s %12s  %s\n" "gpt2-small, $threads thread(s)" "$f" "$h" "$(ratio "$f" "$h")" "$kernels"
done
echo

# How close GPT-2-small at one thread comes to the machine's GEMM rate: its
# FLOPs (2 per multiply-add of every matmul: 12 layers of QKV, projection
# and MLP, attention scores and values, the vocabulary head; 1 x 128
# tokens) over the time, against one large GEMM by a packed weight
# ([1024 x 1024] x [1024 x 4096]) at one thread.
gemm=$cache/gemm_rate.mlir
cat > "$gemm" <<'MLIR'
func.func @main(%x: tensor<1024x1024xf32>) -> tensor<1024x4096xf32> {
  %w = nn.weight "w" : tensor<1024x4096xf32>
  %y = nn.matmul %x, %w : tensor<1024x1024xf32>, tensor<1024x4096xf32> -> tensor<1024x4096xf32>
  return %y : tensor<1024x4096xf32>
}
MLIR
gemm_ms=$(distrun "$gemm" --threads 1)
echo
awk -v g="$gemm_ms" -v m="$gpt2_ms" 'BEGIN {
  L = 12; d = 768; s = 128; V = 50257
  flops = L * (2 * s * 12 * d * d + 4 * s * s * d) + 2 * s * d * V
  big = 2 * 1024 * 1024 * 4096 / (g / 1000) / 1e9
  got = flops / (m / 1000) / 1e9
  printf "GPT-2-small 1x128: %.2f GFLOP per run; at 1 thread %.1f GFLOP/s (%.0f%% of one large GEMM: %.1f GFLOP/s, %s ms)\n", flops / 1e9, got, 100 * got / big, big, g
}'

# Memory per rank: GPT-2-small on one rank and under tp=2 with one process
# per rank (mpirun), peak RSS of each process, and the executor's own
# count of weight bytes.
if command -v mpirun >/dev/null; then
  echo
  base=$( { /usr/bin/time -f "%M" "$bin/dist-run" --help >/dev/null; } 2>&1 | tail -1)
  one=$( { /usr/bin/time -f "RSS %M" "$bin/dist-run" "$gpt2" >/dev/null; } 2>&1 )
  two=$(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
          /usr/bin/time -f "RSS %M" "$bin/dist-run" "$gpt2" --mesh tp=2 --plan tp --backend mpi 2>&1 >/dev/null)
  w1=$(sed -n 's/.*rank 0: weights \([0-9.]*\) MiB.*/\1/p' <<<"$one")
  w2=$(sed -n 's/.*rank 0: weights \([0-9.]*\) MiB.*/\1/p' <<<"$two")
  r1=$(awk '/^RSS/ { print $2 / 1024 }' <<<"$one")
  r2=$(awk '/^RSS/ { m = m < $2 ? $2 : m } END { print m / 1024 }' <<<"$two")
  b=$(awk -v k="$base" 'BEGIN { print k / 1024 }')
  printf "%-34s %14s %14s %22s\n" "GPT-2-small memory per rank" "weights MiB" "peak RSS MiB" "RSS - process base MiB"
  printf "%-34s %14s %14.0f %22.0f\n" "1 rank" "$w1" "$r1" "$(awk -v a="$r1" -v b="$b" 'BEGIN { print a - b }')"
  printf "%-34s %14s %14.0f %22.0f\n" "tp=2, mpi, largest rank" "$w2" "$r2" "$(awk -v a="$r2" -v b="$b" 'BEGIN { print a - b }')"
  printf "(process base: %.0f MiB, the RSS of dist-run --help: MLIR and LLVM libraries)\n" "$b"
fi

# A compute-bound MLP: [512 x 2048] @ [2048 x 8192] -> gelu -> @ [8192 x 2048].
mlp=$cache/mlp_big.mlir
cat > "$mlp" <<'MLIR'
func.func @main(%x: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %w1 = nn.weight "fc1.weight" : tensor<2048x8192xf32>
  %w2 = nn.weight "fc2.weight" : tensor<8192x2048xf32>
  %h = nn.matmul %x, %w1 : tensor<512x2048xf32>, tensor<2048x8192xf32> -> tensor<512x8192xf32>
  %g = nn.gelu %h : tensor<512x8192xf32>
  %y = nn.matmul %g, %w2 : tensor<512x8192xf32>, tensor<8192x2048xf32> -> tensor<512x2048xf32>
  return %y : tensor<512x2048xf32>
}
MLIR
one=$(distrun "$mlp" --threads 1)
two=$(distrun "$mlp" --mesh tp=2 --plan tp --threads 1)
echo
printf "%-44s %12s %12s %10s\n" "tensor-parallel MLP (1 thread per rank)" "1 rank ms" "tp=2 ms" "speed-up"
printf "%-44s %12s %12s %10s\n" "512x2048 -> 8192 -> 2048, local" "$one" "$two" "$(ratio "$one" "$two")"
if command -v mpirun >/dev/null; then
  twompi=$(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
             "$bin/dist-run" "$mlp" --mesh tp=2 --plan tp --backend mpi --bench "$iters" 2>/dev/null | median)
  printf "%-44s %12s %12s %10s\n" "512x2048 -> 8192 -> 2048, mpi" "$one" "$twompi" "$(ratio "$one" "$twompi")"
fi

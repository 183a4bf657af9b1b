#!/usr/bin/env bash
# Collective benchmarks: distrt's `local` all-reduce against torch's gloo and
# a memcpy baseline, and distrt's `mpi` all-reduce against MPI_Allreduce
# called directly. Builds what it needs (a Release build of the runtime and
# the bench programs under bench/.cache/collectives-build), then prints one
# table. See docs/benchmarks.md, "Collectives".
#
#   bench/collectives/run.sh [ITERATIONS]
#
# Needs: cmake, ninja, the runtime's packages (scripts/setup.sh), Open MPI
# for the mpi rows, and for the gloo row Debian's PyTorch:
#   apt-get install -y python3-torch libopenblas0-pthread
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${DISTRT_BENCH_BUILD:-$root/bench/.cache/collectives-build}
iters=${1:-50}
bytes=$((4 << 20))
jobs=${JOBS:-2}

echo "building the benchmarks in $build ..." >&2
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" -j"$jobs" >/dev/null

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
gbs() { awk -v n="$1" -v ms="$2" 'BEGIN { if (ms > 0) printf "%.2f", n / ms / 1e6; else print "n/a" }'; }

# ---- local vs gloo vs memcpy (2 ranks, 4 MB f32) -------------------------------
out=$("$build/bench_local_allreduce" "$bytes" 2 "$iters")
local_ms=$(echo "$out" | sed -n 's/^local_allreduce_ms //p')
memcpy_ms=$(echo "$out" | sed -n 's/^memcpy_ms //p')
gloo_ms=""
if /usr/bin/python3 -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null; then
  gloo_ms=$(/usr/bin/python3 "$here/gloo_allreduce.py" "$bytes" 2 "$iters" | sed -n 's/^gloo_allreduce_ms //p')
else
  echo "note: torch with gloo not found for /usr/bin/python3; install it with" >&2
  echo "      apt-get install -y python3-torch libopenblas0-pthread" >&2
fi

echo
printf "%-46s %12s %10s %12s\n" "all-reduce sum f32, 4 MB, 2 ranks" "median ms" "GB/s" "vs distrt"
printf "%-46s %12s %10s %12s\n" "distrt local (2 threads, one process)" "$local_ms" "$(gbs "$bytes" "$local_ms")" "1.00"
if [ -n "$gloo_ms" ]; then
  printf "%-46s %12s %10s %12s\n" "torch gloo (2 processes)" "$gloo_ms" "$(gbs "$bytes" "$gloo_ms")" "$(ratio "$gloo_ms" "$local_ms")x slower"
else
  printf "%-46s %12s\n" "torch gloo (2 processes)" "not installed"
fi
printf "%-46s %12s %10s %12s\n" "memcpy of 4 MB (one thread, baseline)" "$memcpy_ms" "$(gbs "$bytes" "$memcpy_ms")" "$(ratio "$local_ms" "$memcpy_ms") memcpys"

# ---- mpi vs plain MPI_Allreduce (2 processes) ----------------------------------
if [ ! -x "$build/bench_mpi_allreduce" ]; then
  echo
  echo "mpi rows skipped: Open MPI not found at build time (apt-get install -y libopenmpi-dev openmpi-bin)"
  exit 0
fi
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
sizes=(4096 65536 1048576 4194304 16777216)
# The reference program (MPI_Allreduce, nothing else) runs on its own; the
# distrt program times MPI_Allreduce and distrt round by round on the same
# buffers, so its ratio is not skewed by load that comes and goes.
plain=$("${mpirun[@]}" "$build/bench_plain_mpi_allreduce" "$iters" "${sizes[@]}")
checked=$("${mpirun[@]}" "$build/bench_mpi_allreduce" "$iters" 1 "${sizes[@]}")
unchecked=$("${mpirun[@]}" "$build/bench_mpi_allreduce" "$iters" 0 "${sizes[@]}")
echo
echo "mpi all-reduce sum f32, 2 ranks, median ms (ratio = distrt / MPI_Allreduce in the same run)"
printf "%-10s %14s | %14s %12s %7s | %14s %12s %7s\n" "size" "plain program" \
  "MPI_Allreduce" "distrt" "ratio" "MPI_Allreduce" "distrt" "ratio"
printf "%-10s %14s | %36s | %36s\n" "" "" "distrt with collective check" "distrt without the check"
for s in "${sizes[@]}"; do
  p=$(echo "$plain" | awk -v s="$s" '$1 == s { print $2 }')
  cp=$(echo "$checked" | awk -v s="$s" '$1 == s { print $2 }')
  cd=$(echo "$checked" | awk -v s="$s" '$1 == s { print $3 }')
  up=$(echo "$unchecked" | awk -v s="$s" '$1 == s { print $2 }')
  ud=$(echo "$unchecked" | awk -v s="$s" '$1 == s { print $3 }')
  printf "%-10s %14s | %14s %12s %7s | %14s %12s %7s\n" "$((s / 1024)) KB" "$p" \
    "$cp" "$cd" "$(ratio "$cd" "$cp")" "$up" "$ud" "$(ratio "$ud" "$up")"
done

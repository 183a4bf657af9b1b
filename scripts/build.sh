#!/usr/bin/env bash
# Configures and builds distopt into ./build (or $DISTOPT_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTOPT_BUILD_DIR:-$root/build}
jobs=${DISTOPT_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$jobs"

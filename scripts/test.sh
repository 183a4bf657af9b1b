#!/usr/bin/env bash
# Sets up, builds, and runs every test (GoogleTest and lit, through ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${DISTOPT_BUILD_DIR:-$root/build}
ctest --test-dir "$build" -j "${DISTOPT_JOBS:-$(nproc)}" --output-on-failure

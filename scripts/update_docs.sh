#!/usr/bin/env bash
# Regenerates the TableGen reference docs and copies them into docs/generated/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTOPT_BUILD_DIR:-$root/build}
cmake --build "$build" --target distopt-docs
mkdir -p "$root/docs/generated"
cp "$build"/docs/generated/*.md "$root/docs/generated/"
echo "docs/generated updated"

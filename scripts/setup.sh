#!/usr/bin/env bash
# Installs every Debian package distopt needs to build, test and benchmark.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build git pkg-config
  # MLIR / LLVM 22 with lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # model format and runtime dependencies
  libprotobuf-dev protobuf-compiler libonnx-dev
  libopenblas-dev libopenblas0-pthread
  # GEMMs over weights packed once (oneDNN); without it all go to OpenBLAS
  libdnnl-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev
  # test data and Python peers (exported models, conformance suite)
  python3 python3-onnx python3-numpy
  libonnx-testdata
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

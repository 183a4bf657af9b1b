#!/usr/bin/env bash
# Prepares the GPU check for a GPU machine that has the CUDA runtime and
# PyTorch but neither MLIR nor the project's Debian packages (as the machines
# a session may be lent): builds dist-train, dist-run, the CUDA tests, the
# runtime's CPU tests and distrt-gemm-rate with MLIR linked statically and
# oneDNN's library beside them (build-gpu/), exports the
# GPT-2-small benchmark model at two sequence lengths (graph and batches
# only: its weights are written anew on the GPU machine by
# bench/gpu/weights.py), and packs it all into .gpucarry/ (about 35 MB).
# Then, on the GPU machine, from the repository root with .gpucarry/ beside the sources:
#
#   scripts/gpu_check.sh
#
# Environment: CUDA_ARCHS (default 90: H100/H200), DISTOPT_GPU_BUILD_DIR
# (default build-gpu), SEQ (benchmark sequence length, default 1024).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTOPT_GPU_BUILD_DIR:-$root/build-gpu}
carry=$root/.gpucarry
seq=${SEQ:-1024}
"$root/scripts/setup.sh"
# The benchmark model is exported with Debian's PyTorch.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "gpu_bundle: no CUDA toolkit (nvcc) on this machine" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# No MPI: the GPU machine has none (one GPU: the local backend with
# host-staged collectives). oneDNN is carried (its library below), so that
# the check's part 5 runs the bf16 GEMMs on the host CPU (AMX or
# AVX512-BF16 where it has them) with distrt_tests' bf16 cases.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDISTOPT_STATIC_MLIR=ON \
  -DDISTRT_USE_ONEDNN=ON -DDISTOPT_ENABLE_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
  "${launcher[@]}" >/dev/null
tools=(dist-train dist-run distrt_cuda_tests distrt-gemm-rate distrt_tests)
cmake --build "$build" -j "${DISTOPT_JOBS:-$(nproc)}" --target "${tools[@]}"

rm -rf "$carry"
mkdir -p "$carry/pack/bin" "$carry/pack/lib" "$carry/gpt2"
for t in "${tools[@]}"; do
  cp "$build/bin/$t" "$carry/pack/bin/"
  strip "$carry/pack/bin/$t"
done
# Every shared library the tools need but the GPU machine's base system or
# its CUDA installation provides.
for lib in $(ldd "$carry"/pack/bin/* | awk '/=> \// { print $3 }' | sort -u); do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | libstdc++.so* | libgcc_s.so* | \
      ld-linux* | libcuda*.so* | libcublas*.so* | libnccl.so* | libz.so*) ;;
    *) cp -L "$lib" "$carry/pack/lib/" ;;
  esac
done
tar -C "$carry/pack" -cJf "$carry/bundle.tar.xz" .
rm -rf "$carry/pack"

# The benchmark models: exported with torch here, weights detached. gpt2
# at SEQ tokens for the GPU (part 3), gpt2-s128 at 1 x 128 tokens for the
# host CPU (part 6, as bench/train measures it).
carry_model() { # NAME SEQ EXPORT_DIR (under bench/.cache, shared with bench/train)
  local export_dir=$root/bench/.cache/$3
  if [ ! -f "$export_dir/model.onnx" ]; then
    /usr/bin/python3 "$root/bench/train/make_model.py" "$export_dir" --shape "12,768,12,50257,1024,$2" >/dev/null
  fi
  /usr/bin/python3 "$root/bench/gpu/weights.py" detach "$export_dir/model.onnx" "$carry/$1"
  rm "$carry/$1/weights.bin"
  cp "$export_dir/train.json" "$export_dir/tokens.bin" "$export_dir/shape.json" "$carry/$1/"
}
carry_model gpt2 "$seq" "gpu-gpt2-small-export$([ "$seq" = 1024 ] || echo "-$seq")"
carry_model gpt2-s128 128 train-gpt2-small
du -sh "$carry" "$carry"/*

// Launching portable kernel bodies (portable/hd.h) on a CUDA stream: one
// thread per element index (LaunchFor), or one warp per row whose 32 lanes
// combine partial results with shuffles (LaunchRows). The bodies are the
// ones portable/host_launch.h runs on the host.
#ifndef DISTRT_SRC_CUDA_LAUNCH_CUH_
#define DISTRT_SRC_CUDA_LAUNCH_CUH_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "portable/hd.h"

namespace distrt {
namespace cuda {

constexpr int kThreadsPerBlock = 256;
constexpr int kWarpsPerBlock = kThreadsPerBlock / 32;

// Whether `p` is aligned for packs of `bytes`. Buffers start 64-byte
// aligned (Device::Allocate) and tensors at their buffer's start, so packs
// of elements are aligned; checked anyway.
inline bool Aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

inline int BlocksFor(int64_t threads) {
  int64_t b = (threads + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (b > 65535 * 16) b = 65535 * 16;  // grid-stride loops cover the rest
  return static_cast<int>(b < 1 ? 1 : b);
}

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    f(i);
  }
}

// f(i) for i in [0, n), queued on `stream`.
template <typename F>
cudaError_t LaunchFor(int64_t n, const F& f, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ForEachKernel<F><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, f);
  return cudaGetLastError();
}

// A warp's 32 lanes working on one row (see portable::OneLane).
struct WarpLanes {
  static constexpr int count = 32;
  int lane = 0;
  template <typename C>
  __host__ __device__ C Sum(C x) const {
#if defined(__CUDA_ARCH__)
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
#endif
    return x;
  }
  template <typename C>
  __host__ __device__ C Max(C x) const {
#if defined(__CUDA_ARCH__)
    for (int o = 16; o > 0; o >>= 1) {
      const C y = __shfl_xor_sync(0xffffffffu, x, o);
      x = (y > x || y != y) ? y : x;  // NaN wins, as on the host
    }
#endif
    return x;
  }
  template <typename C>
  __host__ __device__ C Min(C x) const {
#if defined(__CUDA_ARCH__)
    for (int o = 16; o > 0; o >>= 1) {
      const C y = __shfl_xor_sync(0xffffffffu, x, o);
      x = (y < x || y != y) ? y : x;
    }
#endif
    return x;
  }
};

template <typename F>
__global__ void RowsKernel(int64_t rows, F f) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  WarpLanes lanes;
  lanes.lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    f(r, lanes);
  }
}

// f(row, lanes) for each row, one warp per row, queued on `stream`.
template <typename F>
cudaError_t LaunchRows(int64_t rows, const F& f, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RowsKernel<F><<<BlocksFor(rows * 32), kThreadsPerBlock, 0, stream>>>(rows, f);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_LAUNCH_CUH_

// Device atomics shared by the scatter kernels (index.cu, elements.cu):
// AtomicAdd (scatter_add's and scatter_elements' "add") and AtomicMax on
// 64-bit positions, as Policy structs whose host side is empty (host
// tests use portable bodies with sequential policies instead).
#ifndef DISTRT_SRC_CUDA_ATOMICS_CUH_
#define DISTRT_SRC_CUDA_ATOMICS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

__device__ __forceinline__ void DeviceAdd(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void DeviceAdd(double* p, double v) { atomicAdd(p, v); }
// Integer atomics wrap, as the host's WrapAdd.
__device__ __forceinline__ void DeviceAdd(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void DeviceAdd(int32_t* p, int32_t v) {
  atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v));
}
// 16-bit floats: one rounding per addition, as the host's f16/bf16 adds
// (native on sm_90; cuda_bf16.h / cuda_fp16.h emulate it with a 16-bit
// compare-and-swap on older GPUs).
__device__ __forceinline__ void DeviceAdd(bf16_t* p, bf16_t v) {
  __nv_bfloat16_raw raw;
  raw.x = v.bits;
  atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __nv_bfloat16(raw));
}
__device__ __forceinline__ void DeviceAdd(f16_t* p, f16_t v) {
  __half_raw raw;
  raw.x = v.bits;
  atomicAdd(reinterpret_cast<__half*>(p), __half(raw));
}

struct AtomicAdd {
  template <typename T>
  static __host__ __device__ void Add(T* p, T v) {
#if defined(__CUDA_ARCH__)
    DeviceAdd(p, v);
#endif
  }
};

struct AtomicMax {
  static __host__ __device__ void Max(long long* p, long long v) {
#if defined(__CUDA_ARCH__)
    atomicMax(p, v);
#endif
  }
};

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_ATOMICS_CUH_

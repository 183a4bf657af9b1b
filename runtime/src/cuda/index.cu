#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/dispatch.cuh"
#include "cuda/index.h"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"
#include "portable/index.h"

namespace distrt {
namespace cuda {
namespace {

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

// scatter_add's Adder on the device (SequentialAdd is the host's).
struct AtomicAdd {
  template <typename T>
  static __host__ __device__ void Add(T* p, T v) {
#if defined(__CUDA_ARCH__)
    DeviceAdd(p, v);
#endif
  }
};

}  // namespace

cudaError_t LaunchGather(size_t unit, DType index_dtype, const void* data, const void* indices,
                         void* out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
                         portable::ErrorSlot* error, cudaStream_t stream) {
  return ForCopyUnit(unit, [&](auto utag) {
    using U = decltype(utag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::GatherBody<U, I> body{static_cast<const U*>(data), static_cast<const I*>(indices),
                                      static_cast<U*>(out), n, dim, inner, error};
      return LaunchFor(outer * n * inner, body, stream);
    });
  });
}

cudaError_t LaunchScatterAdd(DType dtype, DType index_dtype, const void* updates,
                             const void* indices, void* out, int64_t outer, int64_t n, int64_t dim,
                             int64_t inner, portable::ErrorSlot* error, cudaStream_t stream) {
  auto launch = [&](auto ttag) {
    using T = decltype(ttag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::ScatterAddBody<T, I, AtomicAdd> body{static_cast<const T*>(updates),
                                                     static_cast<const I*>(indices),
                                                     static_cast<T*>(out), n, dim, inner, error};
      return LaunchFor(outer * n * inner, body, stream);
    });
  };
  if (dtype == DType::kI64 || dtype == DType::kI32) return ForIntType(dtype, launch);
  return ForFloatType(dtype, launch);
}

}  // namespace cuda
}  // namespace distrt

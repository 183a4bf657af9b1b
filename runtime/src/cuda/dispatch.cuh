// Calls f(T{}) with T the storage type of a float dtype (or of one an f32
// computation stores), for launchers templated on it.
#ifndef DISTRT_SRC_CUDA_DISPATCH_CUH_
#define DISTRT_SRC_CUDA_DISPATCH_CUH_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

// f(T{}) for the storage types an f32 computation reads and writes as
// stored: f32, bf16, f16.
template <typename F>
cudaError_t ForF32StorageType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kBF16:
      return f(bf16_t{});
    case DType::kF16:
      return f(f16_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// f(T{}) for the float dtypes: f64 and the f32 storage types.
template <typename F>
cudaError_t ForFloatType(DType dtype, F&& f) {
  if (dtype == DType::kF64) return f(double{});
  return ForF32StorageType(dtype, f);
}

inline bool IsF32StorageType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
}

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_DISPATCH_CUH_

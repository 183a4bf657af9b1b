// Calls f(T{}) with T the storage type of a float dtype, for launchers
// templated on it.
#ifndef DISTRT_SRC_CUDA_DISPATCH_CUH_
#define DISTRT_SRC_CUDA_DISPATCH_CUH_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

template <typename F>
cudaError_t ForFloatType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kF64:
      return f(double{});
    case DType::kBF16:
      return f(bf16_t{});
    case DType::kF16:
      return f(f16_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_DISPATCH_CUH_

// Dispatch helpers beyond dispatch.cuh's float types: copy units by their
// size in bytes (data movement moves elements as unsigned words), and the
// integer types the device kernels instantiate.
#ifndef DISTRT_SRC_CUDA_TYPE_DISPATCH_CUH_
#define DISTRT_SRC_CUDA_TYPE_DISPATCH_CUH_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/dispatch.cuh"
#include "distrt/dtype.h"
#include "portable/layout.h"

namespace distrt {
namespace cuda {

// f(U{}) with U the unsigned word of `bytes` (1, 2, 4, 8) or Bytes16 (16).
template <typename F>
cudaError_t ForCopyUnit(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    case 16:
      return f(portable::Bytes16{});
    default:
      return cudaErrorInvalidValue;
  }
}

// f(U{}) with U the unsigned word of an element of `bytes` (1, 2, 4, 8).
template <typename F>
cudaError_t ForElemSize(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// f(I{}) for the index dtypes of gather / scatter_add.
template <typename F>
cudaError_t ForIndexType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kI64:
      return f(int64_t{});
    case DType::kI32:
      return f(int32_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// f(T{}) for i64 and i32, the integer types device arithmetic handles.
template <typename F>
cudaError_t ForIntType(DType dtype, F&& f) {
  return ForIndexType(dtype, f);
}

// f(T{}) for the float dtypes (ForFloatType) and i64 and i32: the types
// device arithmetic, cumsum, einsum, top_k and scatter-add compute in.
template <typename F>
cudaError_t ForNumericType(DType dtype, F&& f) {
  if (dtype == DType::kI64 || dtype == DType::kI32) return ForIntType(dtype, f);
  return ForFloatType(dtype, f);
}

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_TYPE_DISPATCH_CUH_

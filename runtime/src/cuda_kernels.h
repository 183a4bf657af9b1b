// Device kernels of the CUDA path (cuda_kernels.cu) behind a plain C++
// interface, so the rest of distrt_cuda compiles as ordinary C++.
#ifndef DISTRT_SRC_CUDA_KERNELS_H_
#define DISTRT_SRC_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

// f32 unary kernels; semantics as the CPU kernels (kernels_unary.cpp).
enum class UnaryKind : int {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kTanh,
  kSigmoid,
  kErf,
  kRelu,
  kSin,
  kCos,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kGeluErf,
  kGeluTanh,
  kLeakyRelu,
};
// f32 binary kernels with numpy broadcasting; max/min propagate NaN.
enum class BinaryKind : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

constexpr int kMaxDims = 8;
// Output dims and each operand's element strides per output dim (0 where
// the operand is broadcast), outermost first.
struct BroadcastDesc {
  int rank = 0;
  int64_t out_dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
};

cudaError_t UnaryF32(UnaryKind kind, const float* x, float* y, int64_t n, float alpha,
                     cudaStream_t stream);
// same_shape: a, b and y have n elements each (no index arithmetic).
cudaError_t BinaryF32(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                      const BroadcastDesc& desc, bool same_shape, cudaStream_t stream);

// data[i] /= divisor (integers truncate toward zero; f16/bf16 through float).
// For dtypes without division (bool) nothing happens.
cudaError_t DivideBy(DType dtype, void* data, int64_t n, int divisor, cudaStream_t stream);
// mask[i] = isnan(x[i]) for float dtypes (0 for others).
cudaError_t NanMask(DType dtype, const void* x, uint8_t* mask, int64_t n, cudaStream_t stream);
// y[i] = NaN where mask[i] != 0 (float dtypes).
cudaError_t ApplyNanMask(DType dtype, void* y, const uint8_t* mask, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_KERNELS_H_

// Device kernels: f32 elementwise ops with broadcasting, and the small
// helpers the nccl communicator needs (average, NaN propagation).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_kernels.h"

namespace distrt {
namespace cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535 * 8) b = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<int>(b < 1 ? 1 : b);
}

__device__ float Unary(UnaryKind k, float v, float alpha) {
  switch (k) {
    case UnaryKind::kNeg:
      return -v;
    case UnaryKind::kAbs:
      return fabsf(v);
    case UnaryKind::kExp:
      return expf(v);
    case UnaryKind::kLog:
      return logf(v);
    case UnaryKind::kSqrt:
      return sqrtf(v);
    case UnaryKind::kReciprocal:
      return 1.0f / v;
    case UnaryKind::kTanh:
      return tanhf(v);
    case UnaryKind::kSigmoid:
      if (v >= 0)
        return 1.0f / (1.0f + expf(-v));
      else {
        const float e = expf(v);
        return e / (1.0f + e);
      }
    case UnaryKind::kErf:
      return erff(v);
    case UnaryKind::kRelu:
      return v > 0.0f ? v : (v != v ? v : 0.0f);
    case UnaryKind::kSin:
      return sinf(v);
    case UnaryKind::kCos:
      return cosf(v);
    case UnaryKind::kFloor:
      return floorf(v);
    case UnaryKind::kCeil:
      return ceilf(v);
    case UnaryKind::kRound:
      return rintf(v);  // half to even
    case UnaryKind::kSign:
      return v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v);
    case UnaryKind::kGeluErf:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
    case UnaryKind::kGeluTanh:
      return 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * (v + 0.044715f * v * v * v)));
    case UnaryKind::kLeakyRelu:
      return v < 0.0f ? v * alpha : v;
  }
  return v;
}

__device__ float Binary(BinaryKind k, float a, float b) {
  switch (k) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kDiv:
      return a / b;
    case BinaryKind::kPow:
      return powf(a, b);
    case BinaryKind::kMax:
      if (isnan(a)) return a;
      if (isnan(b)) return b;
      return a < b ? b : a;
    case BinaryKind::kMin:
      if (isnan(a)) return a;
      if (isnan(b)) return b;
      return b < a ? b : a;
  }
  return a;
}

__global__ void UnaryKernel(UnaryKind k, const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    y[i] = Unary(k, x[i], alpha);
  }
}

__global__ void BinarySameKernel(BinaryKind k, const float* a, const float* b, float* y,
                                 int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    y[i] = Binary(k, a[i], b[i]);
  }
}

__global__ void BinaryBroadcastKernel(BinaryKind k, const float* a, const float* b, float* y,
                                      int64_t n, BroadcastDesc d) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int dim = d.rank - 1; dim >= 0; --dim) {
      const int64_t idx = rest % d.out_dims[dim];
      rest /= d.out_dims[dim];
      ia += idx * d.a_strides[dim];
      ib += idx * d.b_strides[dim];
    }
    y[i] = Binary(k, a[ia], b[ib]);
  }
}

template <typename T>
__global__ void DivideIntKernel(T* p, int64_t n, int divisor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
  }
}

template <typename T>
__global__ void DivideFloatKernel(T* p, int64_t n, int divisor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    p[i] = p[i] / static_cast<T>(divisor);
  }
}

__global__ void DivideHalfKernel(__half* p, int64_t n, int divisor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    p[i] = __float2half_rn(__half2float(p[i]) / static_cast<float>(divisor));
  }
}

__global__ void DivideBF16Kernel(__nv_bfloat16* p, int64_t n, int divisor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    p[i] = __float2bfloat16_rn(__bfloat162float(p[i]) / static_cast<float>(divisor));
  }
}

__device__ float ToFloat(float v) { return v; }
__device__ float ToFloat(double v) { return static_cast<float>(v); }
__device__ float ToFloat(__half v) { return __half2float(v); }
__device__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void NanMaskKernel(const T* x, uint8_t* mask, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    mask[i] = isnan(ToFloat(x[i])) ? 1 : 0;
  }
}

template <typename T>
__device__ T QuietNaN();
template <>
__device__ float QuietNaN<float>() {
  return __int_as_float(0x7fc00000);
}
template <>
__device__ double QuietNaN<double>() {
  return __longlong_as_double(0x7ff8000000000000ll);
}
template <>
__device__ __half QuietNaN<__half>() {
  return __ushort_as_half(0x7e00);
}
template <>
__device__ __nv_bfloat16 QuietNaN<__nv_bfloat16>() {
  return __ushort_as_bfloat16(0x7fc0);
}

template <typename T>
__global__ void ApplyNanKernel(T* y, const uint8_t* mask, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    if (mask[i]) y[i] = QuietNaN<T>();
  }
}

}  // namespace

cudaError_t UnaryF32(UnaryKind kind, const float* x, float* y, int64_t n, float alpha,
                     cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  UnaryKernel<<<Blocks(n), kThreads, 0, stream>>>(kind, x, y, n, alpha);
  return cudaGetLastError();
}

cudaError_t BinaryF32(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                      const BroadcastDesc& desc, bool same_shape, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (same_shape) {
    BinarySameKernel<<<Blocks(n), kThreads, 0, stream>>>(kind, a, b, y, n);
  } else {
    BinaryBroadcastKernel<<<Blocks(n), kThreads, 0, stream>>>(kind, a, b, y, n, desc);
  }
  return cudaGetLastError();
}

cudaError_t DivideBy(DType dtype, void* data, int64_t n, int divisor, cudaStream_t stream) {
  if (n <= 0 || divisor <= 1) return cudaSuccess;
  const int g = Blocks(n);
  switch (dtype) {
    case DType::kF32:
      DivideFloatKernel<float><<<g, kThreads, 0, stream>>>(static_cast<float*>(data), n, divisor);
      break;
    case DType::kF64:
      DivideFloatKernel<double><<<g, kThreads, 0, stream>>>(static_cast<double*>(data), n, divisor);
      break;
    case DType::kF16:
      DivideHalfKernel<<<g, kThreads, 0, stream>>>(static_cast<__half*>(data), n, divisor);
      break;
    case DType::kBF16:
      DivideBF16Kernel<<<g, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, divisor);
      break;
    case DType::kI64:
      DivideIntKernel<int64_t><<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(data), n, divisor);
      break;
    case DType::kI32:
      DivideIntKernel<int32_t><<<g, kThreads, 0, stream>>>(static_cast<int32_t*>(data), n, divisor);
      break;
    case DType::kI16:
      DivideIntKernel<int16_t><<<g, kThreads, 0, stream>>>(static_cast<int16_t*>(data), n, divisor);
      break;
    case DType::kI8:
      DivideIntKernel<int8_t><<<g, kThreads, 0, stream>>>(static_cast<int8_t*>(data), n, divisor);
      break;
    case DType::kU8:
      DivideIntKernel<uint8_t><<<g, kThreads, 0, stream>>>(static_cast<uint8_t*>(data), n, divisor);
      break;
    default:
      return cudaSuccess;  // bool: avg is "or", nothing to divide
  }
  return cudaGetLastError();
}

cudaError_t NanMask(DType dtype, const void* x, uint8_t* mask, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int g = Blocks(n);
  switch (dtype) {
    case DType::kF32:
      NanMaskKernel<float><<<g, kThreads, 0, stream>>>(static_cast<const float*>(x), mask, n);
      break;
    case DType::kF64:
      NanMaskKernel<double><<<g, kThreads, 0, stream>>>(static_cast<const double*>(x), mask, n);
      break;
    case DType::kF16:
      NanMaskKernel<__half><<<g, kThreads, 0, stream>>>(static_cast<const __half*>(x), mask, n);
      break;
    case DType::kBF16:
      NanMaskKernel<__nv_bfloat16>
          <<<g, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), mask, n);
      break;
    default:
      return cudaMemsetAsync(mask, 0, static_cast<size_t>(n), stream);
  }
  return cudaGetLastError();
}

cudaError_t ApplyNanMask(DType dtype, void* y, const uint8_t* mask, int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int g = Blocks(n);
  switch (dtype) {
    case DType::kF32:
      ApplyNanKernel<float><<<g, kThreads, 0, stream>>>(static_cast<float*>(y), mask, n);
      break;
    case DType::kF64:
      ApplyNanKernel<double><<<g, kThreads, 0, stream>>>(static_cast<double*>(y), mask, n);
      break;
    case DType::kF16:
      ApplyNanKernel<__half><<<g, kThreads, 0, stream>>>(static_cast<__half*>(y), mask, n);
      break;
    case DType::kBF16:
      ApplyNanKernel<__nv_bfloat16>
          <<<g, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(y), mask, n);
      break;
    default:
      return cudaSuccess;
  }
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace distrt

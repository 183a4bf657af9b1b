// The small device kernels the nccl communicator needs: averages and NaN
// propagation for reductions NCCL has no direct form of.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/comm_kernels.h"

namespace distrt {
namespace cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535 * 8) b = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<int>(b < 1 ? 1 : b);
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

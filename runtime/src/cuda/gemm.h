// The row-major batched GEMM of the CUDA matmul kernel (kernels_matmul.cpp,
// cuBLASLt, its plans cached per device) for other kernels that reduce to
// one (einsum): c[b] = a[b] * b[b] with a [batch, m, k], b [batch, k, n]
// and c [batch, m, n], all contiguous; f32 f64 bf16 f16 (accumulating in
// f32, TF32 for f32 only where DISTRT_CUDA_TF32=1 allows it, as matmul).
// k must be positive; queued on the device's stream.
#ifndef DISTRT_SRC_CUDA_GEMM_H_
#define DISTRT_SRC_CUDA_GEMM_H_

#include <cstdint>

#include "cuda/cuda_device.h"

namespace distrt {

Status CudaBatchedGemm(CudaDevice& dev, DType dtype, const void* a, const void* b, void* c,
                       int64_t batch, int64_t m, int64_t k, int64_t n);

}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_GEMM_H_

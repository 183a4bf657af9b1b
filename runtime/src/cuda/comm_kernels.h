// The nccl communicator's device helpers (comm_kernels.cu) behind a plain
// C++ interface.
#ifndef DISTRT_SRC_CUDA_COMM_KERNELS_H_
#define DISTRT_SRC_CUDA_COMM_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

// data[i] /= divisor (integers truncate toward zero; f16/bf16 through float).
// For dtypes without division (bool) nothing happens.
cudaError_t DivideBy(DType dtype, void* data, int64_t n, int divisor, cudaStream_t stream);
// mask[i] = isnan(x[i]) for float dtypes (0 for others).
cudaError_t NanMask(DType dtype, const void* x, uint8_t* mask, int64_t n, cudaStream_t stream);
// y[i] = NaN where mask[i] != 0 (float dtypes).
cudaError_t ApplyNanMask(DType dtype, void* y, const uint8_t* mask, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_COMM_KERNELS_H_

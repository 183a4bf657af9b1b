// Launcher of the cumsum body (portable/cumsum.h) on a CUDA stream: what
// kernels_cumsum.cpp calls. x and y are [outer, dim, inner] (y may be x);
// f32 f64 bf16 f16 i64 i32, else cudaErrorInvalidValue.
#ifndef DISTRT_SRC_CUDA_CUMSUM_H_
#define DISTRT_SRC_CUDA_CUMSUM_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchCumSum(DType dtype, const void* x, void* y, int64_t outer, int64_t dim,
                         int64_t inner, bool exclusive, bool reverse, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_CUMSUM_H_

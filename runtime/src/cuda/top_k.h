// Launcher of the top_k body (portable/top_k.h) on a CUDA stream: what
// kernels_top_k.cpp calls. x is [outer, n, inner], y (int64 positions)
// [outer, k, inner]; one warp per line. f32 f64 bf16 f16 i64 i32, else
// cudaErrorInvalidValue.
#ifndef DISTRT_SRC_CUDA_TOP_K_H_
#define DISTRT_SRC_CUDA_TOP_K_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchTopK(DType dtype, const void* x, int64_t* y, int64_t outer, int64_t n,
                       int64_t inner, int64_t k, bool smallest, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_TOP_K_H_

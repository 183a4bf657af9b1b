// Launchers of the einsum bodies (portable/einsum.h) on a CUDA stream:
// what kernels_einsum.cpp calls. LaunchEinsum: the general contraction
// (f32 f64 bf16 f16 i64 i32), one thread per result element.
// LaunchPermute: a strided copy of elements of `elem` bytes (1, 2, 4, 8)
// into a contiguous [sizes] buffer. cudaErrorInvalidValue for a dtype or
// size without a body.
#ifndef DISTRT_SRC_CUDA_EINSUM_H_
#define DISTRT_SRC_CUDA_EINSUM_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/einsum.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchEinsum(DType dtype, const void* const* inputs, void* out, int64_t n_out,
                         const portable::EinsumMap& map, int64_t n_sum, cudaStream_t stream);
cudaError_t LaunchPermute(size_t elem, const void* src, void* dst, int rank,
                          const int64_t* sizes, const int64_t* strides, int64_t n,
                          cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_EINSUM_H_

// Launchers of the index bodies (portable/index.h) on a CUDA stream, behind
// a plain C++ interface: what kernels_index.cpp calls. Shapes are viewed as
// [outer, dim, inner] (data / base) and [outer, n, inner] (output /
// updates); indices are i64 or i32; an index out of range is reported in
// `error` (device memory). Each fails with cudaErrorInvalidValue for a
// dtype or size it has no body for.
#ifndef DISTRT_SRC_CUDA_INDEX_H_
#define DISTRT_SRC_CUDA_INDEX_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/device_error.h"

namespace distrt {
namespace cuda {

// `inner` counts units of `unit` bytes (1, 2, 4, 8, 16).
cudaError_t LaunchGather(size_t unit, DType index_dtype, const void* data, const void* indices,
                         void* out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
                         portable::ErrorSlot* error, cudaStream_t stream);
// out (holding base) += updates at the indices, atomically: f32 f64 bf16
// f16 i64 i32.
cudaError_t LaunchScatterAdd(DType dtype, DType index_dtype, const void* updates,
                             const void* indices, void* out, int64_t outer, int64_t n, int64_t dim,
                             int64_t inner, portable::ErrorSlot* error, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_INDEX_H_

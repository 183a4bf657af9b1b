// Launchers of the element-wise indexing bodies (portable/elements.h) on a
// CUDA stream: what kernels_elements.cpp calls. Elements move as unsigned
// words of `elem` bytes (1, 2, 4, 8); indices are i64 or i32; `n` counts
// the index positions. An index out of range is reported in `error`
// (device memory). Each fails with cudaErrorInvalidValue for a dtype or
// size it has no body for.
#ifndef DISTRT_SRC_CUDA_ELEMENTS_H_
#define DISTRT_SRC_CUDA_ELEMENTS_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/device_error.h"
#include "portable/elements.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchGatherElements(size_t elem, DType index_dtype, const void* data,
                                 const void* indices, void* out, int64_t n,
                                 const portable::ElementsMap& map, portable::ErrorSlot* error,
                                 cudaStream_t stream);
// out (holding data) at the indices = updates, the last position winning
// among duplicates; `winner` is scratch of data's element count, which
// this fills with -1 first.
cudaError_t LaunchScatterElements(size_t elem, DType index_dtype, const void* updates,
                                  const void* indices, long long* winner, int64_t data_elements,
                                  void* out, int64_t n, const portable::ElementsMap& map,
                                  portable::ErrorSlot* error, cudaStream_t stream);
// out (holding data) at the indices += updates, atomically: f32 f64 i64
// i32.
cudaError_t LaunchScatterElementsAdd(DType dtype, DType index_dtype, const void* updates,
                                     const void* indices, void* out, int64_t n,
                                     const portable::ElementsMap& map,
                                     portable::ErrorSlot* error, cudaStream_t stream);
// out [outer, depth, inner] from indices [outer, inner] and values [2].
cudaError_t LaunchOneHot(size_t elem, DType index_dtype, const void* indices, const void* values,
                         void* out, int64_t outer, int64_t depth, int64_t inner,
                         cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_ELEMENTS_H_

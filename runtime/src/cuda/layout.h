// Launchers of the data-movement bodies (portable/layout.h) on a CUDA
// stream, behind a plain C++ interface: what kernels_layout.cpp calls.
// Each fails with cudaErrorInvalidValue for a size or dtype it has no body
// for.
#ifndef DISTRT_SRC_CUDA_LAYOUT_H_
#define DISTRT_SRC_CUDA_LAYOUT_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/layout.h"

namespace distrt {
namespace cuda {

// The copy `map` in units of `unit` bytes (1, 2, 4, 8, 16; see MakeCopyMap).
cudaError_t LaunchCopy(size_t unit, const void* src, void* dst, const portable::CopyMap& map,
                       cudaStream_t stream);
// `n` output elements of `elem` bytes (1, 2, 4, 8); `fill` points to one
// element's bits on the host.
cudaError_t LaunchPad(size_t elem, const void* x, void* y, const void* fill,
                      const portable::PadMap& map, int64_t n, cudaStream_t stream);
// f32 f64 i64 i32 i16; start/limit/delta are device scalars.
cudaError_t LaunchRange(DType dtype, const void* start, const void* limit, const void* delta,
                        void* y, int64_t n, portable::ErrorSlot* error, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_LAYOUT_H_

// Launchers of the arithmetic bodies (portable/arith.h) on a CUDA stream,
// behind a plain C++ interface: what kernels_arith.cpp calls. Each fails
// with cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_ARITH_H_
#define DISTRT_SRC_CUDA_ARITH_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/arith.h"

namespace distrt {
namespace cuda {

// i64 / i32; a zero divisor is reported in `error` (device memory).
cudaError_t LaunchIntBinary(DType dtype, portable::IntBinaryOp op, const void* a, const void* b,
                            void* y, int64_t n, const portable::BroadcastMap& map,
                            portable::ErrorSlot* error, cudaStream_t stream);
cudaError_t LaunchIntUnary(DType dtype, portable::IntUnaryOp op, const void* x, void* y,
                           int64_t n, cudaStream_t stream);
// f32 f64 bf16 f16.
cudaError_t LaunchFloatMod(DType dtype, bool fmod, const void* a, const void* b, void* y,
                           int64_t n, const portable::BroadcastMap& map, cudaStream_t stream);
// f32 f64 bf16 f16 i64 i32, bounds from the optional attributes.
cudaError_t LaunchClip(DType dtype, bool has_min, double min, bool has_max, double max,
                       const void* x, void* y, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_ARITH_H_

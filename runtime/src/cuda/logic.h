// Launchers of the comparison / logic / where bodies (portable/logic.h) on
// a CUDA stream, behind a plain C++ interface: what kernels_logic.cpp
// calls. Each fails with cudaErrorInvalidValue for a type it has no body for.
#ifndef DISTRT_SRC_CUDA_LOGIC_H_
#define DISTRT_SRC_CUDA_LOGIC_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/logic.h"

namespace distrt {
namespace cuda {

// Operands of `dtype` (f32 f64 bf16 f16 i64 i32, and bool / u8), bool out.
cudaError_t LaunchCompare(DType dtype, portable::CompareOp op, const void* a, const void* b,
                          void* y, int64_t n, const portable::BroadcastMap& map,
                          cudaStream_t stream);
cudaError_t LaunchLogic(portable::LogicOp op, const void* a, const void* b, void* y, int64_t n,
                        const portable::BroadcastMap& map, cudaStream_t stream);
cudaError_t LaunchNot(const void* x, void* y, int64_t n, cudaStream_t stream);
// Branch elements of `elem` bytes (1, 2, 4, 8).
cudaError_t LaunchWhere(size_t elem, const void* cond, const void* a, const void* b, void* y,
                        int64_t n, const portable::BroadcastMap& map, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_LOGIC_H_

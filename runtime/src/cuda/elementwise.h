// Launchers of the element-wise bodies (portable/elementwise.h) on a CUDA
// stream, behind a plain C++ interface: what kernels_elementwise.cpp calls.
// Each fails with cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_ELEMENTWISE_H_
#define DISTRT_SRC_CUDA_ELEMENTWISE_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/elementwise.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchUnary(DType dtype, portable::UnaryOp op, const void* x, void* y, int64_t n,
                        double alpha, cudaStream_t stream);
cudaError_t LaunchBinary(DType dtype, portable::BinaryOp op, const void* a, const void* b, void* y,
                         int64_t n, const portable::BroadcastMap& map, cudaStream_t stream);
// gelu_grad of n elements: dx = dy * GELU'(x).
cudaError_t LaunchGeluGrad(DType dtype, const void* x, const void* dy, void* dx, int64_t n,
                           cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_ELEMENTWISE_H_

// Launchers of the optimizer update bodies (portable/optimizer.h) on a CUDA
// stream, behind a plain C++ interface: what kernels_optimizer.cpp calls.
// f32 and f64 (the types the updates verify for); any other dtype fails
// with cudaErrorInvalidValue.
#ifndef DISTRT_SRC_CUDA_OPTIMIZER_H_
#define DISTRT_SRC_CUDA_OPTIMIZER_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

// p, g, m, v, then the outputs p', m', v' (which may be p, m, v), then the
// device scalars grad_scale, param_scale, step, bc2; n elements.
cudaError_t LaunchAdam(DType dtype, const void* p, const void* g, const void* m, const void* v,
                       void* po, void* mo, void* vo, const void* grad_scale,
                       const void* param_scale, const void* step, const void* bc2, double beta1,
                       double beta2, double eps, double weight_decay, int64_t n,
                       cudaStream_t stream);

// p, g, buf, then p', buf' (which may be p, buf), then the device scalars
// grad_scale and lr; n elements.
cudaError_t LaunchSgd(DType dtype, const void* p, const void* g, const void* buf, void* po,
                      void* bo, const void* grad_scale, const void* lr, double momentum,
                      double weight_decay, bool nesterov, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_OPTIMIZER_H_

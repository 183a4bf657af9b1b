// Launchers of the pooling bodies (portable/pool.h) on a CUDA stream, behind
// a plain C++ interface: what kernels_pool.cpp calls. Each fails with
// cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_POOL_H_
#define DISTRT_SRC_CUDA_POOL_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/window.h"

namespace distrt {
namespace cuda {

// max_pool / avg_pool of x [planes, in...] into y [planes, out...].
cudaError_t LaunchPool(DType dtype, bool is_max, bool include_pad, const void* x, void* y,
                       int64_t planes, const portable::Window& win, cudaStream_t stream);

// max_pool_grad / avg_pool_grad: dx [planes, in...] from x and dy [planes,
// out...]; `arg` is scratch for planes * out_size int64 values (max only).
cudaError_t LaunchPoolGrad(DType dtype, bool is_max, bool include_pad, const void* x,
                           const void* dy, void* dx, int64_t* arg, int64_t planes,
                           const portable::Window& win, cudaStream_t stream);

// global_max_pool / global_avg_pool of x [planes, n] into y [planes].
cudaError_t LaunchGlobalPool(DType dtype, bool is_max, const void* x, void* y, int64_t planes,
                             int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_POOL_H_

// Launcher of the cast body (portable/cast.h) on a CUDA stream: what
// kernels_cast.cpp calls. Fails with cudaErrorInvalidValue for a dtype the
// host's cast does not know.
#ifndef DISTRT_SRC_CUDA_CAST_H_
#define DISTRT_SRC_CUDA_CAST_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchCast(DType from, DType to, const void* x, void* y, int64_t n,
                       cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_CAST_H_

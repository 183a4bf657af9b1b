// Launchers of the reduction bodies (portable/reduce.h) on a CUDA stream,
// behind a plain C++ interface: what kernels_reduce.cpp calls. Each fails
// with cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_REDUCE_H_
#define DISTRT_SRC_CUDA_REDUCE_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/reduce.h"

namespace distrt {
namespace cuda {

// One pass of a reduction plan on elements of `dtype`. `in_partial` /
// `out_partial`: the buffer holds compute-type values (f32 for bf16/f16)
// of an earlier / for a later pass, not `dtype` elements. With `mean` the
// results are divided by `count`.
cudaError_t LaunchReducePass(DType dtype, portable::ReduceOp op, const portable::ReducePass& pass,
                             const void* in, bool in_partial, void* out, bool out_partial,
                             bool mean, int64_t count, cudaStream_t stream);

// argmax / argmin of x [outer, n, inner] over n (n >= 1) into y [outer, inner].
cudaError_t LaunchArg(DType dtype, bool is_max, bool last, const void* x, int64_t* y, int64_t outer,
                      int64_t n, int64_t inner, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_REDUCE_H_

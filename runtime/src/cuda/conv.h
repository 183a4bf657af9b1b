// Launchers of the convolution bodies (portable/conv.h) on a CUDA stream,
// behind a plain C++ interface: what kernels_conv.cpp calls. Each fails
// with cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_CONV_H_
#define DISTRT_SRC_CUDA_CONV_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/conv.h"

namespace distrt {
namespace cuda {

// y [n, m, out...] = conv(x [n, c, in...], w [m, cg, k...]) + bias (may be null).
cudaError_t LaunchConv(DType dtype, const void* x, const void* w, const void* bias, void* y,
                       const portable::ConvSizes& z, const portable::Window& win,
                       cudaStream_t stream);

// dx [n, c, in...] of conv from dy [n, m, out...] and w.
cudaError_t LaunchConvGradInput(DType dtype, const void* dy, const void* w, void* dx,
                                const portable::ConvSizes& z, const portable::Window& win,
                                cudaStream_t stream);

// dw [m, cg, k...] of conv from x and dy, each element's sum split into
// `chunks` (portable::ConvGradWeightChunks); with more than one, `partial`
// is scratch for chunks * dw's elements compute-type values (f64 for f64,
// else f32).
cudaError_t LaunchConvGradWeight(DType dtype, const void* x, const void* dy, void* dw,
                                 void* partial, int64_t chunks, const portable::ConvSizes& z,
                                 const portable::Window& win, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_CONV_H_

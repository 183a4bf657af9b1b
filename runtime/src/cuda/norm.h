// Launchers of the normalisation bodies (portable/norm.h) on a CUDA stream,
// behind a plain C++ interface: what kernels_norm.cpp calls. Each fails
// with cudaErrorInvalidValue for a dtype it has no body for.
#ifndef DISTRT_SRC_CUDA_NORM_H_
#define DISTRT_SRC_CUDA_NORM_H_

#include <cuda_runtime_api.h>

#include "distrt/dtype.h"
#include "portable/index_map.h"
#include "portable/norm.h"

namespace distrt {
namespace cuda {

// softmax / log_softmax of x [outer, n, inner] over n, attention's scale
// and mask `sm` applied to x (its mask on the device); y of x's dtype, or
// f32 for a bf16/f16 x (read as stored).
cudaError_t LaunchSoftmax(DType x_dtype, DType y_dtype, bool log, const void* x, void* y,
                          int64_t outer, int64_t n, int64_t inner,
                          const portable::ScaleAndMask<double>& sm, cudaStream_t stream);

// softmax_grad dx = y * (dy - sum(dy * y)) of [outer, n, inner] over n,
// computed in y's dtype, then masked and scaled by `sm`; dy and dx of it,
// or bf16/f16 when it is f32.
cudaError_t LaunchSoftmaxGrad(DType y_dtype, DType dy_dtype, DType dx_dtype, const void* y,
                              const void* dy, void* dx, int64_t outer, int64_t n, int64_t inner,
                              const portable::ScaleAndMask<double>& sm, cudaStream_t stream);

// cross_entropy_sums over logits x [rows, n] (stored as `logits`, read in
// `compute`: f32, or f64 with f64 logits): sum_exp and label_logit per row.
cudaError_t LaunchCrossEntropySums(DType logits, DType compute, DType labels_dtype, const void* x,
                                   const void* max, const void* labels, void* sum_exp,
                                   void* label_logit, int64_t rows, int64_t n, int64_t first_class,
                                   cudaStream_t stream);

// cross_entropy_grad over logits x [rows, n], dx stored as `out`.
cudaError_t LaunchCrossEntropyGrad(DType logits, DType compute, DType labels_dtype, DType out,
                                   const void* x, const void* max, const void* scale,
                                   const void* weight, const void* labels, void* dx, int64_t rows,
                                   int64_t n, int64_t first_class, cudaStream_t stream);

// layer_norm of x [rows, n] over n; `params` maps the normalised shape to
// scale's and bias's offsets; bias may be null.
cudaError_t LaunchLayerNorm(DType dtype, const void* x, const void* scale, const void* bias,
                            void* y, int64_t rows, int64_t n, double eps,
                            const portable::BroadcastMap& params, cudaStream_t stream);

// Inference batch_norm of x [N, channels, spatial] (n elements); `factors`
// is scratch for 2 * channels compute-type values (f64 for f64, else f32).
cudaError_t LaunchBatchNorm(DType dtype, const void* x, const void* scale, const void* bias,
                            const void* mean, const void* var, void* factors, void* y, int64_t n,
                            int64_t channels, int64_t spatial, double eps, cudaStream_t stream);

}  // namespace cuda
}  // namespace distrt

#endif  // DISTRT_SRC_CUDA_NORM_H_

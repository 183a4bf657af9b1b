#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/norm.h"
#include "cuda/type_dispatch.cuh"
#include "portable/norm.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchSoftmax(DType dtype, bool log, const void* x, void* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (portable::WarpPerRow(n, inner)) {
      portable::SoftmaxRowsBody<T> body{px, py, n, log};
      return LaunchRows(outer, body, stream);
    }
    portable::SoftmaxColsBody<T> body{px, py, n, inner, log};
    return LaunchFor(outer * inner, body, stream);
  });
}

cudaError_t LaunchSoftmaxGrad(DType dtype, const void* y, const void* dy, void* dx, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* py = static_cast<const T*>(y);
    const T* pd = static_cast<const T*>(dy);
    T* px = static_cast<T*>(dx);
    if (portable::WarpPerRow(n, inner)) {
      portable::SoftmaxGradRowsBody<T> body{py, pd, px, n};
      return LaunchRows(outer, body, stream);
    }
    portable::SoftmaxGradColsBody<T> body{py, pd, px, n, inner};
    return LaunchFor(outer * inner, body, stream);
  });
}

// f(T{}, C{}) for logits stored as `logits` and computed in `compute`: C is
// f64 only with f64 logits; f32 reads f32, bf16 and f16.
template <typename F>
cudaError_t ForCrossEntropyTypes(DType logits, DType compute, F&& f) {
  if (compute == DType::kF64) {
    return logits == DType::kF64 ? f(double{}, double{}) : cudaErrorInvalidValue;
  }
  if (compute != DType::kF32 || logits == DType::kF64) return cudaErrorInvalidValue;
  return ForFloatType(logits, [&](auto t) { return f(t, float{}); });
}

cudaError_t LaunchCrossEntropySums(DType logits, DType compute, DType labels_dtype, const void* x,
                                   const void* max, const void* labels, void* sum_exp,
                                   void* label_logit, int64_t rows, int64_t n, int64_t first_class,
                                   cudaStream_t stream) {
  return ForCrossEntropyTypes(logits, compute, [&](auto t, auto c) {
    using T = decltype(t);
    using C = decltype(c);
    return ForIndexType(labels_dtype, [&](auto i) {
      using I = decltype(i);
      portable::CrossEntropySumsBody<T, C, I> body{
          static_cast<const T*>(x), static_cast<const C*>(max), static_cast<const I*>(labels),
          static_cast<C*>(sum_exp), static_cast<C*>(label_logit), n, first_class};
      return LaunchRows(rows, body, stream);
    });
  });
}

cudaError_t LaunchCrossEntropyGrad(DType logits, DType compute, DType labels_dtype, DType out,
                                   const void* x, const void* max, const void* scale,
                                   const void* weight, const void* labels, void* dx, int64_t rows,
                                   int64_t n, int64_t first_class, cudaStream_t stream) {
  return ForCrossEntropyTypes(logits, compute, [&](auto t, auto c) {
    using T = decltype(t);
    using C = decltype(c);
    // The result in the compute type, or a 16-bit float when it is f32.
    return ForCrossEntropyTypes(out, compute, [&](auto r, auto) {
      using R = decltype(r);
      return ForIndexType(labels_dtype, [&](auto i) {
        using I = decltype(i);
        portable::CrossEntropyGradBody<T, C, I, R> body{
            static_cast<const T*>(x),      static_cast<const C*>(max),
            static_cast<const C*>(scale),  static_cast<const C*>(weight),
            static_cast<const I*>(labels), static_cast<R*>(dx),
            n,                             first_class};
        return LaunchFor(rows * n, body, stream);
      });
    });
  });
}

cudaError_t LaunchLayerNorm(DType dtype, const void* x, const void* scale, const void* bias,
                            void* y, int64_t rows, int64_t n, double eps,
                            const portable::BroadcastMap& params, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename portable::Elem<T>::Compute;
    portable::LayerNormBody<T> body{static_cast<const T*>(x),
                                    static_cast<const T*>(scale),
                                    static_cast<const T*>(bias),
                                    static_cast<T*>(y),
                                    n,
                                    static_cast<C>(eps),
                                    params};
    return LaunchRows(rows, body, stream);
  });
}

cudaError_t LaunchBatchNorm(DType dtype, const void* x, const void* scale, const void* bias,
                            const void* mean, const void* var, void* factors, void* y, int64_t n,
                            int64_t channels, int64_t spatial, double eps, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename portable::Elem<T>::Compute;
    C* mul = static_cast<C*>(factors);
    C* add = mul + channels;
    portable::BatchNormFactorsBody<T> fold{static_cast<const T*>(scale),
                                           static_cast<const T*>(bias),
                                           static_cast<const T*>(mean),
                                           static_cast<const T*>(var),
                                           mul,
                                           add,
                                           eps};
    cudaError_t e = LaunchFor(channels, fold, stream);
    if (e != cudaSuccess) return e;
    portable::BatchNormBody<T> body{static_cast<const T*>(x), mul,      add,
                                    static_cast<T*>(y),       channels, spatial};
    return LaunchFor(n, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

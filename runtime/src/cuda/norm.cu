#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/norm.h"
#include "cuda/type_dispatch.cuh"
#include "portable/norm.h"

namespace distrt {
namespace cuda {

template <typename T, typename R>
cudaError_t LaunchSoftmaxAs(bool log, const void* x, void* y, int64_t outer, int64_t n,
                            int64_t inner, const portable::ScaleAndMask<double>& sm,
                            cudaStream_t stream) {
  using C = typename portable::Elem<T>::Compute;
  const T* px = static_cast<const T*>(x);
  R* py = static_cast<R*>(y);
  if (portable::WarpPerRow(n, inner)) {
    portable::SoftmaxRowsBody<T, R> body{px, py, n, log, sm.As<C>()};
    return LaunchRows(outer, body, stream);
  }
  portable::SoftmaxColsBody<T, R> body{px, py, n, inner, log, sm.As<C>()};
  return LaunchFor(outer * inner, body, stream);
}

cudaError_t LaunchSoftmax(DType x_dtype, DType y_dtype, bool log, const void* x, void* y,
                          int64_t outer, int64_t n, int64_t inner,
                          const portable::ScaleAndMask<double>& sm, cudaStream_t stream) {
  if (x_dtype == y_dtype) {
    return ForFloatType(x_dtype, [&](auto t) {
      using T = decltype(t);
      return LaunchSoftmaxAs<T, T>(log, x, y, outer, n, inner, sm, stream);
    });
  }
  // A 16-bit x read as stored into an f32 y.
  if (y_dtype != DType::kF32) return cudaErrorInvalidValue;
  if (x_dtype == DType::kBF16)
    return LaunchSoftmaxAs<bf16_t, float>(log, x, y, outer, n, inner, sm, stream);
  if (x_dtype == DType::kF16)
    return LaunchSoftmaxAs<f16_t, float>(log, x, y, outer, n, inner, sm, stream);
  return cudaErrorInvalidValue;
}

template <typename T, typename D, typename R>
cudaError_t LaunchSoftmaxGradAs(const void* y, const void* dy, void* dx, int64_t outer, int64_t n,
                                int64_t inner, const portable::ScaleAndMask<double>& sm,
                                cudaStream_t stream) {
  using C = typename portable::Elem<T>::Compute;
  const T* py = static_cast<const T*>(y);
  const D* pd = static_cast<const D*>(dy);
  R* px = static_cast<R*>(dx);
  if (portable::WarpPerRow(n, inner)) {
    portable::SoftmaxGradRowsBody<T, D, R> body{py, pd, px, n, sm.As<C>()};
    return LaunchRows(outer, body, stream);
  }
  portable::SoftmaxGradColsBody<T, D, R> body{py, pd, px, n, inner, sm.As<C>()};
  return LaunchFor(outer * inner, body, stream);
}

cudaError_t LaunchSoftmaxGrad(DType y_dtype, DType dy_dtype, DType dx_dtype, const void* y,
                              const void* dy, void* dx, int64_t outer, int64_t n, int64_t inner,
                              const portable::ScaleAndMask<double>& sm, cudaStream_t stream) {
  if (dy_dtype == y_dtype && dx_dtype == y_dtype) {
    return ForFloatType(y_dtype, [&](auto t) {
      using T = decltype(t);
      return LaunchSoftmaxGradAs<T, T, T>(y, dy, dx, outer, n, inner, sm, stream);
    });
  }
  // An f32 y with dy and dx stored as 16-bit floats (or f32).
  if (y_dtype != DType::kF32) return cudaErrorInvalidValue;
  return ForF32StorageType(dy_dtype, [&](auto td) {
    using D = decltype(td);
    return ForF32StorageType(dx_dtype, [&](auto tr) {
      using R = decltype(tr);
      return LaunchSoftmaxGradAs<float, D, R>(y, dy, dx, outer, n, inner, sm, stream);
    });
  });
}

// f(T{}, C{}) for logits stored as `logits` and computed in `compute`: C is
// f64 only with f64 logits; f32 reads f32, bf16 and f16.
template <typename F>
cudaError_t ForCrossEntropyTypes(DType logits, DType compute, F&& f) {
  if (compute == DType::kF64) {
    return logits == DType::kF64 ? f(double{}, double{}) : cudaErrorInvalidValue;
  }
  if (compute != DType::kF32) return cudaErrorInvalidValue;
  return ForF32StorageType(logits, [&](auto t) { return f(t, float{}); });
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
        return LaunchRows(rows, body, stream);
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

#include "cuda/launch.cuh"
#include "cuda/optimizer.h"
#include "portable/optimizer.h"

namespace distrt {
namespace cuda {

namespace {

template <typename F>
cudaError_t ForF32F64(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(float{});
    case DType::kF64:
      return f(double{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t LaunchAdam(DType dtype, const void* p, const void* g, const void* m, const void* v,
                       void* po, void* mo, void* vo, const void* grad_scale,
                       const void* param_scale, const void* step, const void* bc2, double beta1,
                       double beta2, double eps, double weight_decay, int64_t n,
                       cudaStream_t stream) {
  return ForF32F64(dtype, [&](auto tag) {
    using T = decltype(tag);
    // The constants rounded to T from f64, as the host kernel does.
    portable::AdamBody<T> body{static_cast<const T*>(p),
                               static_cast<const T*>(g),
                               static_cast<const T*>(m),
                               static_cast<const T*>(v),
                               static_cast<T*>(po),
                               static_cast<T*>(mo),
                               static_cast<T*>(vo),
                               static_cast<const T*>(grad_scale),
                               static_cast<const T*>(param_scale),
                               static_cast<const T*>(step),
                               static_cast<const T*>(bc2),
                               static_cast<T>(beta1),
                               static_cast<T>(1.0 - beta1),
                               static_cast<T>(beta2),
                               static_cast<T>(1.0 - beta2),
                               static_cast<T>(eps),
                               static_cast<T>(weight_decay),
                               weight_decay != 0};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchSgd(DType dtype, const void* p, const void* g, const void* buf, void* po,
                      void* bo, const void* grad_scale, const void* lr, double momentum,
                      double weight_decay, bool nesterov, int64_t n, cudaStream_t stream) {
  return ForF32F64(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::SgdBody<T> body{static_cast<const T*>(p),
                              static_cast<const T*>(g),
                              static_cast<const T*>(buf),
                              static_cast<T*>(po),
                              static_cast<T*>(bo),
                              static_cast<const T*>(grad_scale),
                              static_cast<const T*>(lr),
                              static_cast<T>(momentum),
                              static_cast<T>(weight_decay),
                              weight_decay != 0,
                              nesterov};
    return LaunchFor(n, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

#include <cstdint>

#include "cuda/dispatch.cuh"
#include "cuda/elementwise.h"
#include "cuda/launch.cuh"

namespace distrt {
namespace cuda {

using portable::BinaryBody;
using portable::BinaryPackBody;
using portable::kPack;
using portable::UnaryBody;
using portable::UnaryPackBody;

cudaError_t LaunchUnary(DType dtype, portable::UnaryOp op, const void* x, void* y, int64_t n,
                        double alpha, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename portable::Elem<T>::Compute;
    if (Aligned(x, sizeof(T) * kPack) && Aligned(y, sizeof(T) * kPack)) {
      UnaryPackBody<T> body{op, static_cast<const T*>(x), static_cast<T*>(y),
                            static_cast<C>(alpha), n};
      return LaunchFor((n + kPack - 1) / kPack, body, stream);
    }
    UnaryBody<T> body{op, static_cast<const T*>(x), static_cast<T*>(y), static_cast<C>(alpha)};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchBinary(DType dtype, portable::BinaryOp op, const void* a, const void* b, void* y,
                         int64_t n, const portable::BroadcastMap& map, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const size_t pack = sizeof(T) * kPack;
    if (portable::Packable(map) && Aligned(a, pack) && Aligned(b, pack) && Aligned(y, pack)) {
      BinaryPackBody<T> body{op, static_cast<const T*>(a), static_cast<const T*>(b),
                             static_cast<T*>(y), map, n};
      return LaunchFor((n + kPack - 1) / kPack, body, stream);
    }
    BinaryBody<T> body{op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y),
                       map};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchGeluGrad(DType dtype, const void* x, const void* dy, void* dx, int64_t n,
                           cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::GeluGradBody<T> body{static_cast<const T*>(x), static_cast<const T*>(dy),
                                   static_cast<T*>(dx)};
    return LaunchFor(n, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

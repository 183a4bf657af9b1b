#include "cuda/arith.h"
#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

using portable::BroadcastMap;

cudaError_t LaunchIntBinary(DType dtype, portable::IntBinaryOp op, const void* a, const void* b,
                            void* y, int64_t n, const BroadcastMap& map,
                            portable::ErrorSlot* error, cudaStream_t stream) {
  return ForIntType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::IntBinaryBody<T> body{op,  static_cast<const T*>(a), static_cast<const T*>(b),
                                    static_cast<T*>(y), map, error};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchIntUnary(DType dtype, portable::IntUnaryOp op, const void* x, void* y,
                           int64_t n, cudaStream_t stream) {
  return ForIntType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::IntUnaryBody<T> body{op, static_cast<const T*>(x), static_cast<T*>(y)};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchFloatMod(DType dtype, bool fmod, const void* a, const void* b, void* y,
                           int64_t n, const BroadcastMap& map, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::FloatModBody<T> body{fmod, static_cast<const T*>(a), static_cast<const T*>(b),
                                   static_cast<T*>(y), map};
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchClip(DType dtype, bool has_min, double min, bool has_max, double max,
                       const void* x, void* y, int64_t n, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::ClipBody<T> body{static_cast<const T*>(x), static_cast<T*>(y), {}, {}};
    portable::ClipBounds<T>(has_min, min, has_max, max, &body.lo, &body.hi);
    return LaunchFor(n, body, stream);
  };
  return ForNumericType(dtype, launch);
}

}  // namespace cuda
}  // namespace distrt

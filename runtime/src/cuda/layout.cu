#include <cstring>

#include "cuda/launch.cuh"
#include "cuda/layout.h"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

cudaError_t LaunchCopy(size_t unit, const void* src, void* dst, const portable::CopyMap& map,
                       cudaStream_t stream) {
  return ForCopyUnit(unit, [&](auto tag) {
    using U = decltype(tag);
    portable::CopyBody<U> body{static_cast<const U*>(src), static_cast<U*>(dst), map};
    return LaunchFor(map.count, body, stream);
  });
}

cudaError_t LaunchPad(size_t elem, const void* x, void* y, const void* fill,
                      const portable::PadMap& map, int64_t n, cudaStream_t stream) {
  return ForElemSize(elem, [&](auto tag) {
    using U = decltype(tag);
    portable::PadBody<U> body{static_cast<const U*>(x), static_cast<U*>(y), U{}, map};
    std::memcpy(&body.fill, fill, sizeof(U));
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchRange(DType dtype, const void* start, const void* limit, const void* delta,
                        void* y, int64_t n, portable::ErrorSlot* error, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::RangeBody<T> body{static_cast<const T*>(start), static_cast<const T*>(limit),
                                static_cast<const T*>(delta), static_cast<T*>(y), n, error};
    return LaunchFor(n, body, stream);
  };
  switch (dtype) {
    case DType::kF32:
      return launch(float{});
    case DType::kF64:
      return launch(double{});
    case DType::kI64:
      return launch(int64_t{});
    case DType::kI32:
      return launch(int32_t{});
    case DType::kI16:
      return launch(int16_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace distrt

#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/logic.h"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

using portable::BroadcastMap;

cudaError_t LaunchCompare(DType dtype, portable::CompareOp op, const void* a, const void* b,
                          void* y, int64_t n, const BroadcastMap& map, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::CompareBody<T> body{op, static_cast<const T*>(a), static_cast<const T*>(b),
                                  static_cast<uint8_t*>(y), map};
    return LaunchFor(n, body, stream);
  };
  switch (dtype) {
    case DType::kI64:
      return launch(int64_t{});
    case DType::kI32:
      return launch(int32_t{});
    case DType::kBool:
    case DType::kU8:
      return launch(uint8_t{});
    default:
      return ForFloatType(dtype, launch);
  }
}

cudaError_t LaunchLogic(portable::LogicOp op, const void* a, const void* b, void* y, int64_t n,
                        const BroadcastMap& map, cudaStream_t stream) {
  portable::LogicBody body{op, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b),
                           static_cast<uint8_t*>(y), map};
  return LaunchFor(n, body, stream);
}

cudaError_t LaunchNot(const void* x, void* y, int64_t n, cudaStream_t stream) {
  portable::NotBody body{static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y)};
  return LaunchFor(n, body, stream);
}

cudaError_t LaunchWhere(size_t elem, const void* cond, const void* a, const void* b, void* y,
                        int64_t n, const BroadcastMap& map, cudaStream_t stream) {
  return ForElemSize(elem, [&](auto tag) {
    using U = decltype(tag);
    const auto aligned = [](const void* p, size_t bytes) {
      return reinterpret_cast<uintptr_t>(p) % bytes == 0;
    };
    const size_t pack = sizeof(U) * portable::kPack;
    if (portable::Packable(map) && aligned(cond, portable::kPack) && aligned(a, pack) &&
        aligned(b, pack) && aligned(y, pack)) {
      portable::WherePackBody<U> body{static_cast<const uint8_t*>(cond), static_cast<const U*>(a),
                                      static_cast<const U*>(b), static_cast<U*>(y), map, n};
      return LaunchFor((n + portable::kPack - 1) / portable::kPack, body, stream);
    }
    portable::WhereBody<U> body{static_cast<const uint8_t*>(cond), static_cast<const U*>(a),
                                static_cast<const U*>(b), static_cast<U*>(y), map};
    return LaunchFor(n, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

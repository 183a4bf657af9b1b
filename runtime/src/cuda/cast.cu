#include "cuda/cast.h"
#include "cuda/launch.cuh"
#include "portable/cast.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchCast(DType from, DType to, const void* x, void* y, int64_t n,
                       cudaStream_t stream) {
  switch (to) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kI64:
    case DType::kI32:
    case DType::kI16:
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      break;
    default:
      return cudaErrorInvalidValue;
  }
  auto launch = [&](auto tag) {
    using S = decltype(tag);
    portable::CastBody<S> body{to, static_cast<const S*>(x), y};
    return LaunchFor(n, body, stream);
  };
  switch (from) {
    case DType::kF32:
      return launch(float{});
    case DType::kF64:
      return launch(double{});
    case DType::kF16:
      return launch(f16_t{});
    case DType::kBF16:
      return launch(bf16_t{});
    case DType::kI64:
      return launch(int64_t{});
    case DType::kI32:
      return launch(int32_t{});
    case DType::kI16:
      return launch(int16_t{});
    case DType::kI8:
      return launch(int8_t{});
    case DType::kU8:
    case DType::kBool:  // read as its byte, as the host does
      return launch(uint8_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace distrt

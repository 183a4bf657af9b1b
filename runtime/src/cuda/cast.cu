#include "cuda/cast.h"
#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "portable/cast.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchCast(DType from, DType to, const void* x, void* y, int64_t n,
                       cudaStream_t stream) {
  // Between f32 and the 16-bit floats: packs of elements.
  if (IsF32StorageType(from) && IsF32StorageType(to) &&
      Aligned(x, DTypeSize(from) * portable::kPack) && Aligned(y, DTypeSize(to) * portable::kPack)) {
    return ForF32StorageType(from, [&](auto s) {
      using S = decltype(s);
      return ForF32StorageType(to, [&](auto d) {
        using D = decltype(d);
        portable::FloatCastPackBody<S, D> body{static_cast<const S*>(x), static_cast<D*>(y), n};
        return LaunchFor((n + portable::kPack - 1) / portable::kPack, body, stream);
      });
    });
  }
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

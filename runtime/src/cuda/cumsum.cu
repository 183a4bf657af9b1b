#include "cuda/cumsum.h"
#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"
#include "portable/cumsum.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchCumSum(DType dtype, const void* x, void* y, int64_t outer, int64_t dim,
                         int64_t inner, bool exclusive, bool reverse, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::CumSumBody<T> body{static_cast<const T*>(x), static_cast<T*>(y), dim, inner,
                                 exclusive, reverse};
    return LaunchFor(outer * inner, body, stream);
  };
  return ForNumericType(dtype, launch);
}

}  // namespace cuda
}  // namespace distrt

#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/top_k.h"
#include "cuda/type_dispatch.cuh"
#include "portable/top_k.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchTopK(DType dtype, const void* x, int64_t* y, int64_t outer, int64_t n,
                       int64_t inner, int64_t k, bool smallest, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::TopKBody<T> body{static_cast<const T*>(x), y, n, inner, k, smallest};
    return LaunchRows(outer * inner, body, stream);
  };
  return ForNumericType(dtype, launch);
}

}  // namespace cuda
}  // namespace distrt

#include "cuda/atomics.cuh"
#include "cuda/dispatch.cuh"
#include "cuda/index.h"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"
#include "portable/index.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchGather(size_t unit, DType index_dtype, const void* data, const void* indices,
                         void* out, int64_t outer, int64_t n, int64_t dim, int64_t inner,
                         portable::ErrorSlot* error, cudaStream_t stream) {
  return ForCopyUnit(unit, [&](auto utag) {
    using U = decltype(utag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::GatherBody<U, I> body{static_cast<const U*>(data), static_cast<const I*>(indices),
                                      static_cast<U*>(out), n, dim, inner, error};
      return LaunchFor(outer * n * inner, body, stream);
    });
  });
}

cudaError_t LaunchScatterAdd(DType dtype, DType index_dtype, const void* updates,
                             const void* indices, void* out, int64_t outer, int64_t n, int64_t dim,
                             int64_t inner, portable::ErrorSlot* error, cudaStream_t stream) {
  auto launch = [&](auto ttag) {
    using T = decltype(ttag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::ScatterAddBody<T, I, AtomicAdd> body{static_cast<const T*>(updates),
                                                     static_cast<const I*>(indices),
                                                     static_cast<T*>(out), n, dim, inner, error};
      return LaunchFor(outer * n * inner, body, stream);
    });
  };
  return ForNumericType(dtype, launch);
}

}  // namespace cuda
}  // namespace distrt

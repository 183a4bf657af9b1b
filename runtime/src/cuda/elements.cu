#include "cuda/atomics.cuh"
#include "cuda/dispatch.cuh"
#include "cuda/elements.h"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

cudaError_t LaunchGatherElements(size_t elem, DType index_dtype, const void* data,
                                 const void* indices, void* out, int64_t n,
                                 const portable::ElementsMap& map, portable::ErrorSlot* error,
                                 cudaStream_t stream) {
  return ForElemSize(elem, [&](auto utag) {
    using U = decltype(utag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::GatherElementsBody<U, I> body{static_cast<const U*>(data),
                                              static_cast<const I*>(indices),
                                              static_cast<U*>(out), map, error};
      return LaunchFor(n, body, stream);
    });
  });
}

cudaError_t LaunchScatterElements(size_t elem, DType index_dtype, const void* updates,
                                  const void* indices, long long* winner, int64_t data_elements,
                                  void* out, int64_t n, const portable::ElementsMap& map,
                                  portable::ErrorSlot* error, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  // All bits set: -1, below every position.
  cudaError_t rc = cudaMemsetAsync(winner, 0xff, sizeof(long long) * data_elements, stream);
  if (rc != cudaSuccess) return rc;
  return ForElemSize(elem, [&](auto utag) {
    using U = decltype(utag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      const I* idx = static_cast<const I*>(indices);
      portable::ScatterWinnerBody<I, AtomicMax> pick{idx, winner, map, error};
      cudaError_t e = LaunchFor(n, pick, stream);
      if (e != cudaSuccess) return e;
      portable::ScatterWriteBody<U, I> write{static_cast<const U*>(updates), idx, winner,
                                             static_cast<U*>(out), map};
      return LaunchFor(n, write, stream);
    });
  });
}

cudaError_t LaunchScatterElementsAdd(DType dtype, DType index_dtype, const void* updates,
                                     const void* indices, void* out, int64_t n,
                                     const portable::ElementsMap& map,
                                     portable::ErrorSlot* error, cudaStream_t stream) {
  auto launch = [&](auto ttag) {
    using T = decltype(ttag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::ScatterAddElementsBody<T, I, AtomicAdd> body{
          static_cast<const T*>(updates), static_cast<const I*>(indices), static_cast<T*>(out),
          map, error};
      return LaunchFor(n, body, stream);
    });
  };
  switch (dtype) {
    case DType::kF32:
      return launch(float{});
    case DType::kF64:
      return launch(double{});
    default:
      return ForIntType(dtype, launch);
  }
}

cudaError_t LaunchOneHot(size_t elem, DType index_dtype, const void* indices, const void* values,
                         void* out, int64_t outer, int64_t depth, int64_t inner,
                         cudaStream_t stream) {
  return ForElemSize(elem, [&](auto utag) {
    using U = decltype(utag);
    return ForIndexType(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      portable::OneHotBody<U, I> body{static_cast<const I*>(indices),
                                      static_cast<const U*>(values), static_cast<U*>(out), depth,
                                      inner};
      return LaunchFor(outer * depth * inner, body, stream);
    });
  });
}

}  // namespace cuda
}  // namespace distrt

#include "cuda/dispatch.cuh"
#include "cuda/einsum.h"
#include "cuda/launch.cuh"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

cudaError_t LaunchEinsum(DType dtype, const void* const* inputs, void* out, int64_t n_out,
                         const portable::EinsumMap& map, int64_t n_sum, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::EinsumBody<T> body{};
    for (int i = 0; i < map.operands; ++i) body.in[i] = static_cast<const T*>(inputs[i]);
    body.out = static_cast<T*>(out);
    body.map = map;
    body.n_sum = n_sum;
    return LaunchFor(n_out, body, stream);
  };
  return ForNumericType(dtype, launch);
}

cudaError_t LaunchPermute(size_t elem, const void* src, void* dst, int rank,
                          const int64_t* sizes, const int64_t* strides, int64_t n,
                          cudaStream_t stream) {
  if (rank > portable::kMaxEinsumLetters) return cudaErrorInvalidValue;
  return ForElemSize(elem, [&](auto utag) {
    using U = decltype(utag);
    portable::PermuteBody<U> body{};
    body.src = static_cast<const U*>(src);
    body.dst = static_cast<U*>(dst);
    body.rank = rank;
    for (int d = 0; d < rank; ++d) {
      body.sizes[d] = sizes[d];
      body.strides[d] = strides[d];
    }
    return LaunchFor(n, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

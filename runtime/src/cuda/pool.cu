#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/pool.h"
#include "portable/pool.h"

namespace distrt {
namespace cuda {

cudaError_t LaunchPool(DType dtype, bool is_max, bool include_pad, const void* x, void* y,
                       int64_t planes, const portable::Window& win, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::PoolBody<T> body{static_cast<const T*>(x), static_cast<T*>(y), win, is_max,
                               include_pad};
    return LaunchFor(planes * win.out_size(), body, stream);
  });
}

cudaError_t LaunchPoolGrad(DType dtype, bool is_max, bool include_pad, const void* x,
                           const void* dy, void* dx, int64_t* arg, int64_t planes,
                           const portable::Window& win, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n_in = planes * win.in_size();
    if (!is_max) {
      portable::AvgPoolGradBody<T> body{static_cast<const T*>(dy), static_cast<T*>(dx), win,
                                        include_pad};
      return LaunchFor(n_in, body, stream);
    }
    if (arg == nullptr) return cudaErrorInvalidValue;
    portable::MaxPoolArgBody<T> pick{static_cast<const T*>(x), arg, win};
    cudaError_t e = LaunchFor(planes * win.out_size(), pick, stream);
    if (e != cudaSuccess) return e;
    portable::MaxPoolGradBody<T> body{static_cast<const T*>(dy), arg, static_cast<T*>(dx), win};
    return LaunchFor(n_in, body, stream);
  });
}

cudaError_t LaunchGlobalPool(DType dtype, bool is_max, const void* x, void* y, int64_t planes,
                             int64_t n, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::GlobalPoolBody<T> body{static_cast<const T*>(x), static_cast<T*>(y), n, is_max};
    return LaunchRows(planes, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

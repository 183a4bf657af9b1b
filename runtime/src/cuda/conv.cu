#include "cuda/conv.h"
#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"

namespace distrt {
namespace cuda {

cudaError_t LaunchConv(DType dtype, const void* x, const void* w, const void* bias, void* y,
                       const portable::ConvSizes& z, const portable::Window& win,
                       cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::ConvBody<T> body{static_cast<const T*>(x), static_cast<const T*>(w),
                               static_cast<const T*>(bias), static_cast<T*>(y), z, win};
    return LaunchFor(z.n * z.m * win.out_size(), body, stream);
  });
}

cudaError_t LaunchConvGradInput(DType dtype, const void* dy, const void* w, void* dx,
                                const portable::ConvSizes& z, const portable::Window& win,
                                cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    portable::ConvGradInputBody<T> body{static_cast<const T*>(dy), static_cast<const T*>(w),
                                        static_cast<T*>(dx), z, win};
    return LaunchFor(z.n * z.c * win.in_size(), body, stream);
  });
}

cudaError_t LaunchConvGradWeight(DType dtype, const void* x, const void* dy, void* dw,
                                 void* partial, int64_t chunks, const portable::ConvSizes& z,
                                 const portable::Window& win, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename portable::Elem<T>::Compute;
    const int64_t wsize = z.m * z.cg * win.k_size();
    C* part = chunks > 1 ? static_cast<C*>(partial) : nullptr;
    if (chunks > 1 && part == nullptr) return cudaErrorInvalidValue;
    portable::ConvGradWeightBody<T> body{static_cast<const T*>(x),
                                         static_cast<const T*>(dy),
                                         static_cast<T*>(dw),
                                         part,
                                         z,
                                         win,
                                         chunks};
    cudaError_t e = LaunchRows(chunks * wsize, body, stream);
    if (e != cudaSuccess || part == nullptr) return e;
    portable::ConvGradWeightFinishBody<T> finish{part, static_cast<T*>(dw), wsize, chunks};
    return LaunchFor(wsize, finish, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

#include <type_traits>

#include "cuda/dispatch.cuh"
#include "cuda/launch.cuh"
#include "cuda/reduce.h"

namespace distrt {
namespace cuda {

using portable::ReduceOp;
using portable::ReducePass;

namespace {

template <typename In, typename Out, typename Fold>
cudaError_t RunPass(const ReducePass& p, const void* in, void* out, bool mean, int64_t count,
                    cudaStream_t stream) {
  using C = typename portable::Elem<In>::Compute;
  const In* x = static_cast<const In*>(in);
  Out* y = static_cast<Out*>(out);
  if constexpr (!std::is_same<Fold, portable::ProdFold>::value) {
    if (p.rows) {
      portable::ReduceRowsBody<In, Out, Fold> body{
          x, y, p.R, p.splits, p.chunk, mean, static_cast<C>(count)};
      return LaunchRows(p.outer * p.splits, body, stream);
    }
  }
  portable::ReduceColsBody<In, Out, Fold> body{x,        y,       p.R,  p.inner,
                                               p.splits, p.chunk, mean, static_cast<C>(count)};
  return LaunchFor(p.outer * p.inner * p.splits, body, stream);
}

// Storage or compute type on each side; one instantiation when they agree.
template <typename T, typename Fold>
cudaError_t RunPassOf(const ReducePass& p, const void* in, bool in_partial, void* out,
                      bool out_partial, bool mean, int64_t count, cudaStream_t stream) {
  using C = typename portable::Elem<T>::Compute;
  if constexpr (std::is_same<T, C>::value) {
    return RunPass<T, T, Fold>(p, in, out, mean, count, stream);
  } else {
    if (in_partial)
      return out_partial ? RunPass<C, C, Fold>(p, in, out, mean, count, stream)
                         : RunPass<C, T, Fold>(p, in, out, mean, count, stream);
    return out_partial ? RunPass<T, C, Fold>(p, in, out, mean, count, stream)
                       : RunPass<T, T, Fold>(p, in, out, mean, count, stream);
  }
}

}  // namespace

cudaError_t LaunchReducePass(DType dtype, ReduceOp op, const ReducePass& pass, const void* in,
                             bool in_partial, void* out, bool out_partial, bool mean, int64_t count,
                             cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        return RunPassOf<T, portable::SumFold>(pass, in, in_partial, out, out_partial, mean, count,
                                               stream);
      case ReduceOp::kMax:
        return RunPassOf<T, portable::MaxFold>(pass, in, in_partial, out, out_partial, mean, count,
                                               stream);
      case ReduceOp::kMin:
        return RunPassOf<T, portable::MinFold>(pass, in, in_partial, out, out_partial, mean, count,
                                               stream);
      case ReduceOp::kProd:
        return RunPassOf<T, portable::ProdFold>(pass, in, in_partial, out, out_partial, mean, count,
                                                stream);
    }
    return cudaErrorInvalidValue;
  });
}

cudaError_t LaunchArg(DType dtype, bool is_max, bool last, const void* x, int64_t* y, int64_t outer,
                      int64_t n, int64_t inner, cudaStream_t stream) {
  return ForFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    // A warp per row when rows are contiguous and long enough to share.
    if (inner == 1 && n >= 32) {
      portable::ArgRowsBody<T> body{px, y, n, is_max, last};
      return LaunchRows(outer, body, stream);
    }
    portable::ArgColsBody<T> body{px, y, n, inner, is_max, last};
    return LaunchFor(outer * inner, body, stream);
  });
}

}  // namespace cuda
}  // namespace distrt

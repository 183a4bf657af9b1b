// cumsum body (host and device): ONNX CumSum along one axis, the tensor
// viewed as [outer, dim, inner]. One call sums one (outer, inner) line in
// order (from its end when reversed), exactly as kernels_reduce.cpp's
// CumSum does, so results match the host bit for bit: integers wrap,
// 16-bit floats add in f32 and round each output once. A line is
// sequential: the device runs one thread per line (correct, not fast for
// few long lines).
#ifndef DISTRT_SRC_PORTABLE_CUMSUM_H_
#define DISTRT_SRC_PORTABLE_CUMSUM_H_

#include <type_traits>

#include "portable/arith.h"
#include "portable/hd.h"

namespace distrt {
namespace portable {

template <typename C>
DISTRT_HD C ScanAdd(C a, C b) {
  if constexpr (std::is_integral<C>::value) {
    return WrapAddHD(a, b);
  } else {
    return a + b;
  }
}

// y may be x: every element of a line is read before the line's thread
// writes it, and no other thread touches the line.
template <typename T>
struct CumSumBody {
  const T* x;
  T* y;
  int64_t dim, inner;
  bool exclusive, reverse;
  DISTRT_HD void operator()(int64_t line) const {
    using C = typename Elem<T>::Compute;
    int64_t o, i;
    DivMod(line, inner, &o, &i);
    C sum = C{};
    for (int64_t s = 0; s < dim; ++s) {
      const int64_t k = reverse ? dim - 1 - s : s;
      const int64_t at = (o * dim + k) * inner + i;
      const C v = Load(x[at]);
      if (!exclusive) sum = ScanAdd(sum, v);
      y[at] = Store<T>(sum);
      if (exclusive) sum = ScanAdd(sum, v);
    }
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_CUMSUM_H_

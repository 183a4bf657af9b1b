// einsum bodies (host and device), following kernels_einsum.cpp.
//
// EinsumBody is the general contraction, for any equation the host
// accepts (diagonals, letters summed within one operand, up to
// kMaxEinsumOperands operands): one call per result element loops over the
// summed letters, accumulating products in double (int64 for integers, as
// the host does; Acc). Correct for every equation, not fast: the CUDA
// kernel uses it only where the equation is no batched matrix product.
//
// PermuteBody is the strided copy that puts a batched product's operands
// into [batch, m, k] / [batch, k, n] order and its result back into the
// equation's order (the host's StridedCopy), the GEMM in between.
#ifndef DISTRT_SRC_PORTABLE_EINSUM_H_
#define DISTRT_SRC_PORTABLE_EINSUM_H_

#include <type_traits>

#include "portable/hd.h"

namespace distrt {
namespace portable {

constexpr int kMaxEinsumOperands = 3;
constexpr int kMaxEinsumLetters = 12;

// Letters in order: the result's first, then the summed ones; per operand
// the element stride of each letter (summed over the operand's dims that
// carry it, so a repeated letter walks a diagonal; 0 where it lacks it).
struct EinsumMap {
  int operands = 0;
  int letters = 0;
  int out_letters = 0;
  int64_t sizes[kMaxEinsumLetters] = {};
  int64_t strides[kMaxEinsumOperands][kMaxEinsumLetters] = {};
};

template <typename T>
struct EinsumAcc {
  using type = typename std::conditional<std::is_integral<T>::value, int64_t, double>::type;
};

template <typename T>
struct EinsumBody {
  const T* in[kMaxEinsumOperands];
  T* out;
  EinsumMap map;
  int64_t n_sum;  // product of the summed letters' sizes
  DISTRT_HD void operator()(int64_t o) const {
    using Acc = typename EinsumAcc<T>::type;
    int64_t base[kMaxEinsumOperands] = {};
    int64_t rest = o;
    for (int d = map.out_letters - 1; d >= 0; --d) {
      int64_t q, c;
      DivMod(rest, map.sizes[d], &q, &c);
      rest = q;
      for (int i = 0; i < map.operands; ++i) base[i] += c * map.strides[i][d];
    }
    Acc acc = 0;
    for (int64_t s = 0; s < n_sum; ++s) {
      int64_t off[kMaxEinsumOperands];
      for (int i = 0; i < map.operands; ++i) off[i] = base[i];
      int64_t r = s;
      for (int d = map.letters - 1; d >= map.out_letters; --d) {
        int64_t q, c;
        DivMod(r, map.sizes[d], &q, &c);
        r = q;
        for (int i = 0; i < map.operands; ++i) off[i] += c * map.strides[i][d];
      }
      Acc p = 1;
      for (int i = 0; i < map.operands; ++i) p *= static_cast<Acc>(Load(in[i][off[i]]));
      acc += p;
    }
    out[o] = Store<T>(static_cast<typename Elem<T>::Compute>(acc));
  }
};

// dst[t] (contiguous over sizes) = src[sum of coordinate * stride].
template <typename U>
struct PermuteBody {
  const U* src;
  U* dst;
  int rank;
  int64_t sizes[kMaxEinsumLetters];
  int64_t strides[kMaxEinsumLetters];
  DISTRT_HD void operator()(int64_t t) const {
    int64_t off = 0, rest = t;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q, c;
      DivMod(rest, sizes[d], &q, &c);
      rest = q;
      off += c * strides[d];
    }
    dst[t] = src[off];
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_EINSUM_H_

// Index bodies (host and device): gather and scatter_add along an axis.
// Tensors are viewed as [outer, dim, inner] (data / base) and
// [outer, n, inner] (output / updates), n the number of indices (int64 or
// int32, negative ones counting from the end, as the host kernels in
// kernels_index.cpp do).
//
// An index outside [-dim, dim) is an error on the host. A device kernel
// cannot return one without synchronising, and reading the indices back to
// check them first would cost the same synchronisation on every call, so
// the bodies check each index where they use it: gather writes zeros for
// it, scatter_add skips it, and both report it in an ErrorSlot
// (device_error.h) that the CUDA kernels turn into the host's OutOfRange
// error later (cuda/device_errors.h). Nothing is ever read or written out
// of bounds.
#ifndef DISTRT_SRC_PORTABLE_INDEX_H_
#define DISTRT_SRC_PORTABLE_INDEX_H_

#include <type_traits>

#include "portable/arith.h"
#include "portable/device_error.h"
#include "portable/hd.h"

namespace distrt {
namespace portable {

// out[o, j, c] = data[o, idx[j], c], elements moved as U (a copy unit:
// `inner` counts units, so a row of whole 16-byte units moves as Bytes16).
template <typename U, typename I>
struct GatherBody {
  const U* data;
  const I* idx;
  U* out;
  int64_t n;      // indices
  int64_t dim;    // data's size along the axis
  int64_t inner;  // units per slice
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t t) const {
    int64_t c, r, j, o;
    DivMod(t, inner, &r, &c);
    DivMod(r, n, &o, &j);
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim) {
      out[t] = U{};
      ReportError(error, DeviceErrorCode::kGatherIndex, v, dim);
      return;
    }
    if (v < 0) v += dim;
    out[t] = data[(o * dim + v) * inner + c];
  }
};

// The host side of scatter_add's accumulation: HostFor runs one index at a
// time, so a plain read-add-write is exact. Integers wrap; 16-bit floats
// add in f32 and round once per addition, as the host kernel does. The
// device's is an atomic add with the same rounding (cuda/index.cu).
struct SequentialAdd {
  template <typename T>
  static void Add(T* p, T v) {
    if constexpr (std::is_integral<T>::value) {
      *p = WrapAddHD(*p, v);
    } else {
      *p = Store<T>(Load(*p) + Load(v));
    }
  }
};

// out[o, idx[j], c] += upd[o, j, c] (out holds base already), with
// Adder::Add(T*, T). Duplicate indices all add: on the device atomically,
// in no particular order (floats may round differently from the host's
// index order).
template <typename T, typename I, typename Adder>
struct ScatterAddBody {
  const T* upd;
  const I* idx;
  T* out;
  int64_t n;
  int64_t dim;
  int64_t inner;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t t) const {
    int64_t c, r, j, o;
    DivMod(t, inner, &r, &c);
    DivMod(r, n, &o, &j);
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim) {
      ReportError(error, DeviceErrorCode::kScatterAddIndex, v, dim);
      return;
    }
    if (v < 0) v += dim;
    Adder::Add(out + (o * dim + v) * inner + c, upd[t]);
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_INDEX_H_

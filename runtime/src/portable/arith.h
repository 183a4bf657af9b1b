// Arithmetic bodies (host and device) beyond the float ones of
// elementwise.h: integer add/sub/mul/div/max/min/mod and neg/abs, float
// mod, and clip. Semantics are the host kernels' (kernels_binary.cpp,
// kernels_unary.cpp): integers wrap around (two's complement, as numpy),
// division truncates toward zero and x / -1 is -x (wrapping, so INT_MIN / -1
// is INT_MIN), mod takes the divisor's sign (Python) or with `fmod` the
// dividend's (C), x mod -1 is 0, and a zero divisor is an error: the body
// writes 0 and reports it (device_error.h). Clip is max(min(x, hi), lo) with
// NaN passing through.
#ifndef DISTRT_SRC_PORTABLE_ARITH_H_
#define DISTRT_SRC_PORTABLE_ARITH_H_

#include <limits>

#include "portable/device_error.h"
#include "portable/hd.h"
#include "portable/index_map.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

template <typename T>
struct UnsignedOf;
template <>
struct UnsignedOf<int64_t> {
  using type = uint64_t;
};
template <>
struct UnsignedOf<int32_t> {
  using type = uint32_t;
};

// Two's complement arithmetic without signed overflow (undefined in C++):
// compute on the unsigned type, convert back.
template <typename T>
DISTRT_HD T WrapAddHD(T a, T b) {
  using U = typename UnsignedOf<T>::type;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
DISTRT_HD T WrapSubHD(T a, T b) {
  using U = typename UnsignedOf<T>::type;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
DISTRT_HD T WrapMulHD(T a, T b) {
  using U = typename UnsignedOf<T>::type;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

enum class IntBinaryOp : int { kAdd, kSub, kMul, kDiv, kMax, kMin, kMod, kFmod };

// y = a op b for int64_t or int32_t; `map` has two operands. A zero
// divisor of div/mod gives 0 and is reported in `error`.
template <typename T>
struct IntBinaryBody {
  IntBinaryOp op;
  const T* a;
  const T* b;
  T* y;
  BroadcastMap map;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    const T x = a[off[0]], z = b[off[1]];
    T r = 0;
    switch (op) {
      case IntBinaryOp::kAdd:
        r = WrapAddHD(x, z);
        break;
      case IntBinaryOp::kSub:
        r = WrapSubHD(x, z);
        break;
      case IntBinaryOp::kMul:
        r = WrapMulHD(x, z);
        break;
      case IntBinaryOp::kDiv:
        if (z == 0) {
          ReportError(error, DeviceErrorCode::kIntDivByZero, 0, 0);
        } else {
          r = z == -1 ? WrapSubHD(T(0), x) : static_cast<T>(x / z);  // avoids INT_MIN / -1
        }
        break;
      case IntBinaryOp::kMax:
        r = x < z ? z : x;
        break;
      case IntBinaryOp::kMin:
        r = z < x ? z : x;
        break;
      case IntBinaryOp::kMod:
      case IntBinaryOp::kFmod:
        if (z == 0) {
          ReportError(error, DeviceErrorCode::kIntModByZero, 0, 0);
        } else if (z != -1) {
          r = static_cast<T>(x % z);
          if (op == IntBinaryOp::kMod && r != 0 && ((r < 0) != (z < 0))) r = static_cast<T>(r + z);
        }
        break;
    }
    y[i] = r;
  }
};

enum class IntUnaryOp : int { kNeg, kAbs };

template <typename T>
struct IntUnaryBody {
  IntUnaryOp op;
  const T* x;
  T* y;
  DISTRT_HD void operator()(int64_t i) const {
    const T v = x[i];
    y[i] = (op == IntUnaryOp::kNeg || v < 0) ? WrapSubHD(T(0), v) : v;
  }
};

// y = a mod b on a float storage type (16-bit floats compute in f32): the
// divisor's sign, or with `fmod` the dividend's.
template <typename T>
struct FloatModBody {
  bool fmod;
  const T* a;
  const T* b;
  T* y;
  BroadcastMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    using C = typename Elem<T>::Compute;
    const C x = Load(a[off[0]]), z = Load(b[off[1]]);
    C r = Fmod(x, z);
    if (!fmod && r != C(0) && ((r < C(0)) != (z < C(0)))) r += z;
    y[i] = Store<T>(r);
  }
};

// y = clip(x, lo, hi), in the compute type; NaN passes (no comparison holds).
template <typename T>
struct ClipBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  T* y;
  C lo;
  C hi;
  DISTRT_HD void operator()(int64_t i) const {
    C r = Load(x[i]);
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    y[i] = Store<T>(r);
  }
};

// The largest finite value of a storage type, in its compute type.
template <typename T>
inline typename Elem<T>::Compute LargestFinite() {
  return std::numeric_limits<T>::max();
}
template <>
inline float LargestFinite<bf16_t>() {
  return BF16BitsToFloat(0x7f7f);
}
template <>
inline float LargestFinite<f16_t>() {
  return 65504.0f;
}

// Clip's bounds as the host kernel derives them from its optional min/max
// attributes (host-only): absent, the type's lowest / largest finite value;
// for integers an attribute beyond the type's range saturates, else it is
// truncated toward zero.
template <typename T>
void ClipBounds(bool has_min, double min, bool has_max, double max, typename Elem<T>::Compute* lo,
                typename Elem<T>::Compute* hi) {
  using C = typename Elem<T>::Compute;
  auto attr = [](double v) -> C {
    if constexpr (std::numeric_limits<T>::is_integer) {
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
        return std::numeric_limits<T>::lowest();
      if (v >= static_cast<double>(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
    }
    return static_cast<C>(v);
  };
  const C largest = LargestFinite<T>();
  *lo = has_min ? attr(min) : (std::numeric_limits<T>::is_integer ? std::numeric_limits<C>::lowest()
                                                                   : -largest);
  *hi = has_max ? attr(max) : largest;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_ARITH_H_

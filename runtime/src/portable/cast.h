// The cast body (host and device): every pair of the host kernel's dtypes
// (f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool). Conversions are the host's
// (kernels_cast.cpp), step for step: a float source is read as double, an
// integer or bool source as int64; to bool is `!= 0` (NaN is true); to f16 /
// bf16 goes through f32 (so f64 rounds twice, as on the host); float to i64
// or i32 truncates, and NaN or a value out of range gives the type's minimum;
// float to i16/i8/u8 goes through i32 and wraps; integer to integer wraps.
// Templated on the source type only: the destination is a switch on its
// dtype (the same for every thread), which keeps the device instantiations
// at one per source type.
#ifndef DISTRT_SRC_PORTABLE_CAST_H_
#define DISTRT_SRC_PORTABLE_CAST_H_

#include <type_traits>

#include "portable/hd.h"

namespace distrt {
namespace portable {

// A source element widened: double for floats, int64 for integers and bool.
template <typename S>
struct Widen {
  using type = int64_t;
  static DISTRT_HD int64_t Get(S x) { return static_cast<int64_t>(x); }
};
template <>
struct Widen<float> {
  using type = double;
  static DISTRT_HD double Get(float x) { return static_cast<double>(x); }
};
template <>
struct Widen<double> {
  using type = double;
  static DISTRT_HD double Get(double x) { return x; }
};
template <>
struct Widen<bf16_t> {
  using type = double;
  static DISTRT_HD double Get(bf16_t x) { return static_cast<double>(BF16BitsToFloat(x.bits)); }
};
template <>
struct Widen<f16_t> {
  using type = double;
  static DISTRT_HD double Get(f16_t x) { return static_cast<double>(HalfBitsToFloat(x.bits)); }
};

// Float to i64/i32: truncation in range, else (NaN included) the minimum.
template <typename I>
DISTRT_HD I FloatToIntHD(double x, I min) {
  const double lo = static_cast<double>(min);
  if (x >= lo && x < -lo) return static_cast<I>(x);
  return min;
}

// Narrow integers (i16 i8 u8) from float: through i32, then wrap.
template <typename I>
DISTRT_HD I FloatToNarrowHD(double x) {
  const int32_t v = FloatToIntHD<int32_t>(x, static_cast<int32_t>(-2147483647 - 1));
  return static_cast<I>(static_cast<uint32_t>(v));
}

DISTRT_HD uint8_t ToBool(double v) { return v != 0 ? 1 : 0; }
DISTRT_HD uint8_t ToBool(int64_t v) { return v != 0 ? 1 : 0; }

// y (of dtype `to`) = x (of storage type S) converted, element by element.
template <typename S>
struct CastBody {
  DType to;
  const S* x;
  void* y;
  DISTRT_HD void operator()(int64_t i) const {
    const auto v = Widen<S>::Get(x[i]);
    constexpr bool kFloat = std::is_same<typename Widen<S>::type, double>::value;
    switch (to) {
      case DType::kF32:
        static_cast<float*>(y)[i] = static_cast<float>(v);
        break;
      case DType::kF64:
        static_cast<double*>(y)[i] = static_cast<double>(v);
        break;
      case DType::kF16:
        static_cast<f16_t*>(y)[i] = f16_t{FloatToHalfBits(static_cast<float>(v))};
        break;
      case DType::kBF16:
        static_cast<bf16_t*>(y)[i] = bf16_t{FloatToBF16Bits(static_cast<float>(v))};
        break;
      case DType::kBool:
        static_cast<uint8_t*>(y)[i] = ToBool(v);
        break;
      case DType::kI64:
        if constexpr (kFloat) {
          static_cast<int64_t*>(y)[i] =
              FloatToIntHD<int64_t>(v, static_cast<int64_t>(-9223372036854775807LL - 1));
        } else {
          static_cast<int64_t*>(y)[i] = static_cast<int64_t>(v);
        }
        break;
      case DType::kI32:
        if constexpr (kFloat) {
          static_cast<int32_t*>(y)[i] =
              FloatToIntHD<int32_t>(v, static_cast<int32_t>(-2147483647 - 1));
        } else {
          static_cast<int32_t*>(y)[i] = static_cast<int32_t>(static_cast<uint32_t>(v));
        }
        break;
      case DType::kI16:
        if constexpr (kFloat) {
          static_cast<int16_t*>(y)[i] = FloatToNarrowHD<int16_t>(v);
        } else {
          static_cast<int16_t*>(y)[i] = static_cast<int16_t>(static_cast<uint16_t>(v));
        }
        break;
      case DType::kI8:
        if constexpr (kFloat) {
          static_cast<int8_t*>(y)[i] = FloatToNarrowHD<int8_t>(v);
        } else {
          static_cast<int8_t*>(y)[i] = static_cast<int8_t>(static_cast<uint8_t>(v));
        }
        break;
      case DType::kU8:
        if constexpr (kFloat) {
          static_cast<uint8_t*>(y)[i] = FloatToNarrowHD<uint8_t>(v);
        } else {
          static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v);
        }
        break;
      default:
        break;
    }
  }
};

// Between f32, bf16 and f16 (the casts around a bf16 policy's f32 islands),
// kPack elements at a time, in f32 as the host's conversions do (a 16-bit
// float widens exactly; f32 rounds to nearest even): the bytes CastBody
// writes, with one load and one store per pack.
template <typename S, typename D>
struct FloatCastPackBody {
  const S* x;
  D* y;
  int64_t n;
  DISTRT_HD void operator()(int64_t p) const {
    const int64_t i0 = p * kPack;
    if (i0 + kPack <= n) {
      const Pack<S> in = reinterpret_cast<const Pack<S>*>(x)[p];
      Pack<D> out;
      DISTRT_UNROLL
      for (int k = 0; k < kPack; ++k) out.v[k] = Store<D>(static_cast<float>(Load(in.v[k])));
      reinterpret_cast<Pack<D>*>(y)[p] = out;
      return;
    }
    for (int64_t i = i0; i < n; ++i) y[i] = Store<D>(static_cast<float>(Load(x[i])));
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_CAST_H_

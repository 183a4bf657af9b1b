// What kernel bodies written once for the host and the device stand on:
// DISTRT_HD (a function nvcc compiles for both, g++ for the host), the
// 16-bit float conversions, and element traits that load a stored element
// as its compute type and store it back. A body is a functor of an element
// (or row) index; the CUDA launchers (cuda/launch.cuh) run it on the device
// and host_launch.h runs the same functor on the host, which is how tests
// without a GPU check every device kernel's arithmetic.
#ifndef DISTRT_SRC_PORTABLE_HD_H_
#define DISTRT_SRC_PORTABLE_HD_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "distrt/dtype.h"

#if defined(__CUDACC__)
#define DISTRT_HD __host__ __device__ __forceinline__
// Unrolls a loop of constant trip count, so that the small arrays it
// indexes stay in registers instead of a thread's local memory.
#define DISTRT_UNROLL _Pragma("unroll")
#else
#define DISTRT_HD inline
#define DISTRT_UNROLL
#endif

namespace distrt {
namespace portable {

DISTRT_HD uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

DISTRT_HD float BitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

DISTRT_HD float BF16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

// Round to nearest even; NaN stays a (quiet) NaN. A select, not a branch,
// so that loops of it vectorise.
DISTRT_HD uint16_t FloatToBF16Bits(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

DISTRT_HD float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return BitsFloat(bits);
}

// Round to nearest even; overflow to infinity.
DISTRT_HD uint16_t FloatToHalfBits(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const int32_t exp = static_cast<int32_t>(absx >> 23) - 127 + 15;
  uint32_t mant = absx & 0x7fffffu;
  if (exp <= 0) {  // subnormal half (or zero)
    if (exp < -10) return sign;
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp
  return static_cast<uint16_t>(sign | half);
}

// q = a / b and r = a % b for a >= 0 and b > 0, in 32-bit arithmetic when
// both fit: a GPU divides 64-bit integers in a long instruction sequence,
// and index maps divide for every element.
DISTRT_HD void DivMod(int64_t a, int64_t b, int64_t* q, int64_t* r) {
  if (((a | b) >> 31) == 0) {
    const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
    const uint32_t uq = ua / ub;
    *q = uq;
    *r = ua - uq * ub;
  } else {
    *q = a / b;
    *r = a - *q * b;
  }
}
DISTRT_HD int64_t Div(int64_t a, int64_t b) {
  int64_t q, r;
  DivMod(a, b, &q, &r);
  return q;
}
DISTRT_HD int64_t Mod(int64_t a, int64_t b) {
  int64_t q, r;
  DivMod(a, b, &q, &r);
  return r;
}

// Element traits: how a stored element is computed with. 16-bit floats
// compute in f32; every other type computes as itself.
template <typename T>
struct Elem {
  using Compute = T;
  static DISTRT_HD Compute Load(T x) { return x; }
  static DISTRT_HD T Store(Compute x) { return x; }
};
template <>
struct Elem<bf16_t> {
  using Compute = float;
  static DISTRT_HD float Load(bf16_t x) { return BF16BitsToFloat(x.bits); }
  static DISTRT_HD bf16_t Store(float x) { return bf16_t{FloatToBF16Bits(x)}; }
};
template <>
struct Elem<f16_t> {
  using Compute = float;
  static DISTRT_HD float Load(f16_t x) { return HalfBitsToFloat(x.bits); }
  static DISTRT_HD f16_t Store(float x) { return f16_t{FloatToHalfBits(x)}; }
};

template <typename T>
DISTRT_HD typename Elem<T>::Compute Load(T x) {
  return Elem<T>::Load(x);
}
template <typename T>
DISTRT_HD T Store(typename Elem<T>::Compute x) {
  return Elem<T>::Store(x);
}

// A row's work split over `count` lanes that combine partial results: one
// lane on the host (OneLane, below), a warp's 32 on the device
// (cuda/launch.cuh). A row body loops j = lane, lane + count, ... and
// combines with Sum/Max, which every lane gets back.
struct OneLane {
  static constexpr int count = 1;
  int lane = 0;
  template <typename C>
  DISTRT_HD C Sum(C x) const {
    return x;
  }
  template <typename C>
  DISTRT_HD C Max(C x) const {
    return x;
  }
  template <typename C>
  DISTRT_HD C Min(C x) const {
    return x;
  }
};

// Four consecutive elements moved as one aligned load or store (16 bytes
// for f32: one 128-bit instruction on a GPU), for bodies whose operands
// are contiguous and start at buffer starts (64-byte aligned).
constexpr int kPack = 4;
template <typename T>
struct alignas(sizeof(T) * kPack) Pack {
  T v[kPack];
};

// The most dims an index map (broadcast, transpose, slice) carries.
constexpr int kMaxDims = 8;

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_HD_H_

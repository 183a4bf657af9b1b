// Helpers for the tests that run the CUDA kernels' bodies on the host
// (portable_*_test.cpp): random tensors of any dtype, byte-exact
// comparisons, and the copy-unit dispatch the CUDA launchers do.
#ifndef DISTRT_TEST_PORTABLE_TEST_UTIL_H_
#define DISTRT_TEST_PORTABLE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "kernel_util.h"  // CastBuffer
#include "portable/layout.h"
#include "test_util.h"

namespace distrt {
namespace testing {

// An uninitialised-looking (zeroed) host tensor.
inline Tensor Zeros(DType dtype, const Shape& shape) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(dtype, shape, &t).ok());
  return t;
}

// Random values of any dtype: floats uniform in [-scale, scale) (16-bit
// ones rounded from f32), integers in [-100, 100] (u8 [0, 255]), bools 0/1.
inline Tensor RandomOf(DType dtype, const Shape& shape, uint32_t seed, double scale = 4.0) {
  Tensor t = Zeros(dtype, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> real(-scale, scale);
  std::uniform_int_distribution<int> small(-100, 100), byte(0, 255), bit(0, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (dtype) {
      case DType::kF32:
        t.data<float>()[i] = static_cast<float>(real(gen));
        break;
      case DType::kF64:
        t.data<double>()[i] = real(gen);
        break;
      case DType::kBF16:
        t.data<bf16_t>()[i].bits = FloatToBF16(static_cast<float>(real(gen)));
        break;
      case DType::kF16:
        t.data<f16_t>()[i].bits = FloatToHalf(static_cast<float>(real(gen)));
        break;
      case DType::kI64:
        t.data<int64_t>()[i] = small(gen);
        break;
      case DType::kI32:
        t.data<int32_t>()[i] = small(gen);
        break;
      case DType::kI16:
        t.data<int16_t>()[i] = static_cast<int16_t>(small(gen));
        break;
      case DType::kI8:
        t.data<int8_t>()[i] = static_cast<int8_t>(small(gen));
        break;
      case DType::kU8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(byte(gen));
        break;
      case DType::kBool:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(bit(gen));
        break;
      default:
        ADD_FAILURE() << "no random values for " << DTypeName(dtype);
    }
  }
  return t;
}

// Same type and bytes (NaNs with the same bits count as equal).
inline void ExpectSameBytes(const Tensor& got, const Tensor& want) {
  EXPECT_TRUE(got.Equals(want)) << "got  " << got.DebugString(64) << "\nwant "
                                << want.DebugString(64);
}

// f(U{}) with U the copy unit of `bytes`, as cuda/type_dispatch.cuh does.
template <typename F>
void ForCopyUnitHost(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    case 16:
      return f(portable::Bytes16{});
    default:
      ADD_FAILURE() << "no copy unit of " << bytes << " bytes";
  }
}

// f(T{}) with T the storage type of a numeric dtype the portable bodies
// compute in (f32, f64, bf16, f16, i64, i32); another dtype fails the test,
// naming `what`.
template <typename F>
void ForNumericHost(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    case DType::kBF16: return f(bf16_t{});
    case DType::kF16: return f(f16_t{});
    case DType::kI64: return f(int64_t{});
    case DType::kI32: return f(int32_t{});
    default: ADD_FAILURE() << "no " << what << " body for " << DTypeName(dtype);
  }
}

// Every dtype the host kernels know.
inline std::vector<DType> AllDTypesForTest() {
  return {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI64,
          DType::kI32, DType::kI16, DType::kI8,   DType::kU8,  DType::kBool};
}

inline const double kEdgeFloats[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 127.9, -128.9, 255.5, 256.0,
    65504.0, 65520.0, 70000.0, 33000.7, -33000.7, 1e10, -1e10, 2147483647.0, 2147483648.0,
    -2147483648.0, -2147483649.0, 9.3e18, -9.3e18, 9223372036854775807.0, -9223372036854775808.0,
    3.4e38, 1e300, -1e300, 1e-40, 6e-8, 1.00390625, 16777217.0, 0.1};

inline const int64_t kEdgeInts[] = {
    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
    std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
    int64_t{1} << 31, -(int64_t{1} << 31) - 1, 65535, 65536, -32769, 32768, 255, 256, -129, -1, 0,
    1, 16777217, 9007199254740993};

// Values of `dt` where conversions differ (NaN, infinities, halves, the
// integer types' limits and one past them, values that overflow f16 or
// round in bf16/f32/f64, subnormals), made by the host's own cast from
// f64 and i64: what a program would hold.
inline Tensor CastEdgeValues(DType dt) {
  const int64_t nf = sizeof(kEdgeFloats) / sizeof(double);
  const int64_t ni = sizeof(kEdgeInts) / sizeof(int64_t);
  Tensor t = Zeros(dt, {nf + ni});
  uint8_t* p = static_cast<uint8_t*>(t.raw());
  EXPECT_TRUE(CastBuffer(kEdgeFloats, DType::kF64, p, dt, nf).ok());
  EXPECT_TRUE(CastBuffer(kEdgeInts, DType::kI64, p + nf * DTypeSize(dt), dt, ni).ok());
  return t;
}

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_PORTABLE_TEST_UTIL_H_

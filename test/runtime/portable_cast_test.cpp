// The CUDA cast body (portable/cast.h), run on the host by HostFor, against
// the host kernel for every pair of dtypes, byte for byte, on the values
// where conversions differ: NaN, infinities, halves (truncation toward
// zero), the integer types' limits and one past them, values that overflow
// f16 or round in bf16/f32/f64, subnormals.
#include <gtest/gtest.h>

#include <limits>

#include "kernel_util.h"  // CastBuffer: the host's conversion, for the inputs
#include "portable/cast.h"
#include "portable/host_launch.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

const double kEdgeFloats[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 127.9, -128.9, 255.5, 256.0,
    65504.0, 65520.0, 70000.0, 33000.7, -33000.7, 1e10, -1e10, 2147483647.0, 2147483648.0,
    -2147483648.0, -2147483649.0, 9.3e18, -9.3e18, 9223372036854775807.0, -9223372036854775808.0,
    3.4e38, 1e300, -1e300, 1e-40, 6e-8, 1.00390625, 16777217.0, 0.1};

const int64_t kEdgeInts[] = {std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max(),
                             int64_t{1} << 31,
                             -(int64_t{1} << 31) - 1,
                             65535,
                             65536,
                             -32769,
                             32768,
                             255,
                             256,
                             -129,
                             -1,
                             0,
                             1,
                             16777217,
                             9007199254740993};

// Edge values of `dt`, made by the host's own cast from f64 and i64 (what
// a program would hold).
Tensor EdgeValues(DType dt) {
  const int64_t nf = sizeof(kEdgeFloats) / sizeof(double);
  const int64_t ni = sizeof(kEdgeInts) / sizeof(int64_t);
  Tensor t = Zeros(dt, {nf + ni});
  uint8_t* p = static_cast<uint8_t*>(t.raw());
  EXPECT_TRUE(CastBuffer(kEdgeFloats, DType::kF64, p, dt, nf).ok());
  EXPECT_TRUE(CastBuffer(kEdgeInts, DType::kI64, p + nf * DTypeSize(dt), dt, ni).ok());
  return t;
}

template <typename S>
Tensor CastWithBody(const Tensor& x, DType to) {
  Tensor y = Zeros(to, x.shape());
  portable::HostFor(x.num_elements(), portable::CastBody<S>{to, x.data<S>(), y.raw()});
  return y;
}

Tensor CastWithBody(const Tensor& x, DType to) {
  switch (x.dtype()) {
    case DType::kF32:
      return CastWithBody<float>(x, to);
    case DType::kF64:
      return CastWithBody<double>(x, to);
    case DType::kBF16:
      return CastWithBody<bf16_t>(x, to);
    case DType::kF16:
      return CastWithBody<f16_t>(x, to);
    case DType::kI64:
      return CastWithBody<int64_t>(x, to);
    case DType::kI32:
      return CastWithBody<int32_t>(x, to);
    case DType::kI16:
      return CastWithBody<int16_t>(x, to);
    case DType::kI8:
      return CastWithBody<int8_t>(x, to);
    default:  // u8, bool: bytes
      return CastWithBody<uint8_t>(x, to);
  }
}

}  // namespace

TEST(PortableCast, EveryPairMatchesHostKernel) {
  for (DType from : AllDTypesForTest()) {
    const Tensor x = EdgeValues(from);
    for (DType to : AllDTypesForTest()) {
      if (to == from) continue;  // the kernels share the input's buffer, no body runs
      SCOPED_TRACE(StrCat(DTypeName(from), " -> ", DTypeName(to)));
      ExpectSameBytes(CastWithBody(x, to), Run1("cast", {x}, {to, x.shape()}));
    }
  }
}

TEST(PortableCast, RandomValuesMatchHostKernel) {
  for (DType from : {DType::kF32, DType::kBF16, DType::kI64}) {
    const Tensor x = RandomOf(from, {300}, 21, 300.0);
    for (DType to : AllDTypesForTest()) {
      if (to == from) continue;
      SCOPED_TRACE(StrCat(DTypeName(from), " -> ", DTypeName(to)));
      ExpectSameBytes(CastWithBody(x, to), Run1("cast", {x}, {to, x.shape()}));
    }
  }
}

}  // namespace testing
}  // namespace distrt

// The CUDA cumsum body (portable/cumsum.h), run on the host by HostFor,
// against the host kernel: every axis (negative too), exclusive and
// reverse, f32 f64 bf16 f16 i64 i32, NaN and infinities, integer
// wrap-around, a scalar, empty tensors, and the result written over its
// input (the CUDA kernel's in-place case). Byte-exact: the body adds in
// the host's order.
#include <gtest/gtest.h>

#include "portable/cumsum.h"
#include "portable/host_launch.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

// y = cumsum(x) through the body; in place when `in_place`.
Tensor CumSumWithBody(const Tensor& x, int64_t axis, bool exclusive, bool reverse,
                      bool in_place = false) {
  const int64_t rank = x.rank();
  int64_t outer = 1, dim = 1, inner = 1;
  if (rank > 0) {
    if (axis < 0) axis += rank;
    dim = x.dim(static_cast<int>(axis));
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) outer *= x.dim(static_cast<int>(d));
      if (d > axis) inner *= x.dim(static_cast<int>(d));
    }
  }
  Tensor y = Zeros(x.dtype(), x.shape());
  if (in_place && x.byte_size() > 0) std::memcpy(y.raw(), x.raw(), x.byte_size());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* src = in_place ? y.data<T>() : x.data<T>();
    portable::HostFor(outer * inner,
                      portable::CumSumBody<T>{src, y.data<T>(), dim, inner, exclusive, reverse});
  };
  ForNumericHost(x.dtype(), "cumsum", run);
  return y;
}

Tensor HostCumSum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  return Run1("cumsum", {x}, x.type(),
              {{"axis", AttrInt(axis)}, {"exclusive", AttrInt(exclusive)},
               {"reverse", AttrInt(reverse)}});
}

TEST(PortableCumSum, EveryAxisAndModeMatchesHostKernel) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI64,
                   DType::kI32}) {
    const Tensor x = RandomOf(dt, {4, 5, 3}, 11);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      for (bool exclusive : {false, true}) {
        for (bool reverse : {false, true}) {
          SCOPED_TRACE(StrCat(DTypeName(dt), " axis ", axis, " exclusive ", exclusive,
                              " reverse ", reverse));
          const Tensor want = HostCumSum(x, axis, exclusive, reverse);
          ExpectSameBytes(CumSumWithBody(x, axis, exclusive, reverse), want);
          ExpectSameBytes(CumSumWithBody(x, axis, exclusive, reverse, /*in_place=*/true), want);
        }
      }
    }
  }
}

TEST(PortableCumSum, NanInfinityAndWrapAroundMatchHostKernel) {
  const Tensor f = F32({2, 4}, {1.0f, NAN, 2.0f, 3.0f, INFINITY, 1.0f, -INFINITY, 5.0f});
  const int32_t big = std::numeric_limits<int32_t>::max();
  const Tensor i = I32({1, 4}, {big, 1, big, -5});
  const Tensor l = I64({3}, {std::numeric_limits<int64_t>::max(), 1, 1});
  for (bool reverse : {false, true}) {
    for (bool exclusive : {false, true}) {
      SCOPED_TRACE(StrCat("exclusive ", exclusive, " reverse ", reverse));
      ExpectSameBytes(CumSumWithBody(f, 1, exclusive, reverse), HostCumSum(f, 1, exclusive, reverse));
      ExpectSameBytes(CumSumWithBody(i, -1, exclusive, reverse),
                      HostCumSum(i, -1, exclusive, reverse));
      ExpectSameBytes(CumSumWithBody(l, 0, exclusive, reverse), HostCumSum(l, 0, exclusive, reverse));
    }
  }
  // Independently: the i32 line wraps past the maximum.
  const Tensor y = CumSumWithBody(i, 1, false, false);
  EXPECT_EQ(y.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
}

TEST(PortableCumSum, ScalarAndEmptyMatchHostKernel) {
  const Tensor s = F32({}, {2.5f});
  ExpectSameBytes(CumSumWithBody(s, 0, false, false), HostCumSum(s, 0, false, false));
  ExpectSameBytes(CumSumWithBody(s, 0, true, false), HostCumSum(s, 0, true, false));
  for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}}) {
    const Tensor e = Zeros(DType::kF32, shape);
    for (int64_t axis : {0, 1}) {
      ExpectSameBytes(CumSumWithBody(e, axis, false, true), HostCumSum(e, axis, false, true));
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// The CUDA comparison / logic / where bodies (portable/logic.h), run on the
// host by HostFor, against the host kernels: broadcasting, NaN, integer and
// bool operands, empty tensors. bf16/f16 comparisons (no host kernel) are
// checked against the host's f32 comparison of the same values.
#include <gtest/gtest.h>

#include "portable/host_launch.h"
#include "portable/logic.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::BroadcastMap;
using portable::CompareBody;
using portable::CompareOp;
using portable::HostFor;

const std::pair<const char*, CompareOp> kCompareOps[] = {
    {"equal", CompareOp::kEqual},
    {"less", CompareOp::kLess},
    {"less_equal", CompareOp::kLessEqual},
    {"greater", CompareOp::kGreater},
    {"greater_equal", CompareOp::kGreaterEqual}};

BroadcastMap MapOf(const std::vector<Shape>& ins, const Shape& out) {
  BroadcastMap map;
  EXPECT_TRUE(portable::MakeBroadcastMap(ins, out, &map));
  return map;
}

template <typename T>
Tensor CompareWithBody(CompareOp op, const Tensor& a, const Tensor& b, const Shape& out) {
  Tensor y = Zeros(DType::kBool, out);
  HostFor(y.num_elements(), CompareBody<T>{op, a.data<T>(), b.data<T>(), y.data<uint8_t>(),
                                           MapOf({a.shape(), b.shape()}, out)});
  return y;
}

// Operands with ties (small integers) so equal and the *_equal ops see both
// outcomes; NaN in float ones.
template <typename T>
void CheckCompare(DType dtype) {
  SCOPED_TRACE(DTypeName(dtype));
  const Shape as = {3, 1, 5}, bs = {4, 1}, out = {3, 4, 5};
  Tensor a = RandomOf(dtype, as, 1, 2.0), b = RandomOf(dtype, bs, 2, 2.0);
  if constexpr (std::is_floating_point<T>::value) {
    for (int64_t i = 0; i < a.num_elements(); ++i) a.data<T>()[i] = std::round(a.data<T>()[i]);
    for (int64_t i = 0; i < b.num_elements(); ++i) b.data<T>()[i] = std::round(b.data<T>()[i]);
    a.data<T>()[3] = NAN;
    b.data<T>()[1] = NAN;
  } else if (dtype != DType::kBool) {
    for (int64_t i = 0; i < a.num_elements(); ++i) a.data<T>()[i] %= 3;
    for (int64_t i = 0; i < b.num_elements(); ++i) b.data<T>()[i] %= 3;
  }
  for (const auto& [name, op] : kCompareOps) {
    SCOPED_TRACE(name);
    ExpectSameBytes(CompareWithBody<T>(op, a, b, out), Run1(name, {a, b}, {DType::kBool, out}));
    // Same shapes: the identity map.
    ExpectSameBytes(CompareWithBody<T>(op, a, a, as), Run1(name, {a, a}, {DType::kBool, as}));
  }
}

TEST(PortableLogic, CompareBodiesMatchHostKernels) {
  CheckCompare<float>(DType::kF32);
  CheckCompare<double>(DType::kF64);
  CheckCompare<int64_t>(DType::kI64);
  CheckCompare<int32_t>(DType::kI32);
  CheckCompare<uint8_t>(DType::kBool);
  CheckCompare<uint8_t>(DType::kU8);
}

// 16-bit floats compare their exact f32 values: the host's f32 comparison
// of the widened operands.
TEST(PortableLogic, HalfCompareBodiesCompareF32Values) {
  const Shape as = {2, 6}, bs = {6}, out = {2, 6};
  std::vector<float> av = {1, 2, 3, NAN, -0.0f, 65504, 1.5f, 0.1f, -2, 7, 0, 3};
  std::vector<float> bv = {1, 2.5f, 2, NAN, 0, 65504};
  Tensor ab = Zeros(DType::kBF16, as), bb = Zeros(DType::kBF16, bs);
  Tensor ah = Zeros(DType::kF16, as), bh = Zeros(DType::kF16, bs);
  Tensor af = Zeros(DType::kF32, as), bhf = Zeros(DType::kF32, bs), abf = Zeros(DType::kF32, as),
         bbf = Zeros(DType::kF32, bs);
  for (size_t i = 0; i < av.size(); ++i) {
    ab.data<bf16_t>()[i].bits = FloatToBF16(av[i]);
    ah.data<f16_t>()[i].bits = FloatToHalf(av[i]);
    abf.data<float>()[i] = BF16ToFloat(ab.data<bf16_t>()[i].bits);
    af.data<float>()[i] = HalfToFloat(ah.data<f16_t>()[i].bits);
  }
  for (size_t i = 0; i < bv.size(); ++i) {
    bb.data<bf16_t>()[i].bits = FloatToBF16(bv[i]);
    bh.data<f16_t>()[i].bits = FloatToHalf(bv[i]);
    bbf.data<float>()[i] = BF16ToFloat(bb.data<bf16_t>()[i].bits);
    bhf.data<float>()[i] = HalfToFloat(bh.data<f16_t>()[i].bits);
  }
  for (const auto& [name, op] : kCompareOps) {
    SCOPED_TRACE(name);
    ExpectSameBytes(CompareWithBody<bf16_t>(op, ab, bb, out),
                    Run1(name, {abf, bbf}, {DType::kBool, out}));
    ExpectSameBytes(CompareWithBody<f16_t>(op, ah, bh, out),
                    Run1(name, {af, bhf}, {DType::kBool, out}));
  }
}

TEST(PortableLogic, LogicAndNotBodiesMatchHostKernels) {
  const Shape as = {2, 1, 3}, bs = {4, 1}, out = {2, 4, 3};
  Tensor a = RandomOf(DType::kBool, as, 3), b = RandomOf(DType::kBool, bs, 4);
  const std::pair<const char*, portable::LogicOp> ops[] = {
      {"and", portable::LogicOp::kAnd}, {"or", portable::LogicOp::kOr},
      {"xor", portable::LogicOp::kXor}};
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    Tensor y = Zeros(DType::kBool, out);
    HostFor(y.num_elements(), portable::LogicBody{op, a.data<uint8_t>(), b.data<uint8_t>(),
                                                  y.data<uint8_t>(), MapOf({as, bs}, out)});
    ExpectSameBytes(y, Run1(name, {a, b}, {DType::kBool, out}));
  }
  Tensor y = Zeros(DType::kBool, as);
  HostFor(y.num_elements(), portable::NotBody{a.data<uint8_t>(), y.data<uint8_t>()});
  ExpectSameBytes(y, Run1("not", {a}, {DType::kBool, as}));
}

// Elements move as words of their size: one body per size serves f32 and
// i32, i64 and f64, bf16 and f16, bool and u8. Three-way broadcasting.
TEST(PortableLogic, WhereBodyMatchesHostKernel) {
  const Shape cs = {3, 1, 1}, as = {1, 4, 5}, bs = {5}, out = {3, 4, 5};
  Tensor c = RandomOf(DType::kBool, cs, 5);
  for (DType dt : AllDTypesForTest()) {
    SCOPED_TRACE(DTypeName(dt));
    Tensor a = RandomOf(dt, as, 6), b = RandomOf(dt, bs, 7);
    Tensor y = Zeros(dt, out);
    const BroadcastMap map = MapOf({cs, as, bs}, out);
    ForCopyUnitHost(DTypeSize(dt), [&](auto tag) {
      using U = decltype(tag);
      HostFor(y.num_elements(),
              portable::WhereBody<U>{c.data<uint8_t>(), static_cast<const U*>(a.raw()),
                                     static_cast<const U*>(b.raw()), static_cast<U*>(y.raw()),
                                     map});
    });
    ExpectSameBytes(y, Run1("where", {c, a, b}, {dt, out}));
  }
}

// The four-at-a-time where (an attention mask over the last two dims, a
// scalar branch) against the host kernel, every element size.
TEST(PortableLogic, WherePackBodyMatchesHostKernel) {
  const Shape cs = {6, 8}, as = {3, 6, 8}, bs = {}, out = {3, 6, 8};
  Tensor c = RandomOf(DType::kBool, cs, 15);
  for (DType dt : AllDTypesForTest()) {
    SCOPED_TRACE(DTypeName(dt));
    Tensor a = RandomOf(dt, as, 16), b = RandomOf(dt, bs, 17);
    Tensor y = Zeros(dt, out);
    const BroadcastMap map = MapOf({cs, as, bs}, out);
    ASSERT_TRUE(portable::Packable(map));
    const int64_t n = y.num_elements();
    ForCopyUnitHost(DTypeSize(dt), [&](auto tag) {
      using U = decltype(tag);
      HostFor((n + portable::kPack - 1) / portable::kPack,
              portable::WherePackBody<U>{c.data<uint8_t>(), static_cast<const U*>(a.raw()),
                                         static_cast<const U*>(b.raw()),
                                         static_cast<U*>(y.raw()), map, n});
    });
    ExpectSameBytes(y, Run1("where", {c, a, b}, {dt, out}));
  }
  // A mask whose last dim is not a multiple of 4 would straddle packs.
  EXPECT_FALSE(portable::Packable(MapOf({{6, 7}, {3, 6, 7}, {}}, {3, 6, 7})));
}

TEST(PortableLogic, EmptyShapesMapToNothing) {
  BroadcastMap map;
  ASSERT_TRUE(portable::MakeBroadcastMap({{0, 3}, {3}}, {0, 3}, &map));
  Tensor a = Zeros(DType::kF32, {0, 3}), b = RandomOf(DType::kF32, {3}, 8);
  Tensor y = Zeros(DType::kBool, {0, 3});
  HostFor(0, CompareBody<float>{CompareOp::kLess, a.data<float>(), b.data<float>(),
                                y.data<uint8_t>(), map});
  ExpectSameBytes(y, Run1("less", {a, b}, {DType::kBool, {0, 3}}));
}

}  // namespace
}  // namespace testing
}  // namespace distrt

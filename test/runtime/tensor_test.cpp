#include "distrt/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "distrt/dtype.h"

namespace distrt {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kF64), 8u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kI8), 1u);
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeSize(DType::kUnspecified), 0u);
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(DTypeName(static_cast<DType>(99)), "invalid(99)");
  DType d;
  ASSERT_TRUE(ParseDType("i32", &d).ok());
  EXPECT_EQ(d, DType::kI32);
  Status s = ParseDType("float128", &d);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("float128"), std::string::npos);
  EXPECT_TRUE(IsFloat(DType::kBF16));
  EXPECT_FALSE(IsFloat(DType::kI64));
  EXPECT_TRUE(IsInteger(DType::kU8));
  EXPECT_FALSE(IsInteger(DType::kBool));
}

TEST(DType, HalfRoundTripsExactValues) {
  // Known IEEE half encodings.
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);            // overflow -> inf
  EXPECT_EQ(FloatToHalf(5.9604645e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x3555), 0.33325195f);
  EXPECT_EQ(HalfToFloat(0x0001), 5.9604645e-08f);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  // Round to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);
  for (uint32_t h = 0; h < 0x7c00; h += 7) {  // every 7th finite positive half
    EXPECT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h);
  }
}

TEST(DType, BFloat16) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(FloatToBF16(3.14159265f), 0x4049);
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(NAN))));
}

TEST(Tensor, NumElementsAndShapes) {
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 3, 4}), 24);
  EXPECT_EQ(NumElements({2, 0}), 0);
  EXPECT_EQ(NumElements({-1, 2}), -1);
  EXPECT_EQ(NumElements({1LL << 40, 1LL << 40}), -1);  // overflow
  EXPECT_EQ(ShapeToString({2, 3}), "[2, 3]");
  EXPECT_EQ((TensorType{DType::kF32, {4}}).ToString(), "f32[4]");
}

TEST(Tensor, AllocateZeroedAndAligned) {
  Tensor t;
  ASSERT_TRUE(Tensor::Allocate(DType::kF32, {3, 5}, &t).ok());
  EXPECT_EQ(t.byte_size(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  Status bad = Tensor::Allocate(DType::kF32, {-2}, &t);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Tensor::Allocate(DType::kUnspecified, {2}, &t).ok());
}

TEST(Tensor, FromVectorChecksCount) {
  auto ok = Tensor::FromVector<int64_t>({2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(ok->ToVector<float>().empty());  // wrong type
  auto bad = Tensor::FromVector<float>({3}, {1, 2});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("needs 3 elements, got 2"), std::string::npos);
}

TEST(Tensor, ReshapeSharesCloneCopies) {
  auto t = *Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r;
  ASSERT_TRUE(t.Reshaped({3, 2}, &r).ok());
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_FALSE(t.Reshaped({4}, &r).ok());
  Tensor c = t.Clone();
  EXPECT_NE(c.raw(), t.raw());
  EXPECT_TRUE(c.Equals(t));
  c.data<float>()[0] = 9;
  EXPECT_FALSE(c.Equals(t));
  EXPECT_EQ(t.data<float>()[0], 1.0f);
}

TEST(Tensor, MemoryTrackerCountsLiveBuffers) {
  auto tracker = std::make_shared<MemoryTracker>();
  {
    Tensor a, b;
    ASSERT_TRUE(Tensor::Allocate(DType::kF32, {100}, &a, tracker).ok());
    ASSERT_TRUE(Tensor::Allocate(DType::kF64, {10}, &b, tracker).ok());
    EXPECT_EQ(tracker->current(), 480);
    a = Tensor();
    EXPECT_EQ(tracker->current(), 80);
  }
  EXPECT_EQ(tracker->current(), 0);
  EXPECT_EQ(tracker->peak(), 480);
  tracker->ResetPeak();
  EXPECT_EQ(tracker->peak(), 0);
}

TEST(Tensor, DebugString) {
  auto t = *Tensor::FromVector<int32_t>({3}, {7, 8, 9});
  EXPECT_EQ(t.DebugString(), "i32[3] {7, 8, 9}");
  EXPECT_EQ(t.DebugString(2), "i32[3] {7, 8, ...}");
}

}  // namespace
}  // namespace distrt

// The CUDA arithmetic bodies (portable/arith.h), run on the host by HostFor,
// against the host kernels: integer add/sub/mul/div/max/min/mod with
// wrap-around and INT_MIN / -1, neg/abs of INT_MIN, division by zero
// (reported, 0 written, where the host returns an error), float mod in
// both sign conventions, and clip with and without bounds, NaN and
// infinities. bf16/f16 mod and clip (no host kernel) are checked against
// the host's f32 result rounded once.
#include <gtest/gtest.h>

#include <limits>

#include "portable/arith.h"
#include "portable/host_launch.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::BroadcastMap;
using portable::ErrorSlot;
using portable::HostFor;
using portable::IntBinaryOp;

BroadcastMap MapOf(const std::vector<Shape>& ins, const Shape& out) {
  BroadcastMap map;
  EXPECT_TRUE(portable::MakeBroadcastMap(ins, out, &map));
  return map;
}

// a [4, 6] against b [6]: extremes, -1 and ordinary values on both sides.
template <typename T>
void IntOperands(DType dt, Tensor* a, Tensor* b) {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  *a = RandomOf(dt, {4, 6}, 11);
  *b = RandomOf(dt, {6}, 12);
  const T av[] = {lo, hi, -7, 7, lo, hi};
  for (int i = 0; i < 6; ++i) a->data<T>()[i] = av[i];
  const T bv[] = {-1, 2, 3, -3, 1, hi};
  for (int i = 0; i < 6; ++i) b->data<T>()[i] = bv[i];
}

template <typename T>
void CheckIntBinary(DType dt) {
  SCOPED_TRACE(DTypeName(dt));
  Tensor a, b;
  IntOperands<T>(dt, &a, &b);
  const Shape out = {4, 6};
  const BroadcastMap map = MapOf({a.shape(), b.shape()}, out);
  struct Case {
    const char* name;
    IntBinaryOp op;
    int64_t fmod;
  };
  const Case cases[] = {
      {"add", IntBinaryOp::kAdd, 0}, {"sub", IntBinaryOp::kSub, 0},
      {"mul", IntBinaryOp::kMul, 0}, {"div", IntBinaryOp::kDiv, 0},
      {"max", IntBinaryOp::kMax, 0}, {"min", IntBinaryOp::kMin, 0},
      {"mod", IntBinaryOp::kMod, 0}, {"mod", IntBinaryOp::kFmod, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(c.name, " fmod ", c.fmod));
    Tensor y = Zeros(dt, out);
    ErrorSlot slot{0, 0, 0};
    HostFor(y.num_elements(), portable::IntBinaryBody<T>{c.op, a.data<T>(), b.data<T>(),
                                                         y.data<T>(), map, &slot});
    EXPECT_EQ(slot.code, 0);
    ExpectSameBytes(y, Run1(c.name, {a, b}, {dt, out}, {{"fmod", AttrInt(c.fmod)}}));
  }
  // Division and modulo by zero: the host fails; the body writes 0 there
  // and reports it.
  b.data<T>()[2] = 0;
  for (IntBinaryOp op : {IntBinaryOp::kDiv, IntBinaryOp::kMod}) {
    const bool div = op == IntBinaryOp::kDiv;
    std::vector<Tensor> outs;
    Status st = RunOp(div ? "div" : "mod", {a, b}, {{dt, out}}, {}, &outs);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_HAS(st.message(), div ? "division by zero" : "modulo by zero");
    Tensor y = Zeros(dt, out);
    ErrorSlot slot{0, 0, 0};
    HostFor(y.num_elements(), portable::IntBinaryBody<T>{op, a.data<T>(), b.data<T>(),
                                                         y.data<T>(), map, &slot});
    EXPECT_EQ(slot.code, static_cast<int64_t>(div ? portable::DeviceErrorCode::kIntDivByZero
                                                  : portable::DeviceErrorCode::kIntModByZero));
    for (int r = 0; r < 4; ++r) EXPECT_EQ(y.data<T>()[r * 6 + 2], 0);
  }
}

TEST(PortableArith, IntBinaryBodiesMatchHostKernels) {
  CheckIntBinary<int64_t>(DType::kI64);
  CheckIntBinary<int32_t>(DType::kI32);
}

template <typename T>
void CheckIntUnary(DType dt) {
  SCOPED_TRACE(DTypeName(dt));
  Tensor x = RandomOf(dt, {20}, 13);
  x.data<T>()[0] = std::numeric_limits<T>::min();  // stays INT_MIN under neg and abs
  x.data<T>()[1] = std::numeric_limits<T>::max();
  x.data<T>()[2] = 0;
  for (auto [name, op] : {std::pair<const char*, portable::IntUnaryOp>{"neg", portable::IntUnaryOp::kNeg},
                          {"abs", portable::IntUnaryOp::kAbs}}) {
    SCOPED_TRACE(name);
    Tensor y = Zeros(dt, {20});
    HostFor(20, portable::IntUnaryBody<T>{op, x.data<T>(), y.data<T>()});
    ExpectSameBytes(y, Run1(name, {x}, {dt, {20}}));
  }
}

TEST(PortableArith, IntUnaryBodiesMatchHostKernels) {
  CheckIntUnary<int64_t>(DType::kI64);
  CheckIntUnary<int32_t>(DType::kI32);
}

template <typename T>
void CheckFloatMod(DType dt) {
  SCOPED_TRACE(DTypeName(dt));
  const Shape as = {3, 8}, bs = {8}, out = {3, 8};
  Tensor a = RandomOf(dt, as, 14, 10.0), b = RandomOf(dt, bs, 15, 3.0);
  a.data<T>()[0] = NAN;
  a.data<T>()[1] = INFINITY;
  a.data<T>()[2] = -6;  // exact multiples: 0 either way
  b.data<T>()[2] = 3;
  b.data<T>()[3] = -2.5;
  for (int64_t fmod : {0, 1}) {
    SCOPED_TRACE(StrCat("fmod ", fmod));
    Tensor y = Zeros(dt, out);
    HostFor(y.num_elements(), portable::FloatModBody<T>{fmod != 0, a.data<T>(), b.data<T>(),
                                                        y.data<T>(), MapOf({as, bs}, out)});
    ExpectSameBytes(y, Run1("mod", {a, b}, {dt, out}, {{"fmod", AttrInt(fmod)}}));
  }
}

TEST(PortableArith, FloatModBodyMatchesHostKernel) {
  CheckFloatMod<float>(DType::kF32);
  CheckFloatMod<double>(DType::kF64);
}

// Loads a 16-bit tensor's values as f32.
Tensor Widened(const Tensor& t) {
  Tensor f = Zeros(DType::kF32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const uint16_t bits = static_cast<const uint16_t*>(t.raw())[i];
    f.data<float>()[i] = t.dtype() == DType::kBF16 ? BF16ToFloat(bits) : HalfToFloat(bits);
  }
  return f;
}

// The f32 tensor rounded to `dt` (bf16 or f16).
Tensor Narrowed(const Tensor& f, DType dt) {
  Tensor t = Zeros(dt, f.shape());
  for (int64_t i = 0; i < f.num_elements(); ++i) {
    const float v = f.data<float>()[i];
    static_cast<uint16_t*>(t.raw())[i] = dt == DType::kBF16 ? FloatToBF16(v) : FloatToHalf(v);
  }
  return t;
}

TEST(PortableArith, HalfModAndClipRoundTheF32Result) {
  const Shape as = {3, 8}, bs = {8}, out = {3, 8};
  for (DType dt : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    Tensor a = RandomOf(dt, as, 16, 10.0), b = RandomOf(dt, bs, 17, 3.0);
    for (int64_t fmod : {0, 1}) {
      Tensor y = Zeros(dt, out);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        HostFor(y.num_elements(),
                portable::FloatModBody<T>{fmod != 0, a.data<T>(), b.data<T>(), y.data<T>(),
                                          MapOf({as, bs}, out)});
      };
      if (dt == DType::kBF16) run(bf16_t{}); else run(f16_t{});
      const Tensor want =
          Run1("mod", {Widened(a), Widened(b)}, {DType::kF32, out}, {{"fmod", AttrInt(fmod)}});
      ExpectSameBytes(y, Narrowed(want, dt));
    }
    // clip: bounds as f32; no min leaves the type's lowest finite value.
    Tensor x = RandomOf(dt, {12}, 18, 5.0);
    static_cast<uint16_t*>(x.raw())[0] = dt == DType::kBF16 ? 0xff80 : 0xfc00;  // -inf
    static_cast<uint16_t*>(x.raw())[1] = dt == DType::kBF16 ? 0x7fc0 : 0x7e00;  // NaN
    Tensor y = Zeros(dt, {12});
    auto clip = [&](auto tag) {
      using T = decltype(tag);
      portable::ClipBody<T> body{x.data<T>(), y.data<T>(), 0, 0};
      portable::ClipBounds<T>(false, 0, true, 1.25, &body.lo, &body.hi);
      HostFor(12, body);
    };
    if (dt == DType::kBF16) clip(bf16_t{}); else clip(f16_t{});
    const float lowest = dt == DType::kBF16 ? BF16ToFloat(0xff7f) : -65504.0f;
    const Tensor want = Run1("clip", {Widened(x)}, {DType::kF32, {12}},
                             {{"min", AttrFloat(lowest)}, {"max", AttrFloat(1.25)}});
    ExpectSameBytes(y, Narrowed(want, dt));
  }
}

template <typename T>
void CheckClip(DType dt) {
  SCOPED_TRACE(DTypeName(dt));
  Tensor x = RandomOf(dt, {16}, 19, 5.0);
  if constexpr (std::is_floating_point<T>::value) {
    x.data<T>()[0] = NAN;
    x.data<T>()[1] = -INFINITY;  // no min: the type's lowest
    x.data<T>()[2] = INFINITY;
  } else {
    x.data<T>()[0] = std::numeric_limits<T>::min();
    x.data<T>()[1] = std::numeric_limits<T>::max();
  }
  struct Case {
    bool has_min;
    double min;
    bool has_max;
    double max;
  };
  const Case cases[] = {{true, -1.5, true, 2.5},  {false, 0, true, 0.5},  {true, -0.5, false, 0},
                        {false, 0, false, 0},     {true, -1e20, true, 1e20}, {true, 3, true, 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(c.has_min, " ", c.min, " ", c.has_max, " ", c.max));
    Tensor y = Zeros(dt, {16});
    portable::ClipBody<T> body{x.data<T>(), y.data<T>(), 0, 0};
    portable::ClipBounds<T>(c.has_min, c.min, c.has_max, c.max, &body.lo, &body.hi);
    HostFor(16, body);
    Tensor want;
    if (c.has_min && c.has_max) {
      want = Run1("clip", {x}, {dt, {16}}, {{"min", AttrFloat(c.min)}, {"max", AttrFloat(c.max)}});
    } else if (c.has_min) {
      want = Run1("clip", {x}, {dt, {16}}, {{"min", AttrFloat(c.min)}});
    } else if (c.has_max) {
      want = Run1("clip", {x}, {dt, {16}}, {{"max", AttrFloat(c.max)}});
    } else {
      want = Run1("clip", {x}, {dt, {16}});
    }
    ExpectSameBytes(y, want);
  }
}

TEST(PortableArith, ClipBodyMatchesHostKernel) {
  CheckClip<float>(DType::kF32);
  CheckClip<double>(DType::kF64);
  CheckClip<int64_t>(DType::kI64);
  CheckClip<int32_t>(DType::kI32);
}

}  // namespace
}  // namespace testing
}  // namespace distrt

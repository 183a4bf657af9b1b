// Elementwise kernels: broadcasting, integer semantics, unary math, cast.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

// Reference broadcasting: value of `t` (shape s) at output index `idx` of `out`.
float At(const std::vector<float>& v, const Shape& s, const Shape& out, int64_t flat) {
  std::vector<int64_t> idx(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    idx[d] = flat % out[d];
    flat /= out[d];
  }
  int64_t off = 0;
  size_t lead = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t i = s[d] == 1 ? 0 : idx[d + lead];
    off = off * s[d] + i;
  }
  return v[static_cast<size_t>(off)];
}

std::vector<float> Seq(int n, float scale, float offset) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(i * scale + offset);
  return v;
}

struct BroadcastCase {
  Shape a, b, out;
};

TEST(Binary, BroadcastingMatchesReference) {
  const std::vector<BroadcastCase> cases = {
      {{2, 3}, {2, 3}, {2, 3}},          {{2, 3}, {3}, {2, 3}}, {{2, 1}, {1, 3}, {2, 3}},
      {{4, 1, 5}, {3, 1}, {4, 3, 5}},    {{}, {2, 2}, {2, 2}},  {{2, 2}, {}, {2, 2}},
      {{3, 1, 2}, {3, 4, 2}, {3, 4, 2}}, {{1}, {1, 1}, {1, 1}}, {{2, 3, 4}, {1, 3, 1}, {2, 3, 4}},
      {{5, 1}, {5, 6}, {5, 6}},
  };
  for (const auto& c : cases) {
    std::vector<float> av = Seq(static_cast<int>(NumElements(c.a)), 1.5f, -2.0f);
    std::vector<float> bv = Seq(static_cast<int>(NumElements(c.b)), -0.5f, 3.0f);
    Tensor a = F32(c.a, av), b = F32(c.b, bv);
    const int64_t n = NumElements(c.out);
    struct Op {
      const char* name;
      float (*f)(float, float);
    };
    const Op ops[] = {{"add", [](float x, float y) { return x + y; }},
                      {"sub", [](float x, float y) { return x - y; }},
                      {"mul", [](float x, float y) { return x * y; }},
                      {"div", [](float x, float y) { return x / y; }},
                      {"max", [](float x, float y) { return x > y ? x : y; }},
                      {"min", [](float x, float y) { return x < y ? x : y; }}};
    for (const Op& op : ops) {
      std::vector<float> want;
      for (int64_t i = 0; i < n; ++i)
        want.push_back(op.f(At(av, c.a, c.out, i), At(bv, c.b, c.out, i)));
      SCOPED_TRACE(StrCat(op.name, " ", ShapeToString(c.a), " ", ShapeToString(c.b)));
      ExpectF32(Run1(op.name, {a, b}, {DType::kF32, c.out}), c.out, want);
    }
  }
}

TEST(Binary, IncompatibleShapesFail) {
  std::vector<Tensor> out;
  Status st = RunOp("add", {F32({2, 3}, Seq(6, 1, 0)), F32({2}, {1, 2})}, {{DType::kF32, {2, 3}}},
                    {}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("do not broadcast"), std::string::npos) << st.message();
}

TEST(Binary, IntegerDivTruncatesTowardZero) {
  Tensor a = I64({6}, {7, -7, 7, -7, std::numeric_limits<int64_t>::min(), 0});
  Tensor b = I64({6}, {2, 2, -2, -2, -1, 5});
  Tensor y = Run1("div", {a, b}, {DType::kI64, {6}});
  EXPECT_EQ(Vec<int64_t>(y),
            (std::vector<int64_t>{3, -3, -3, 3, std::numeric_limits<int64_t>::min(), 0}));
  Tensor a32 = I32({2}, {9, -9});
  EXPECT_EQ(Vec<int32_t>(Run1("div", {a32, I32({}, {4})}, {DType::kI32, {2}})),
            (std::vector<int32_t>{2, -2}));
}

TEST(Binary, IntegerDivisionByZeroIsAnError) {
  std::vector<Tensor> out;
  Status st = RunOp("div", {I32({2}, {1, 2}), I32({2}, {1, 0})}, {{DType::kI32, {2}}}, {}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("division by zero"), std::string::npos);
  EXPECT_NE(st.message().find("instruction 0 ('div')"), std::string::npos);
}

TEST(Binary, ModSignFollowsDivisorUnlessFmod) {
  Tensor a = I64({4}, {-7, 7, -7, 7}), b = I64({4}, {3, -3, -3, 3});
  EXPECT_EQ(Vec<int64_t>(Run1("mod", {a, b}, {DType::kI64, {4}})),
            (std::vector<int64_t>{2, -2, -1, 1}));
  EXPECT_EQ(Vec<int64_t>(Run1("mod", {a, b}, {DType::kI64, {4}}, {{"fmod", AttrInt(1)}})),
            (std::vector<int64_t>{-1, 1, -1, 1}));
  Tensor fa = F32({3}, {-7.5f, 7.5f, 5.0f}), fb = F32({3}, {2.0f, -2.0f, 2.5f});
  ExpectF32(Run1("mod", {fa, fb}, {DType::kF32, {3}}, {{"fmod", AttrInt(1)}}), {3},
            {-1.5f, 1.5f, 0.0f});
  ExpectF32(Run1("mod", {fa, fb}, {DType::kF32, {3}}), {3}, {0.5f, -0.5f, 0.0f});
}

TEST(Binary, IntegerArithmeticWraps) {
  Tensor a =
      I32({3}, {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 65536});
  Tensor b = I32({3}, {1, 1, 65536});
  EXPECT_EQ(Vec<int32_t>(Run1("add", {a, b}, {DType::kI32, {3}})),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::min() + 1, 131072}));
  EXPECT_EQ(Vec<int32_t>(Run1("mul", {a, b}, {DType::kI32, {3}}))[2], 0);  // 2^32 wraps to 0
  EXPECT_EQ(Vec<int32_t>(Run1("sub", {b, a}, {DType::kI32, {3}}))[1],
            std::numeric_limits<int32_t>::min() + 1);
}

TEST(Binary, UnsignedWideTypesCompareAndWrapUnsigned) {
  // Values above the signed range: a signed reading would get these wrong.
  const uint64_t big = 0xF000000000000000ull;
  Tensor a = Make<uint64_t>({3}, {big, 5, 0});
  Tensor b = Make<uint64_t>({3}, {1, 7, 1});
  EXPECT_EQ(Vec<uint64_t>(Run1("max", {a, b}, {DType::kU64, {3}})),
            (std::vector<uint64_t>{big, 7, 1}));
  EXPECT_EQ(Vec<uint64_t>(Run1("sub", {b, a}, {DType::kU64, {3}}))[2], 1u);
  EXPECT_EQ(Vec<uint64_t>(Run1("sub", {a, b}, {DType::kU64, {3}}))[2],
            std::numeric_limits<uint64_t>::max());
  Tensor gt = Run1("greater", {a, b}, {DType::kBool, {3}});
  EXPECT_EQ(std::vector<uint8_t>(gt.data<uint8_t>(), gt.data<uint8_t>() + 3),
            (std::vector<uint8_t>{1, 0, 0}));
  Tensor c = Make<uint32_t>({2}, {4000000000u, 9});
  Tensor d = Make<uint32_t>({2}, {7, 4});
  EXPECT_EQ(Vec<uint32_t>(Run1("mod", {c, d}, {DType::kU32, {2}})),
            (std::vector<uint32_t>{4000000000u % 7, 1}));
  EXPECT_EQ(Vec<uint16_t>(Run1("min", {Make<uint16_t>({2}, {65535, 3}),
                                       Make<uint16_t>({2}, {40000, 4})},
                               {DType::kU16, {2}})),
            (std::vector<uint16_t>{40000, 3}));
}

TEST(Binary, ShiftsAreLogicalAndZeroPastTheWidth) {
  Tensor x = Make<uint8_t>({4}, {0x81, 0x81, 1, 200});
  Tensor n = Make<uint8_t>({4}, {1, 7, 8, 0});
  EXPECT_EQ(Vec<uint8_t>(Run1("shift_left", {x, n}, {DType::kU8, {4}})),
            (std::vector<uint8_t>{0x02, 0x80, 0, 200}));
  EXPECT_EQ(Vec<uint8_t>(Run1("shift_right", {x, n}, {DType::kU8, {4}})),
            (std::vector<uint8_t>{0x40, 1, 0, 200}));
  Tensor w = Make<uint64_t>({2}, {1, 0x8000000000000000ull});
  Tensor m = Make<uint64_t>({1}, {63});
  EXPECT_EQ(Vec<uint64_t>(Run1("shift_left", {w, m}, {DType::kU64, {2}})),
            (std::vector<uint64_t>{0x8000000000000000ull, 0}));
  EXPECT_EQ(Vec<uint64_t>(Run1("shift_right", {w, m}, {DType::kU64, {2}})),
            (std::vector<uint64_t>{0, 1}));
  std::vector<Tensor> out;
  Status st = RunOp("shift_left", {I64({1}, {1}), I64({1}, {1})}, {{DType::kI64, {1}}}, {}, &out);
  EXPECT_NE(st.message().find("needs unsigned integer operands, got i64"), std::string::npos)
      << st.message();
}

TEST(Binary, PowFloatIntAndMixed) {
  ExpectF32(Run1("pow", {F32({3}, {2, 9, -2}), F32({3}, {3, 0.5f, 2})}, {DType::kF32, {3}}), {3},
            {8, 3, 4});
  EXPECT_EQ(Vec<int64_t>(Run1("pow", {I64({4}, {3, -2, 1, 5}), I64({4}, {4, 3, -3, 0})},
                              {DType::kI64, {4}})),
            (std::vector<int64_t>{81, -8, 1, 1}));
  // f32 base, i64 exponent (ONNX Pow allows a different exponent type).
  ExpectF32(Run1("pow", {F32({2}, {1.5f, -3}), I64({}, {2})}, {DType::kF32, {2}}), {2}, {2.25f, 9});
}

// A constant exponent of 2 or 1 (RMSNorm's square and its gradient) skips
// libm: the same values as pow, signed zeros, infinities and NaN included.
TEST(Binary, PowByConstantTwoOrOneIsPow) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-0.0f, 0.0f, -3.5f, 1e-30f, 1e30f, -inf, inf, nan, 0.1f};
  for (float e : {2.0f, 1.0f}) {
    std::vector<float> want;
    for (float v : x) want.push_back(std::pow(v, e));
    SCOPED_TRACE(e);
    Tensor out = Run1("pow", {F32({9}, x), F32({}, {e})}, {DType::kF32, {9}});
    ExpectF32(out, {9}, want);
    for (int i = 0; i < 2; ++i)  // +0 from -0 squared, -0 kept by x^1
      EXPECT_EQ(std::signbit(out.data<float>()[i]), std::signbit(want[i])) << i;
  }
}

// The vectorised sigmoid at its ends: 0 below exp's range, 1 above, NaN kept.
TEST(Unary, SigmoidAtItsEnds) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-1000.0f, -100.0f, -88.0f, -20.0f, 20.0f, 100.0f, nan};
  std::vector<float> want;
  for (float v : x) want.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-double(v)))));
  ExpectF32(Run1("sigmoid", {F32({7}, x)}, {DType::kF32, {7}}), {7}, want);
}

TEST(Binary, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ExpectF32(Run1("max", {F32({3}, {nan, 1, 2}), F32({3}, {0, nan, 3})}, {DType::kF32, {3}}), {3},
            {nan, nan, 3});
  ExpectF32(Run1("min", {F32({3}, {nan, 1, 2}), F32({3}, {0, nan, 3})}, {DType::kF32, {3}}), {3},
            {nan, nan, 2});
  EXPECT_EQ(Vec<int64_t>(Run1("max", {I64({2}, {-5, 4}), I64({}, {0})}, {DType::kI64, {2}})),
            (std::vector<int64_t>{0, 4}));
}

TEST(Binary, Float64) {
  Tensor y = Run1("add", {F64({2}, {0.1, 1e300}), F64({2}, {0.2, 1e300})}, {DType::kF64, {2}});
  EXPECT_EQ(Vec<double>(y), (std::vector<double>{0.1 + 0.2, 2e300}));
}

TEST(Compare, ResultsAreBoolWithBroadcast) {
  Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6}), b = F32({3}, {2, 2, 7});
  const struct {
    const char* op;
    std::vector<uint8_t> want;
  } cases[] = {{"equal", {0, 1, 0, 0, 0, 0}},
               {"less", {1, 0, 1, 0, 0, 1}},
               {"less_equal", {1, 1, 1, 0, 0, 1}},
               {"greater", {0, 0, 0, 1, 1, 0}},
               {"greater_equal", {0, 1, 0, 1, 1, 0}}};
  for (const auto& c : cases) {
    Tensor y = Run1(c.op, {a, b}, {DType::kBool, {2, 3}});
    ASSERT_EQ(y.dtype(), DType::kBool) << c.op;
    EXPECT_EQ(std::vector<uint8_t>(y.data<uint8_t>(), y.data<uint8_t>() + 6), c.want) << c.op;
  }
  Tensor e = Run1("equal", {I64({3}, {1, -1, 5}), I64({1}, {-1})}, {DType::kBool, {3}});
  EXPECT_EQ(std::vector<uint8_t>(e.data<uint8_t>(), e.data<uint8_t>() + 3),
            (std::vector<uint8_t>{0, 1, 0}));
  // NaN compares false.
  Tensor n = Run1("less", {F32({1}, {NAN}), F32({1}, {1})}, {DType::kBool, {1}});
  EXPECT_EQ(n.data<uint8_t>()[0], 0);
}

TEST(Logic, AndOrXorNot) {
  Tensor a = Bool({4}, {0, 0, 1, 1}), b = Bool({4}, {0, 1, 0, 1});
  auto bytes = [](const Tensor& t) {
    return std::vector<uint8_t>(t.data<uint8_t>(), t.data<uint8_t>() + t.num_elements());
  };
  EXPECT_EQ(bytes(Run1("and", {a, b}, {DType::kBool, {4}})), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(bytes(Run1("or", {a, b}, {DType::kBool, {4}})), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(bytes(Run1("xor", {a, b}, {DType::kBool, {4}})), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(bytes(Run1("not", {a}, {DType::kBool, {4}})), (std::vector<uint8_t>{1, 1, 0, 0}));
  std::vector<Tensor> out;
  EXPECT_FALSE(RunOp("and", {F32({1}, {1}), F32({1}, {1})}, {{DType::kBool, {1}}}, {}, &out).ok());
}

TEST(Where, ThreeWayBroadcast) {
  Tensor c = Bool({2, 1}, {1, 0});
  Tensor a = F32({3}, {1, 2, 3});
  Tensor b = F32({2, 3}, {10, 20, 30, 40, 50, 60});
  ExpectF32(Run1("where", {c, a, b}, {DType::kF32, {2, 3}}), {2, 3}, {1, 2, 3, 40, 50, 60});
  Tensor yi =
      Run1("where", {Bool({3}, {0, 1, 0}), I64({3}, {1, 2, 3}), I64({}, {-1})}, {DType::kI64, {3}});
  EXPECT_EQ(Vec<int64_t>(yi), (std::vector<int64_t>{-1, 2, -1}));
}

TEST(Unary, FloatFunctionsMatchLibm) {
  const std::vector<float> x = {-2.5f, -1.0f, -0.5f, 0.0f, 0.3f, 1.0f, 2.5f, 4.0f};
  const struct {
    const char* op;
    double (*f)(double);
  } cases[] = {
      {"neg", [](double v) { return -v; }},
      {"abs", [](double v) { return std::fabs(v); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"sign", [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }},
      {"reciprocal", [](double v) { return 1.0 / v; }},
  };
  for (const auto& c : cases) {
    std::vector<float> want;
    for (float v : x) want.push_back(static_cast<float>(c.f(v)));
    SCOPED_TRACE(c.op);
    ExpectF32(Run1(c.op, {F32({8}, x)}, {DType::kF32, {8}}), {8}, want);
  }
  const std::vector<float> pos = {0.25f, 1.0f, 2.0f, 100.0f};
  ExpectF32(Run1("log", {F32({4}, pos)}, {DType::kF32, {4}}), {4},
            {std::log(0.25f), 0.0f, std::log(2.0f), std::log(100.0f)});
  ExpectF32(Run1("sqrt", {F32({4}, pos)}, {DType::kF32, {4}}), {4},
            {0.5f, 1.0f, std::sqrt(2.0f), 10.0f});
  // acos and asin inside their domain [-1, 1]: acos(-1) = pi, asin(0.5) = pi/6.
  const std::vector<float> unit = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f};
  const float pi = 3.14159265358979f;
  ExpectF32(Run1("acos", {F32({5}, unit)}, {DType::kF32, {5}}), {5},
            {pi, 2 * pi / 3, pi / 2, pi / 3, 0.0f});
  ExpectF32(Run1("asin", {F32({5}, unit)}, {DType::kF32, {5}}), {5},
            {-pi / 2, -pi / 6, 0.0f, pi / 6, pi / 2});
}

// f32 erf (and gelu) use a polynomial approximation instead of libm: its
// error against double std::erf over a dense sweep, its tails and specials.
TEST(Unary, ErfF32DenseSweep) {
  std::vector<float> x;
  for (int i = -1000000; i <= 1000000; ++i) x.push_back(static_cast<float>(i) * 6e-6f);
  for (float v = 1e-30f; v < 1e-3f; v *= 1.1f) x.push_back(v);
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 3.875f, -3.875f, 9.0f, 1e30f};
  for (float v : specials) x.push_back(v);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y = Vec<float>(Run1("erf", {F32({n}, x)}, {DType::kF32, {n}}));
  double max_abs = 0, max_rel = 0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const double want = std::erf(static_cast<double>(x[i]));
    const double err = std::fabs(y[i] - want);
    max_abs = std::max(max_abs, err);
    if (want != 0) max_rel = std::max(max_rel, err / std::fabs(want));
  }
  EXPECT_LT(max_abs, 2e-7);
  EXPECT_LT(max_rel, 4e-7);  // small arguments keep their relative accuracy
  EXPECT_TRUE(std::signbit(y[static_cast<size_t>(n) - 10]));  // erf(-0) = -0
  EXPECT_EQ(y[static_cast<size_t>(n) - 3], 1.0f);
  EXPECT_EQ(y[static_cast<size_t>(n) - 2], -1.0f);
  EXPECT_TRUE(std::isnan(y.back()));
  // gelu goes through the same erf.
  std::vector<float> g = Vec<float>(Run1("gelu", {F32({n}, x)}, {DType::kF32, {n}}));
  double gelu_err = 0;
  for (int64_t i = 0; i < 2000001; ++i) {
    const double d = x[i];
    const double want = 0.5 * d * (1 + std::erf(d / std::sqrt(2.0)));
    gelu_err = std::max(gelu_err, std::fabs(g[i] - want) / std::max(1.0, std::fabs(want)));
  }
  EXPECT_LT(gelu_err, 4e-7);
  // f64 keeps libm's erf.
  std::vector<double> xd = {-2.0, -0.3, 1e-5, 0.7, 2.5};
  std::vector<double> yd = Vec<double>(Run1("erf", {F64({5}, xd)}, {DType::kF64, {5}}));
  for (size_t i = 0; i < xd.size(); ++i) EXPECT_EQ(yd[i], std::erf(xd[i]));
}

// f32 exp (and softmax) use ExpF32: relative error over the normal range,
// overflow, underflow to subnormals and zero, specials.
TEST(Unary, ExpF32DenseSweep) {
  std::vector<float> x;
  for (int i = -1000000; i <= 1000000; ++i) x.push_back(static_cast<float>(i) * 8.8e-5f);
  const float edges[] = {88.72f, 88.73f, -87.5f, -100.0f, -104.0f, -200.0f};
  for (float v : edges) x.push_back(v);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y = Vec<float>(Run1("exp", {F32({n}, x)}, {DType::kF32, {n}}));
  double max_rel = 0, max_abs_tiny = 0;
  for (int64_t i = 0; i + 3 < n; ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (want > 3.4028234e38) {
      EXPECT_TRUE(std::isinf(y[i])) << x[i];
    } else if (want >= 1.1754944e-38) {
      max_rel = std::max(max_rel, std::fabs(y[i] - want) / want);
    } else {
      max_abs_tiny = std::max(max_abs_tiny, std::fabs(y[i] - want));
    }
  }
  EXPECT_LT(max_rel, 2.4e-7);        // 2 ulp
  EXPECT_LE(max_abs_tiny, 1.5e-45);  // one subnormal step
  EXPECT_EQ(y[static_cast<size_t>(n) - 3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[static_cast<size_t>(n) - 2], 0.0f);
  EXPECT_TRUE(std::isnan(y.back()));
}

TEST(Unary, RoundHalfToEven) {
  ExpectF32(Run1("round", {F32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f})}, {DType::kF32, {6}}),
            {6}, {0, 2, 2, -0.0f, -2, 3});
}

TEST(Unary, IntegerNegAbsReluSign) {
  Tensor x = I64({4}, {-3, 0, 5, std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(Vec<int64_t>(Run1("neg", {x}, {DType::kI64, {4}})),
            (std::vector<int64_t>{3, 0, -5, std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(Vec<int64_t>(Run1("abs", {x}, {DType::kI64, {4}}))[0], 3);
  EXPECT_EQ(Vec<int64_t>(Run1("relu", {x}, {DType::kI64, {4}})),
            (std::vector<int64_t>{0, 0, 5, 0}));
  EXPECT_EQ(Vec<int64_t>(Run1("sign", {x}, {DType::kI64, {4}})),
            (std::vector<int64_t>{-1, 0, 1, -1}));
  std::vector<Tensor> out;
  Status st = RunOp("exp", {I64({1}, {1})}, {{DType::kI64, {1}}}, {}, &out);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("'exp' does not support dtype i64"), std::string::npos);
}

TEST(Unary, GeluErfAndTanh) {
  const std::vector<float> x = {-3, -1, -0.1f, 0, 0.5f, 1, 2, 5};
  std::vector<float> erf_want, tanh_want;
  for (float v : x) {
    double d = v;
    erf_want.push_back(static_cast<float>(0.5 * d * (1 + std::erf(d / std::sqrt(2.0)))));
    double k = std::sqrt(2.0 / M_PI);
    tanh_want.push_back(
        static_cast<float>(0.5 * d * (1 + std::tanh(k * (d + 0.044715 * d * d * d)))));
  }
  ExpectF32(Run1("gelu", {F32({8}, x)}, {DType::kF32, {8}}), {8}, erf_want);
  ExpectF32(Run1("gelu", {F32({8}, x)}, {DType::kF32, {8}}, {{"approximate", AttrString("tanh")}}),
            {8}, tanh_want);
  // The two forms differ measurably at x = 1.
  EXPECT_GT(std::fabs(erf_want[5] - tanh_want[5]), 1e-5f);
}

TEST(Unary, LeakyReluAndClip) {
  Tensor x = F32({5}, {-10, -1, 0, 1, 10});
  ExpectF32(Run1("leaky_relu", {x}, {DType::kF32, {5}}, {{"alpha", AttrFloat(0.1)}}), {5},
            {-1, -0.1f, 0, 1, 10});
  ExpectF32(Run1("leaky_relu", {x}, {DType::kF32, {5}}), {5}, {-0.1f, -0.01f, 0, 1, 10});
  ExpectF32(Run1("clip", {x}, {DType::kF32, {5}}, {{"min", AttrFloat(-2)}, {"max", AttrFloat(3)}}),
            {5}, {-2, -1, 0, 1, 3});
  ExpectF32(Run1("clip", {x}, {DType::kF32, {5}}, {{"min", AttrFloat(0)}}), {5}, {0, 0, 0, 1, 10});
  ExpectF32(Run1("clip", {x}, {DType::kF32, {5}}), {5}, {-10, -1, 0, 1, 10});
  EXPECT_EQ(Vec<int32_t>(Run1("clip", {I32({4}, {-7, 2, 9, 100})}, {DType::kI32, {4}},
                              {{"min", AttrFloat(0)}, {"max", AttrFloat(9)}})),
            (std::vector<int32_t>{0, 2, 9, 9}));
}

TEST(Unary, IdentitySharesBuffer) {
  Tensor x = I64({2}, {4, 5});
  Tensor y = Run1("identity", {x}, {DType::kI64, {2}});
  EXPECT_EQ(Vec<int64_t>(y), (std::vector<int64_t>{4, 5}));
}

TEST(Cast, NumericConversions) {
  Tensor f = F32({5}, {-2.7f, -0.5f, 0.0f, 1.9f, 300.0f});
  EXPECT_EQ(Vec<int32_t>(Run1("cast", {f}, {DType::kI32, {5}})),
            (std::vector<int32_t>{-2, 0, 0, 1, 300}));
  EXPECT_EQ(Vec<int64_t>(Run1("cast", {f}, {DType::kI64, {5}})),
            (std::vector<int64_t>{-2, 0, 0, 1, 300}));
  Tensor u8 = Run1("cast", {f}, {DType::kU8, {5}});
  EXPECT_EQ(u8.data<uint8_t>()[4], 44);  // 300 wraps modulo 256, as numpy
  Tensor b = Run1("cast", {f}, {DType::kBool, {5}});
  EXPECT_EQ(std::vector<uint8_t>(b.data<uint8_t>(), b.data<uint8_t>() + 5),
            (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  ExpectF32(Run1("cast", {Bool({3}, {1, 0, 1})}, {DType::kF32, {3}}), {3}, {1, 0, 1});
  ExpectF32(Run1("cast", {I64({2}, {-5, 1LL << 40})}, {DType::kF32, {2}}), {2},
            {-5.0f, 1099511627776.0f});
  Tensor d = Run1("cast", {F32({1}, {0.1f})}, {DType::kF64, {1}});
  EXPECT_EQ(Vec<double>(d)[0], static_cast<double>(0.1f));
  EXPECT_EQ(Vec<int32_t>(Run1("cast", {I64({2}, {(1LL << 32) + 7, -1})}, {DType::kI32, {2}})),
            (std::vector<int32_t>{7, -1}));
}

TEST(Cast, HalfPrecision) {
  Tensor h = Run1("cast", {F32({3}, {1.0f, -0.5f, 65504.0f})}, {DType::kF16, {3}});
  ASSERT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h.data<uint16_t>()[1], 0xb800);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x7bff);
  ExpectF32(Run1("cast", {h}, {DType::kF32, {3}}), {3}, {1.0f, -0.5f, 65504.0f});
  Tensor bf = Run1("cast", {I64({1}, {3})}, {DType::kBF16, {1}});
  EXPECT_EQ(bf.data<uint16_t>()[0], 0x4040);
  std::vector<Tensor> out;
  EXPECT_FALSE(RunOp("cast", {F32({2}, {1, 2})}, {{DType::kI32, {3}}}, {}, &out).ok());
}

}  // namespace
}  // namespace distrt

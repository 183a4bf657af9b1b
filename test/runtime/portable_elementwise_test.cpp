// The CUDA element-wise kernels' bodies (portable/elementwise.h), run on the
// host by HostFor, against the host kernels: the arithmetic every GPU run
// does, checked where there is no GPU. bf16 and f16 bodies compute in f32
// and round once, so they must equal the f32 result rounded.
#include <gtest/gtest.h>

#include "portable/elementwise.h"
#include "portable/host_launch.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::BinaryBody;
using portable::BinaryOp;
using portable::HostFor;
using portable::UnaryBody;
using portable::UnaryOp;

struct UnaryCase {
  const char* op;
  UnaryOp body;
  bool positive;  // needs x > 0
};
const UnaryCase kUnary[] = {
    {"neg", UnaryOp::kNeg, false},     {"abs", UnaryOp::kAbs, false},
    {"exp", UnaryOp::kExp, false},     {"log", UnaryOp::kLog, true},
    {"sqrt", UnaryOp::kSqrt, true},    {"reciprocal", UnaryOp::kReciprocal, true},
    {"tanh", UnaryOp::kTanh, false},   {"sigmoid", UnaryOp::kSigmoid, false},
    {"erf", UnaryOp::kErf, false},     {"relu", UnaryOp::kRelu, false},
    {"sin", UnaryOp::kSin, false},     {"cos", UnaryOp::kCos, false},
    {"floor", UnaryOp::kFloor, false}, {"ceil", UnaryOp::kCeil, false},
    {"round", UnaryOp::kRound, false}, {"sign", UnaryOp::kSign, false},
};

std::vector<float> Inputs(bool positive) {
  std::vector<float> x = RandomUniform<float>(257, 3);
  for (float& v : x) v *= 4.0f;
  x[5] = 2.5f;  // round half to even
  x[6] = -0.5f;
  x[7] = 0.0f;
  if (positive)
    for (float& v : x) v = std::fabs(v) + 0.01f;
  else
    x[8] = NAN;  // relu, sign, max and min keep it
  return x;
}

void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
    }
  }
}

TEST(PortableElementwise, UnaryBodiesMatchHostKernels) {
  for (const UnaryCase& c : kUnary) {
    SCOPED_TRACE(c.op);
    const std::vector<float> x = Inputs(c.positive);
    const Shape s = {static_cast<int64_t>(x.size())};
    const std::vector<float> want = Vec<float>(Run1(c.op, {F32(s, x)}, {DType::kF32, s}));
    std::vector<float> got(x.size());
    HostFor(static_cast<int64_t>(x.size()), UnaryBody<float>{c.body, x.data(), got.data(), 0.0f});
    // The host kernels' exp and erf are vectorised approximations.
    ExpectSame(got, want, 2e-6f);
  }
}

TEST(PortableElementwise, GeluAndLeakyReluMatchHostKernels) {
  const std::vector<float> x = Inputs(false);
  const Shape s = {static_cast<int64_t>(x.size())};
  std::vector<float> got(x.size());
  HostFor(static_cast<int64_t>(x.size()),
          UnaryBody<float>{UnaryOp::kGeluErf, x.data(), got.data(), 0.0f});
  ExpectSame(got, Vec<float>(Run1("gelu", {F32(s, x)}, {DType::kF32, s})), 2e-6f);
  HostFor(static_cast<int64_t>(x.size()),
          UnaryBody<float>{UnaryOp::kGeluTanh, x.data(), got.data(), 0.0f});
  ExpectSame(got,
             Vec<float>(Run1("gelu", {F32(s, x)}, {DType::kF32, s},
                             {{"approximate", AttrString("tanh")}})),
             2e-6f);
  HostFor(static_cast<int64_t>(x.size()),
          UnaryBody<float>{UnaryOp::kLeakyRelu, x.data(), got.data(), 0.2f});
  ExpectSame(got,
             Vec<float>(Run1("leaky_relu", {F32(s, x)}, {DType::kF32, s},
                             {{"alpha", AttrFloat(0.2)}})),
             0);
}

TEST(PortableElementwise, BroadcastBinaryBodiesMatchHostKernels) {
  const Shape as = {3, 1, 5}, bs = {4, 1}, out = {3, 4, 5};
  std::vector<float> a = RandomUniform<float>(15, 4), b = RandomUniform<float>(4, 5);
  a[2] = NAN;
  portable::BroadcastMap map;
  ASSERT_TRUE(portable::MakeBroadcastMap({as, bs}, out, &map));
  EXPECT_FALSE(map.identity);
  const std::pair<const char*, BinaryOp> ops[] = {
      {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub}, {"mul", BinaryOp::kMul},
      {"div", BinaryOp::kDiv}, {"max", BinaryOp::kMax}, {"min", BinaryOp::kMin}};
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    std::vector<float> got(60);
    HostFor(60, BinaryBody<float>{op, a.data(), b.data(), got.data(), map});
    ExpectSame(got, Vec<float>(Run1(name, {F32(as, a), F32(bs, b)}, {DType::kF32, out})), 0);
  }
  // pow of a positive base.
  for (float& v : a) v = std::fabs(v) + 0.5f;
  std::vector<float> got(60);
  HostFor(60, BinaryBody<float>{BinaryOp::kPow, a.data(), b.data(), got.data(), map});
  ExpectSame(got, Vec<float>(Run1("pow", {F32(as, a), F32(bs, b)}, {DType::kF32, out})), 1e-6f);
  // Shapes that do not broadcast, or too many dims, have no map.
  EXPECT_FALSE(portable::MakeBroadcastMap({{3}, {4}}, {4}, &map));
  EXPECT_FALSE(portable::MakeBroadcastMap({Shape(9, 1)}, Shape(9, 1), &map));
}

// The four-at-a-time bodies give what the one-element bodies give: same
// shapes, one element, a bias over the last dim and per-row values, the
// partial last pack included; maps that walk the dims are not packable.
TEST(PortableElementwise, PackBodiesMatchOneElementBodies) {
  struct Case {
    Shape a, b, out;
    bool packable;
  };
  const Case cases[] = {
      {{259}, {259}, {259}, true},              // same shape, a partial last pack
      {{1}, {259}, {259}, true},                // a scalar
      {{5, 12}, {12}, {5, 12}, true},           // a bias
      {{3, 5, 8}, {3, 5, 1}, {3, 5, 8}, true},  // per-row values
      {{5, 6}, {6}, {5, 6}, false},             // a bias not a multiple of 4
      {{3, 1, 8}, {1, 4, 8}, {3, 4, 8}, false}, // broadcast both ways
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.a) + " op " + ShapeToString(c.b));
    const int64_t n = NumElements(c.out);
    const std::vector<float> a = RandomUniform<float>(NumElements(c.a), 8);
    const std::vector<float> b = RandomUniform<float>(NumElements(c.b), 9);
    portable::BroadcastMap map;
    ASSERT_TRUE(portable::MakeBroadcastMap({c.a, c.b}, c.out, &map));
    EXPECT_EQ(portable::Packable(map), c.packable);
    if (!c.packable) continue;
    const int64_t packs = (n + portable::kPack - 1) / portable::kPack;
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      HostFor(n, BinaryBody<float>{op, a.data(), b.data(), want.data(), map});
      HostFor(packs, portable::BinaryPackBody<float>{op, a.data(), b.data(), got.data(), map, n});
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    }
  }
  const int64_t n = 259;
  const std::vector<float> x = RandomUniform<float>(n, 10);
  std::vector<float> want(n), got(n);
  HostFor(n, UnaryBody<float>{UnaryOp::kGeluErf, x.data(), want.data(), 0.0f});
  HostFor((n + portable::kPack - 1) / portable::kPack,
          portable::UnaryPackBody<float>{UnaryOp::kGeluErf, x.data(), got.data(), 0.0f, n});
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

// 16-bit floats load as f32, compute in f32 and round once on the way out.
TEST(PortableElementwise, HalfBodiesRoundTheF32Result) {
  const std::vector<float> x = Inputs(false);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<bf16_t> xb(x.size()), yb(x.size());
  std::vector<f16_t> xh(x.size()), yh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xb[i].bits = FloatToBF16(x[i]);
    xh[i].bits = FloatToHalf(x[i]);
  }
  HostFor(n, UnaryBody<bf16_t>{UnaryOp::kGeluErf, xb.data(), yb.data(), 0.0f});
  HostFor(n, UnaryBody<f16_t>{UnaryOp::kGeluErf, xh.data(), yh.data(), 0.0f});
  for (size_t i = 0; i < x.size(); ++i) {
    const float in_b = BF16ToFloat(xb[i].bits), in_h = HalfToFloat(xh[i].bits);
    const float want_b = 0.5f * in_b * (1.0f + std::erf(in_b * 0.70710678118654752440f));
    const float want_h = 0.5f * in_h * (1.0f + std::erf(in_h * 0.70710678118654752440f));
    if (std::isnan(want_b)) {
      EXPECT_TRUE(std::isnan(BF16ToFloat(yb[i].bits)));
      continue;
    }
    EXPECT_EQ(yb[i].bits, FloatToBF16(want_b)) << "element " << i;
    EXPECT_EQ(yh[i].bits, FloatToHalf(want_h)) << "element " << i;
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

namespace distrt {
namespace testing {
namespace {

// gelu_grad (the fused form of the exact GELU's gradient rule): the host
// kernel against GELU's derivative by central differences of the host's
// gelu in f64, and the body the device runs against the host kernel; bf16
// computes in f32 and rounds once; x and dy of different types are an
// error.
TEST(PortableElementwise, GeluGradMatchesTheDerivativeAndTheHostKernel) {
  const int64_t n = 301;
  std::vector<double> x(n), dy(n);
  std::vector<float> xf(n), dyf(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = -6.0 + 12.0 * static_cast<double>(i) / (n - 1);  // both tails and 0
    dy[i] = 0.5 + std::sin(static_cast<double>(i));
    xf[i] = static_cast<float>(x[i]);
    dyf[i] = static_cast<float>(dy[i]);
  }
  const Shape s = {n};
  const std::vector<double> dx =
      Vec<double>(Run1("gelu_grad", {F64(s, x), F64(s, dy)}, {DType::kF64, s}));
  const double h = 1e-5;
  std::vector<double> lo(n), hi(n);
  for (int64_t i = 0; i < n; ++i) {
    lo[i] = x[i] - h;
    hi[i] = x[i] + h;
  }
  const std::vector<double> glo = Vec<double>(Run1("gelu", {F64(s, lo)}, {DType::kF64, s}));
  const std::vector<double> ghi = Vec<double>(Run1("gelu", {F64(s, hi)}, {DType::kF64, s}));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(dx[i], dy[i] * (ghi[i] - glo[i]) / (2 * h), 1e-8) << "x = " << x[i];

  const std::vector<float> host =
      Vec<float>(Run1("gelu_grad", {F32(s, xf), F32(s, dyf)}, {DType::kF32, s}));
  std::vector<float> body(n);
  HostFor(n, portable::GeluGradBody<float>{xf.data(), dyf.data(), body.data()});
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(host[i], dx[i], 2e-6 * (1 + std::fabs(dx[i]))) << "x = " << x[i];
    EXPECT_NEAR(body[i], dx[i], 2e-6 * (1 + std::fabs(dx[i]))) << "x = " << x[i];
  }
  std::vector<bf16_t> xb(n), db(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    xb[i].bits = FloatToBF16(xf[i]);
    db[i].bits = FloatToBF16(dyf[i]);
  }
  HostFor(n, portable::GeluGradBody<bf16_t>{xb.data(), db.data(), out.data()});
  for (int64_t i = 0; i < n; ++i) {
    const float want = portable::GeluGrad(BF16ToFloat(xb[i].bits), BF16ToFloat(db[i].bits));
    EXPECT_EQ(out[i].bits, FloatToBF16(want)) << "x = " << x[i];
  }

  std::vector<Tensor> outs;
  const Status st = RunOp("gelu_grad", {F32(s, xf), F64(s, dy)}, {{DType::kF32, s}}, {}, &outs);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "gelu_grad: x is f32[301] but dy is f64[301]; they must have one type");
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// The CUDA normalisation kernels' bodies (portable/norm.h), run on the host
// as cuda/norm.cu launches them (rows with one lane and with simulated
// lanes, sim_warp.h; columns), against the host kernels: softmax / log_softmax with
// -inf, +inf and NaN rows and an axis that is not last, softmax_grad and
// cross-entropy's sums and gradient against references computed here, layer_norm with
// broadcast scale and bias, batch_norm, and bf16/f16 (f32 arithmetic, one
// rounding).
#include <gtest/gtest.h>

#include "portable/host_launch.h"
#include "portable/norm.h"
#include "sim_warp.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::HostFor;
using portable::HostRows;

// NaN where want is NaN, infinities equal, else within tol (relative).
template <typename T>
void ExpectClose(const std::vector<T>& got, const std::vector<T>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
    }
  }
}

enum class Lanes { kOne, kSim };

// The softmax body cuda::LaunchSoftmax picks for [outer, n, inner].
template <typename T>
std::vector<T> BodySoftmax(bool log, const std::vector<T>& x, int64_t outer, int64_t n,
                           int64_t inner, Lanes lanes) {
  std::vector<T> y(x.size());
  if (portable::WarpPerRow(n, inner)) {
    portable::SoftmaxRowsBody<T> body{x.data(), y.data(), n, log};
    if (lanes == Lanes::kSim)
      SimWarpRows(outer, body);
    else
      HostRows(outer, body);
  } else {
    HostFor(outer * inner, portable::SoftmaxColsBody<T>{x.data(), y.data(), n, inner, log});
  }
  return y;
}

// Rows of 100: random, with a -inf entry, all -inf, a NaN, a +inf, large.
std::vector<float> SoftmaxRows(int64_t n) {
  std::vector<float> x = RandomUniform<float>(6 * n, 31);
  for (float& v : x) v *= 8.0f;
  x[0 * n + 3] = -INFINITY;
  for (int64_t j = 0; j < n; ++j) x[1 * n + j] = -INFINITY;
  x[2 * n + n - 1] = NAN;
  x[3 * n + 7] = INFINITY;
  for (int64_t j = 0; j < n; ++j) x[4 * n + j] += 1000.0f;
  return x;
}

TEST(PortableNorm, SoftmaxRowsMatchHostKernels) {
  for (const int64_t n : {100, 7}) {  // a warp per row; a thread per short row
    const std::vector<float> x = SoftmaxRows(n);
    const Shape s = {6, n};
    for (const char* op : {"softmax", "log_softmax"}) {
      SCOPED_TRACE(std::string(op) + " n " + std::to_string(n));
      const std::vector<float> want =
          Vec<float>(Run1(op, {F32(s, x)}, {DType::kF32, s}, {{"axis", AttrInt(-1)}}));
      const bool log = std::string(op) == "log_softmax";
      // The host's exp is a vectorised approximation.
      ExpectClose(BodySoftmax<float>(log, x, 6, n, 1, Lanes::kOne), want, 3e-6);
      ExpectClose(BodySoftmax<float>(log, x, 6, n, 1, Lanes::kSim), want, 3e-6);
    }
  }
}

TEST(PortableNorm, SoftmaxOverAnInnerAxisMatchesHostKernels) {
  // [outer 3, n 40, inner 5] over axis 1, with a NaN and a column of -inf.
  const Shape s = {3, 40, 5};
  std::vector<float> x = RandomUniform<float>(600, 37);
  x[2 * 5 + 1] = NAN;
  for (int64_t k = 0; k < 40; ++k) x[(1 * 40 + k) * 5 + 3] = -INFINITY;
  for (const char* op : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(op);
    const std::vector<float> want =
        Vec<float>(Run1(op, {F32(s, x)}, {DType::kF32, s}, {{"axis", AttrInt(1)}}));
    ExpectClose(BodySoftmax<float>(std::string(op) == "log_softmax", x, 3, 40, 5, Lanes::kOne),
                want, 3e-6);
  }
  // f64 rows and columns against the host's f64 kernel.
  std::vector<double> xd(x.begin(), x.end());
  for (const char* op : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(std::string(op) + " f64");
    const bool log = std::string(op) == "log_softmax";
    ExpectClose(BodySoftmax<double>(log, xd, 3, 40, 5, Lanes::kOne),
                Vec<double>(Run1(op, {F64(s, xd)}, {DType::kF64, s}, {{"axis", AttrInt(1)}})),
                1e-14);
    ExpectClose(BodySoftmax<double>(log, xd, 15, 40, 1, Lanes::kOne),
                Vec<double>(Run1(op, {F64({15, 40}, xd)}, {DType::kF64, {15, 40}})), 1e-14);
  }
}

// The f32 result of the same (rounded) inputs, within one 16-bit rounding.
template <typename H>
void ExpectHalfClose(const std::vector<H>& got, const std::vector<float>& want,
                     float (*to)(uint16_t), float ulp) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = to(got[i].bits);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g, want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(g, want[i], ulp * std::fabs(want[i]) + 1e-6f) << "element " << i;
    }
  }
}

TEST(PortableNorm, HalfSoftmaxRoundsTheF32Result) {
  const int64_t n = 100;
  std::vector<float> x = SoftmaxRows(n);
  std::vector<bf16_t> xb(x.size());
  std::vector<f16_t> xh(x.size());
  std::vector<float> fb(x.size()), fh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (i >= 4 * n && i < 5 * n) x[i] -= 1000.0f;  // f16's range
    xb[i].bits = FloatToBF16(x[i]);
    xh[i].bits = FloatToHalf(x[i]);
    fb[i] = BF16ToFloat(xb[i].bits);
    fh[i] = HalfToFloat(xh[i].bits);
  }
  const Shape s = {6, n};
  for (const char* op : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(op);
    const bool log = std::string(op) == "log_softmax";
    ExpectHalfClose(BodySoftmax<bf16_t>(log, xb, 6, n, 1, Lanes::kOne),
                    Vec<float>(Run1(op, {F32(s, fb)}, {DType::kF32, s})), BF16ToFloat, 1.0f / 128);
    ExpectHalfClose(BodySoftmax<f16_t>(log, xh, 6, n, 1, Lanes::kOne),
                    Vec<float>(Run1(op, {F32(s, fh)}, {DType::kF32, s})), HalfToFloat, 1.0f / 1024);
  }
}

// ---- softmax_grad -----------------------------------------------------------------

// The softmax_grad body cuda::LaunchSoftmaxGrad picks for [outer, n, inner].
template <typename T>
std::vector<T> BodySoftmaxGrad(const std::vector<T>& y, const std::vector<T>& dy, int64_t outer,
                               int64_t n, int64_t inner, Lanes lanes) {
  std::vector<T> dx(y.size());
  if (portable::WarpPerRow(n, inner)) {
    portable::SoftmaxGradRowsBody<T> body{y.data(), dy.data(), dx.data(), n};
    if (lanes == Lanes::kSim)
      SimWarpRows(outer, body);
    else
      HostRows(outer, body);
  } else {
    HostFor(outer * inner,
            portable::SoftmaxGradColsBody<T>{y.data(), dy.data(), dx.data(), n, inner});
  }
  return dx;
}

// y * (dy - sum(dy * y)) along n of [outer, n, inner], in double: the
// reference for the host kernel and the bodies.
std::vector<float> SoftmaxGradReference(const std::vector<float>& y, const std::vector<float>& dy,
                                        int64_t outer, int64_t n, int64_t inner) {
  std::vector<float> dx(y.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        const size_t at = static_cast<size_t>((o * n + k) * inner + i);
        s += static_cast<double>(dy[at]) * y[at];
      }
      for (int64_t k = 0; k < n; ++k) {
        const size_t at = static_cast<size_t>((o * n + k) * inner + i);
        dx[at] = static_cast<float>(y[at] * (dy[at] - s));
      }
    }
  }
  return dx;
}

TEST(PortableNorm, SoftmaxGradMatchesReferenceAndHostKernel) {
  struct Case {
    Shape shape;
    int64_t axis, outer, n, inner;
  };
  // a warp per row; a thread per short row; an axis that is not last
  const Case cases[] = {{{6, 100}, 1, 6, 100, 1}, {{6, 7}, -1, 6, 7, 1}, {{3, 40, 5}, 1, 3, 40, 5}};
  uint32_t seed = 41;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    const int64_t count = NumElements(c.shape);
    std::vector<float> y = RandomUniform<float>(count, seed++);
    for (float& v : y) v = 0.5f * (v + 1.0f);  // softmax outputs lie in [0, 1]
    const std::vector<float> dy = RandomUniform<float>(count, seed++);
    const std::vector<float> want = SoftmaxGradReference(y, dy, c.outer, c.n, c.inner);
    ExpectClose(Vec<float>(Run1("softmax_grad", {F32(c.shape, y), F32(c.shape, dy)},
                                {DType::kF32, c.shape}, {{"axis", AttrInt(c.axis)}})),
                want, 1e-6);
    ExpectClose(BodySoftmaxGrad<float>(y, dy, c.outer, c.n, c.inner, Lanes::kOne), want, 1e-6);
    ExpectClose(BodySoftmaxGrad<float>(y, dy, c.outer, c.n, c.inner, Lanes::kSim), want, 1e-6);
    // bf16 storage: the f32 result of the rounded inputs, rounded once
    std::vector<bf16_t> yb(y.size()), db(y.size());
    std::vector<float> yr(y.size()), dr(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      yb[i].bits = FloatToBF16(y[i]);
      db[i].bits = FloatToBF16(dy[i]);
      yr[i] = BF16ToFloat(yb[i].bits);
      dr[i] = BF16ToFloat(db[i].bits);
    }
    ExpectHalfClose(BodySoftmaxGrad<bf16_t>(yb, db, c.outer, c.n, c.inner, Lanes::kOne),
                    SoftmaxGradReference(yr, dr, c.outer, c.n, c.inner), BF16ToFloat, 1.0f / 128);
  }
  // y and dy of different shapes: the host kernel's error
  std::vector<Tensor> out;
  const Status st =
      RunOp("softmax_grad", {F32({2, 3}, std::vector<float>(6)), F32({3, 2}, std::vector<float>(6))},
            {{DType::kF32, {2, 3}}}, {}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("they must have one type"), std::string::npos) << st.message();
}

// ---- attention's scale and mask, fused into softmax and softmax_grad -------------

// A softmax over `axis` of x [outer, n, inner] with a mask of x's trailing
// dims `mask_shape`, as attention writes it: scale multiplied (or divided),
// fill where the mask hides (true, or false with keeps).
struct ScaleMaskCase {
  Shape shape, mask_shape;
  int64_t axis, outer, n, inner;
  double scale, fill;
  bool divide, keeps;
};

std::vector<int> RandomMask(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::bernoulli_distribution hide(0.3);
  std::vector<int> m(static_cast<size_t>(n));
  for (int& v : m) v = hide(gen) ? 1 : 0;
  return m;
}

template <typename C>
portable::ScaleAndMask<C> MakeScaleAndMask(const ScaleMaskCase& c, const std::vector<int>& mask,
                                           std::vector<char>* storage, bool forward) {
  storage->assign(mask.begin(), mask.end());
  portable::ScaleAndMask<C> sm;
  sm.mask = reinterpret_cast<const bool*>(storage->data());
  sm.mask_size = static_cast<int64_t>(mask.size());
  sm.scale = static_cast<C>(c.scale);
  sm.scaled = true;
  sm.divide = c.divide;
  sm.keeps = c.keeps;
  if (forward) sm.fill = static_cast<C>(c.fill);
  return sm;
}

TEST(PortableNorm, ScaleAndMaskMatchTheOpsTheyStandFor) {
  const double inf = INFINITY;
  // GPT-2's causal mask [1, 1, T, T] and scale (rows for a warp), Llama's
  // [T, T] with a divisor and the where's branches swapped (short rows: a
  // thread each), an axis that is not last (a column crosses mask rows), a
  // mask of one element.
  const ScaleMaskCase cases[] = {
      {{2, 3, 8, 100}, {1, 1, 8, 100}, 3, 48, 100, 1, 0.125, -inf, false, false},
      {{4, 6, 7}, {6, 7}, 2, 24, 7, 1, 3.0, -1e4, true, true},
      {{3, 40, 5}, {40, 5}, 1, 3, 40, 5, 0.5, -inf, false, false},
      {{6, 100}, {1}, 1, 6, 100, 1, 2.0, -1e4, true, false},
  };
  uint32_t seed = 140;
  for (const ScaleMaskCase& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    const int64_t count = NumElements(c.shape);
    std::vector<float> x = RandomUniform<float>(count, seed++);
    for (float& v : x) v *= 8.0f;
    const std::vector<int> mask = RandomMask(NumElements(c.mask_shape), seed++);
    const Tensor xt = F32(c.shape, x), mt = Bool(c.mask_shape, mask);
    const Tensor ct = F32({}, {static_cast<float>(c.scale)});
    const Tensor ft = F32({}, {static_cast<float>(c.fill)});
    const TensorType type{DType::kF32, c.shape};
    // The ops the fused forms stand for, on the host kernels.
    const Tensor scaled = Run1(c.divide ? "div" : "mul", {xt, ct}, type);
    const Tensor masked = Run1(
        "where",
        c.keeps ? std::vector<Tensor>{mt, scaled, ft} : std::vector<Tensor>{mt, ft, scaled}, type);
    const std::vector<float> want =
        Vec<float>(Run1("softmax", {masked}, type, {{"axis", AttrInt(c.axis)}}));
    // The host's fused softmax computes the same values, to the last bit.
    const Tensor fused = Run1("softmax", {xt, mt}, type,
                              {{"axis", AttrInt(c.axis)},
                               {"scale", AttrFloat(c.scale)},
                               {"divide", AttrInt(c.divide)},
                               {"fill", AttrFloat(c.fill)},
                               {"mask_keeps", AttrInt(c.keeps)}});
    ExpectClose(Vec<float>(fused), want, 0);
    // The bodies the device runs (the host's exp is an approximation).
    std::vector<char> storage;
    const portable::ScaleAndMask<float> in = MakeScaleAndMask<float>(c, mask, &storage, true);
    std::vector<float> y(x.size());
    if (portable::WarpPerRow(c.n, c.inner)) {
      for (Lanes lanes : {Lanes::kOne, Lanes::kSim}) {
        portable::SoftmaxRowsBody<float> body{x.data(), y.data(), c.n, false, in};
        if (lanes == Lanes::kSim)
          SimWarpRows(c.outer, body);
        else
          HostRows(c.outer, body);
        ExpectClose(y, want, 3e-6);
      }
    } else {
      HostFor(c.outer * c.inner,
              portable::SoftmaxColsBody<float>{x.data(), y.data(), c.n, c.inner, false, in});
      ExpectClose(y, want, 3e-6);
    }

    // The gradient: where(mask, 0, g) then the scale, against softmax_grad
    // and those two ops.
    std::vector<float> yv = RandomUniform<float>(count, seed++);
    for (float& v : yv) v = 0.5f * (v + 1.0f);
    const std::vector<float> dy = RandomUniform<float>(count, seed++);
    const Tensor yt = F32(c.shape, yv), dyt = F32(c.shape, dy), zero = F32({}, {0.0f});
    const Tensor g = Run1("softmax_grad", {yt, dyt}, type, {{"axis", AttrInt(c.axis)}});
    const Tensor gw =
        Run1("where", c.keeps ? std::vector<Tensor>{mt, g, zero} : std::vector<Tensor>{mt, zero, g},
             type);
    const std::vector<float> gwant = Vec<float>(Run1(c.divide ? "div" : "mul", {gw, ct}, type));
    const Tensor gfused = Run1("softmax_grad", {yt, dyt, mt}, type,
                               {{"axis", AttrInt(c.axis)},
                                {"scale", AttrFloat(c.scale)},
                                {"divide", AttrInt(c.divide)},
                                {"mask_keeps", AttrInt(c.keeps)}});
    ExpectClose(Vec<float>(gfused), gwant, 0);
    const portable::ScaleAndMask<float> out = MakeScaleAndMask<float>(c, mask, &storage, false);
    std::vector<float> dx(x.size());
    if (portable::WarpPerRow(c.n, c.inner)) {
      SimWarpRows(c.outer,
                  portable::SoftmaxGradRowsBody<float>{yv.data(), dy.data(), dx.data(), c.n, out});
    } else {
      HostFor(c.outer * c.inner, portable::SoftmaxGradColsBody<float>{
                                     yv.data(), dy.data(), dx.data(), c.n, c.inner, out});
    }
    ExpectClose(dx, gwant, 1e-6);
  }
}

TEST(PortableNorm, ScaleAndMaskErrorsSayWhatIsWrong) {
  const Tensor x = F32({2, 3}, std::vector<float>(6));
  std::vector<Tensor> out;
  auto message = [&](const std::string& op, const std::vector<Tensor>& in, Attrs attrs) {
    const Status st = RunOp(op, in, {{DType::kF32, {2, 3}}}, attrs, &out);
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  // A mask broadcast along the softmax's own rows is not attention's.
  EXPECT_HAS(message("softmax", {x, Bool({2, 1}, {1, 0})}, {{"fill", AttrFloat(-1)}}),
             "the mask is bool[2, 1] for an input of shape [2, 3]; it must be bool of the "
             "input's trailing dims after leading 1s");
  EXPECT_HAS(message("softmax", {x, F32({3}, {0, 0, 0})}, {{"fill", AttrFloat(-1)}}),
             "it must be bool");
  EXPECT_HAS(message("softmax", {x, Bool({3}, {1, 0, 0})}, {}), "a mask needs a `fill` value");
  EXPECT_HAS(message("softmax", {x}, {{"divide", AttrInt(1)}}), "`divide` without a `scale`");
  EXPECT_HAS(message("softmax_grad", {x, x}, {{"mask_keeps", AttrInt(1)}}),
             "`mask_keeps` without a mask input");
}

TEST(PortableNorm, ScaleAndMaskRoundToTheStoredType) {
  // A bf16 policy on the device: bf16 scores scaled and masked in bf16,
  // the softmax in f32 (y f32), its gradient read from bf16 and written to
  // bf16 through the mask and the scale. The bodies round where the ops
  // they stand for store: the scaled scores and the gradient before its
  // scale to bf16. Reference: those ops' roundings, then double.
  const ScaleMaskCase c = {{2, 3, 8, 64}, {1, 1, 8, 64}, 3,     48,   64, 1,
                           0.125,         -INFINITY,     false, false};
  const int64_t count = NumElements(c.shape);
  std::vector<float> x = RandomUniform<float>(count, 150);
  std::vector<bf16_t> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i].bits = FloatToBF16(8.0f * x[i]);
  const std::vector<int> mask = RandomMask(NumElements(c.mask_shape), 151);
  std::vector<char> storage;
  const portable::ScaleAndMask<float> in = MakeScaleAndMask<float>(c, mask, &storage, true);
  std::vector<float> y(x.size());
  SimWarpRows(c.outer,
              portable::SoftmaxRowsBody<bf16_t, float>{xb.data(), y.data(), c.n, false, in});
  std::vector<float> want(x.size());
  for (int64_t r = 0; r < c.outer; ++r) {
    std::vector<double> z(static_cast<size_t>(c.n));
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t e = r * c.n + j;
      const float scaled = BF16ToFloat(FloatToBF16(BF16ToFloat(xb[e].bits) * 0.125f));
      z[j] = mask[e % mask.size()] ? -INFINITY : scaled;
      m = std::max(m, z[j]);
    }
    for (int64_t j = 0; j < c.n; ++j) s += std::exp(z[j] - m);
    for (int64_t j = 0; j < c.n; ++j)
      want[r * c.n + j] = static_cast<float>(std::exp(z[j] - m) / s);
  }
  ExpectClose(y, want, 3e-6);

  std::vector<float> dy = RandomUniform<float>(count, 152);
  std::vector<bf16_t> db(dy.size()), dx(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) db[i].bits = FloatToBF16(dy[i]);
  const portable::ScaleAndMask<float> out = MakeScaleAndMask<float>(c, mask, &storage, false);
  SimWarpRows(c.outer, portable::SoftmaxGradRowsBody<float, bf16_t, bf16_t>{y.data(), db.data(),
                                                                            dx.data(), c.n, out});
  std::vector<float> gwant(dy.size());
  for (int64_t r = 0; r < c.outer; ++r) {
    double s = 0;
    for (int64_t j = 0; j < c.n; ++j)
      s += double(BF16ToFloat(db[r * c.n + j].bits)) * y[r * c.n + j];
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t e = r * c.n + j;
      const float g =
          BF16ToFloat(FloatToBF16(static_cast<float>(y[e] * (BF16ToFloat(db[e].bits) - s))));
      gwant[e] = mask[e % mask.size()] ? 0.0f : g * 0.125f;
    }
  }
  ExpectHalfClose(dx, gwant, BF16ToFloat, 1.0f / 128);
}

// ---- cross_entropy_sums, cross_entropy_grad ----------------------------------------

// Rows of logits [6, n] whose classes are 10, 11, ...: labels inside the
// share, past it, before it and ignored (-100); the reference in double.
struct CrossEntropyRows {
  int64_t n;
  std::vector<float> x, max, scale, weight;
  std::vector<int64_t> labels;
  std::vector<float> sum_exp, label_logit, grad;
};

CrossEntropyRows MakeCrossEntropyRows(int64_t n) {
  CrossEntropyRows c;
  c.n = n;
  c.x = RandomUniform<float>(6 * n, 71);
  for (float& v : c.x) v *= 8.0f;
  c.scale = RandomUniform<float>(6, 72);
  c.weight = RandomUniform<float>(6, 73);
  c.labels = {10, 10 + n - 1, 10 + n, 9, -100, 12};
  for (int64_t r = 0; r < 6; ++r) {
    float m = c.x[r * n];
    for (int64_t j = 0; j < n; ++j) m = std::max(m, c.x[r * n + j]);
    c.max.push_back(m);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(c.x[r * n + j]) - m);
    c.sum_exp.push_back(static_cast<float>(s));
    const int64_t k = c.labels[r] - 10;
    const bool in = k >= 0 && k < n;
    c.label_logit.push_back(in ? c.x[r * n + k] - m : 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      c.grad.push_back(static_cast<float>(
          std::exp(static_cast<double>(c.x[r * n + j]) - m) * c.scale[r] -
          (in && j == k ? c.weight[r] : 0.0)));
    }
  }
  return c;
}

TEST(PortableNorm, CrossEntropyBodiesMatchReferenceAndHostKernels) {
  for (const int64_t n : {100, 7}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const CrossEntropyRows c = MakeCrossEntropyRows(n);
    const Shape xs = {6, n}, rs = {6, 1};
    // The host kernels.
    std::vector<Tensor> out;
    ASSERT_TRUE(RunOp("cross_entropy_sums", {F32(xs, c.x), F32(rs, c.max), I64(rs, c.labels)},
                      {{DType::kF32, rs}, {DType::kF32, rs}}, {{"first_class", AttrInt(10)}}, &out)
                    .ok());
    ASSERT_EQ(out.size(), 2u);
    ExpectClose(Vec<float>(out[0]), c.sum_exp, 3e-6);
    ExpectClose(Vec<float>(out[1]), c.label_logit, 1e-6);
    ExpectClose(Vec<float>(Run1("cross_entropy_grad",
                                {F32(xs, c.x), F32(rs, c.max), F32(rs, c.scale),
                                 F32(rs, c.weight), I64(rs, c.labels)},
                                {DType::kF32, xs}, {{"first_class", AttrInt(10)}})),
                c.grad, 3e-6);
    // The bodies, one lane and a simulated warp per row.
    for (const Lanes lanes : {Lanes::kOne, Lanes::kSim}) {
      std::vector<float> sum_exp(6), label_logit(6);
      portable::CrossEntropySumsBody<float, float, int64_t> sums{
          c.x.data(), c.max.data(), c.labels.data(), sum_exp.data(), label_logit.data(), n, 10};
      if (lanes == Lanes::kSim)
        SimWarpRows(6, sums);
      else
        HostRows(6, sums);
      ExpectClose(sum_exp, c.sum_exp, 3e-6);
      ExpectClose(label_logit, c.label_logit, 1e-6);
    }
    for (const Lanes lanes : {Lanes::kOne, Lanes::kSim}) {
      std::vector<float> grad(c.x.size());
      portable::CrossEntropyGradBody<float, float, int64_t, float> body{
          c.x.data(),      c.max.data(), c.scale.data(), c.weight.data(),
          c.labels.data(), grad.data(),  n,              10};
      if (lanes == Lanes::kSim)
        SimWarpRows(6, body);
      else
        HostRows(6, body);
      ExpectClose(grad, c.grad, 3e-6);
    }
    // bf16 logits read as stored and a bf16 gradient: the f32 result of the
    // rounded logits, rounded once.
    std::vector<bf16_t> xb(c.x.size()), gb(c.x.size());
    std::vector<float> xr(c.x.size());
    for (size_t i = 0; i < c.x.size(); ++i) {
      xb[i].bits = FloatToBF16(c.x[i]);
      xr[i] = BF16ToFloat(xb[i].bits);
    }
    HostRows(6, portable::CrossEntropyGradBody<bf16_t, float, int64_t, bf16_t>{
                    xb.data(), c.max.data(), c.scale.data(), c.weight.data(), c.labels.data(),
                    gb.data(), n, 10});
    std::vector<float> want(c.x.size());
    for (int64_t row = 0; row < 6; ++row) {
      const int64_t k = c.labels[row] - 10;
      for (int64_t j = 0; j < n; ++j) {
        want[row * n + j] = static_cast<float>(
            std::exp(static_cast<double>(xr[row * n + j]) - c.max[row]) * c.scale[row] -
            (k == j ? c.weight[row] : 0.0));
      }
    }
    ExpectHalfClose(gb, want, BF16ToFloat, 1.0f / 128);
  }
  // Labels of the wrong shape: the host kernel's error names them.
  std::vector<Tensor> out;
  const Status st = RunOp(
      "cross_entropy_sums",
      {F32({2, 3}, std::vector<float>(6)), F32({2, 1}, {0, 0}), I64({2}, {0, 0})},
      {{DType::kF32, {2, 1}}, {DType::kF32, {2, 1}}}, {}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("labels are i64[2]"), std::string::npos) << st.message();
}

TEST(PortableNorm, SoftmaxReadsHalfAsStored) {
  // A bf16 x read into an f32 y: the f32 softmax of the widened values, to
  // the bit (the same arithmetic on the same f32 inputs).
  const int64_t n = 100;
  std::vector<float> x = SoftmaxRows(n);
  std::vector<bf16_t> xb(x.size());
  std::vector<float> xr(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xb[i].bits = FloatToBF16(x[i]);
    xr[i] = BF16ToFloat(xb[i].bits);
  }
  for (const Lanes lanes : {Lanes::kOne, Lanes::kSim}) {
    std::vector<float> got(x.size()), want(x.size());
    portable::SoftmaxRowsBody<bf16_t, float> mixed{xb.data(), got.data(), n, false};
    portable::SoftmaxRowsBody<float, float> plain{xr.data(), want.data(), n, false};
    if (lanes == Lanes::kSim) {
      SimWarpRows(6, mixed);
      SimWarpRows(6, plain);
    } else {
      HostRows(6, mixed);
      HostRows(6, plain);
    }
    ExpectClose(got, want, 0.0);
  }
}

TEST(PortableNorm, SoftmaxGradReadsAndWritesHalfAsStored) {
  // An f32 y with dy and dx stored as bf16: the f32 gradient of the widened
  // dy, rounded once; rows and columns.
  struct Case {
    int64_t outer, n, inner;
  };
  for (const Case& c : {Case{6, 100, 1}, Case{3, 40, 5}}) {
    const int64_t count = c.outer * c.n * c.inner;
    std::vector<float> y = RandomUniform<float>(count, 81);
    for (float& v : y) v = 0.5f * (v + 1.0f);
    const std::vector<float> dy = RandomUniform<float>(count, 82);
    std::vector<bf16_t> db(dy.size());
    std::vector<float> dr(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) {
      db[i].bits = FloatToBF16(dy[i]);
      dr[i] = BF16ToFloat(db[i].bits);
    }
    std::vector<bf16_t> got(y.size());
    std::vector<float> want(y.size());
    if (portable::WarpPerRow(c.n, c.inner)) {
      HostRows(c.outer, portable::SoftmaxGradRowsBody<float, bf16_t, bf16_t>{y.data(), db.data(),
                                                                           got.data(), c.n});
      HostRows(c.outer, portable::SoftmaxGradRowsBody<float>{y.data(), dr.data(), want.data(), c.n});
    } else {
      HostFor(c.outer * c.inner, portable::SoftmaxGradColsBody<float, bf16_t, bf16_t>{
                                     y.data(), db.data(), got.data(), c.n, c.inner});
      HostFor(c.outer * c.inner,
              portable::SoftmaxGradColsBody<float>{y.data(), dr.data(), want.data(), c.n, c.inner});
    }
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i].bits, FloatToBF16(want[i])) << "element " << i;
  }
}

// ---- layer_norm -------------------------------------------------------------------

template <typename T>
std::vector<T> BodyLayerNorm(const std::vector<T>& x, const std::vector<T>& scale,
                             const std::vector<T>* bias, const Shape& x_shape, int64_t axis,
                             const Shape& scale_shape, const Shape& bias_shape, double eps,
                             Lanes lanes) {
  const Shape norm(x_shape.begin() + axis, x_shape.end());
  portable::BroadcastMap params;
  EXPECT_TRUE(
      portable::MakeBroadcastMap({scale_shape, bias ? bias_shape : scale_shape}, norm, &params));
  const int64_t n = NumElements(norm), rows = static_cast<int64_t>(x.size()) / n;
  std::vector<T> y(x.size());
  using C = typename portable::Elem<T>::Compute;
  portable::LayerNormBody<T> body{
      x.data(), scale.data(), bias ? bias->data() : nullptr, y.data(), n, static_cast<C>(eps),
      params};
  if (lanes == Lanes::kSim)
    SimWarpRows<8>(rows, body);  // 8 lanes: the same combination, cheaper
  else
    HostRows(rows, body);
  return y;
}

TEST(PortableNorm, LayerNormMatchesHostKernel) {
  struct Case {
    Shape x;
    int64_t axis;
    Shape scale, bias;  // bias {}: none
  };
  const Case cases[] = {
      {{6, 4, 96}, -1, {96}, {96}},
      {{6, 4, 96}, 1, {96}, {4, 1}},  // scale and bias broadcast over [4, 96]
      {{5, 70}, 1, {70}, {}},
      {{3, 5}, -1, {5}, {5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.x) + " axis " + std::to_string(c.axis));
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis;
    std::vector<float> x = RandomUniform<float>(NumElements(c.x), 41);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * x[i] + 0.5f;  // a mean to remove
    const std::vector<float> scale = RandomUniform<float>(NumElements(c.scale), 43);
    const bool has_bias = !c.bias.empty();
    const std::vector<float> bias = RandomUniform<float>(has_bias ? NumElements(c.bias) : 0, 47);
    std::vector<Tensor> in = {F32(c.x, x), F32(c.scale, scale)};
    if (has_bias) in.push_back(F32(c.bias, bias));
    const std::vector<float> want =
        Vec<float>(Run1("layer_norm", in, {DType::kF32, c.x},
                        {{"axis", AttrInt(c.axis)}, {"epsilon", AttrFloat(1e-3)}}));
    for (const Lanes l : {Lanes::kOne, Lanes::kSim}) {
      ExpectClose(BodyLayerNorm<float>(x, scale, has_bias ? &bias : nullptr, c.x, axis, c.scale,
                                       c.bias, 1e-3, l),
                  want, 2e-6);
    }
    // f64, and bf16 against the f32 result of the rounded values.
    const std::vector<double> xd(x.begin(), x.end()), sd(scale.begin(), scale.end()),
        bd(bias.begin(), bias.end());
    std::vector<Tensor> ind = {F64(c.x, xd), F64(c.scale, sd)};
    if (has_bias) ind.push_back(F64(c.bias, bd));
    ExpectClose(BodyLayerNorm<double>(xd, sd, has_bias ? &bd : nullptr, c.x, axis, c.scale, c.bias,
                                      1e-3, Lanes::kOne),
                Vec<double>(Run1("layer_norm", ind, {DType::kF64, c.x},
                                 {{"axis", AttrInt(c.axis)}, {"epsilon", AttrFloat(1e-3)}})),
                1e-13);
    auto bf = [](const std::vector<float>& v, std::vector<bf16_t>* b, std::vector<float>* f) {
      b->resize(v.size());
      f->resize(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        (*b)[i].bits = FloatToBF16(v[i]);
        (*f)[i] = BF16ToFloat((*b)[i].bits);
      }
    };
    std::vector<bf16_t> xb, sb, bb;
    std::vector<float> xf, sf, bfv;
    bf(x, &xb, &xf);
    bf(scale, &sb, &sf);
    bf(bias, &bb, &bfv);
    std::vector<Tensor> inb = {F32(c.x, xf), F32(c.scale, sf)};
    if (has_bias) inb.push_back(F32(c.bias, bfv));
    ExpectHalfClose(BodyLayerNorm<bf16_t>(xb, sb, has_bias ? &bb : nullptr, c.x, axis, c.scale,
                                          c.bias, 1e-3, Lanes::kOne),
                    Vec<float>(Run1("layer_norm", inb, {DType::kF32, c.x},
                                    {{"axis", AttrInt(c.axis)}, {"epsilon", AttrFloat(1e-3)}})),
                    BF16ToFloat, 1.0f / 128);
  }
}

// ---- batch_norm ---------------------------------------------------------------------

TEST(PortableNorm, BatchNormMatchesHostKernel) {
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{4, 3}}) {
    SCOPED_TRACE(ShapeToString(s));
    const int64_t c = 3, n = NumElements(s), spatial = n / (s[0] * c);
    const std::vector<float> x = RandomUniform<float>(n, 53);
    const std::vector<float> scale = RandomUniform<float>(c, 59),
                             bias = RandomUniform<float>(c, 61), mean = RandomUniform<float>(c, 67);
    std::vector<float> var = RandomUniform<float>(c, 71);
    for (float& v : var) v = std::fabs(v) + 0.1f;
    const std::vector<float> want = Vec<float>(Run1(
        "batch_norm", {F32(s, x), F32({c}, scale), F32({c}, bias), F32({c}, mean), F32({c}, var)},
        {DType::kF32, s}, {{"epsilon", AttrFloat(1e-4)}}));
    std::vector<float> mul(c), add(c), y(n);
    HostFor(c, portable::BatchNormFactorsBody<float>{scale.data(), bias.data(), mean.data(),
                                                     var.data(), mul.data(), add.data(), 1e-4});
    HostFor(n,
            portable::BatchNormBody<float>{x.data(), mul.data(), add.data(), y.data(), c, spatial});
    ExpectClose(y, want, 1e-6);
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

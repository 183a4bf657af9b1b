// The CUDA pooling kernels' bodies (portable/pool.h), run on the host as
// cuda/pool.cu launches them, against the host kernels max_pool, avg_pool,
// max_pool_grad, avg_pool_grad, global_max_pool and global_avg_pool: 1-D,
// 2-D and 3-D windows, strides, asymmetric pads and pads wider than the
// window (windows with nothing inside the input), dilations, ceil_mode,
// count_include_pad, ties and NaNs (max_pool_grad's choice of element),
// infinities, f64, bf16/f16, and the global pools with one lane and a
// simulated warp's lanes. f32 and f64 results must be the host's bit for
// bit (the bodies sum in the host's order and precision).
#include <gtest/gtest.h>

#include <random>

#include "conv_util.h"
#include "portable/host_launch.h"
#include "portable/pool.h"
#include "sim_warp.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::HostFor;
using portable::HostRows;
using portable::Window;

// Multiples of 1/256 in [-1, 1]; with `coarse`, one of five values, so that
// windows hold ties.
std::vector<float> Grid(int64_t n, uint32_t seed, bool coarse = false) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> k(-256, 256), few(-2, 2);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = coarse ? static_cast<float>(few(gen)) / 2 : static_cast<float>(k(gen)) / 256;
  return v;
}

struct PoolCase {
  const char* name;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode;
};

const PoolCase kCases[] = {
    {"2x2 stride 2", {2, 3, 8, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0},
    {"3x3 stride 2 pad 1", {1, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0},
    {"3x3 stride 2 pad 1 ceil", {1, 2, 8, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
    {"asymmetric pads, dilation", {2, 2, 7, 8}, {2, 3}, {1, 2}, {1, 0, 0, 2}, {2, 2}, 0},
    {"1d ceil", {3, 2, 10}, {3}, {2}, {1, 1}, {1}, 1},
    {"1d stride above the window", {2, 1, 11}, {2}, {3}, {0, 1}, {1}, 1},
    {"3d", {1, 2, 5, 4, 6}, {2, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 1}, 1},
    {"pads wider than the window", {1, 2, 3, 4}, {1, 2}, {1, 1}, {2, 1, 2, 1}, {1, 1}, 0},
    {"overlapping 3x3 stride 1", {1, 1, 6, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0},
};

proto::Instruction CaseInst(const PoolCase& c) {
  proto::Instruction inst;
  auto& a = *inst.mutable_attrs();
  a["kernel"] = AttrInts(c.kernel);
  a["strides"] = AttrInts(c.strides);
  a["pads"] = AttrInts(c.pads);
  a["dilations"] = AttrInts(c.dilations);
  a["ceil_mode"] = AttrInt(c.ceil_mode);
  return inst;
}

// The window and output shape, as cuda/kernels_pool.cpp derives them from
// the host's ReadSpatial.
Window WindowOf(const PoolCase& c, Shape* y) {
  const proto::Instruction inst = CaseInst(c);
  Spatial sp;
  Status st = ReadSpatial(AttrReader(inst), c.x, c.kernel, c.ceil_mode != 0, &sp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  Window w;
  for (int j = 0; j < 3; ++j) {
    w.in[j] = sp.in[j];
    w.k[j] = sp.k[j];
    w.s[j] = sp.s[j];
    w.d[j] = sp.d[j];
    w.pb[j] = sp.pb[j];
    w.pe[j] = sp.pe[j];
    w.out[j] = sp.out[j];
  }
  *y = {c.x[0], c.x[1]};
  for (int j = 3 - sp.rank; j < 3; ++j) y->push_back(sp.out[j]);
  return w;
}

Tensor HostPoolOp(const std::string& op, const PoolCase& c, bool include_pad,
                  const std::vector<Tensor>& in, const TensorType& out) {
  return Run1(op, in, out,
              {{"kernel", AttrInts(c.kernel)},
               {"strides", AttrInts(c.strides)},
               {"pads", AttrInts(c.pads)},
               {"dilations", AttrInts(c.dilations)},
               {"ceil_mode", AttrInt(c.ceil_mode)},
               {"count_include_pad", AttrInt(include_pad ? 1 : 0)}});
}

// op's body (max_pool, avg_pool, max_pool_grad, avg_pool_grad) on x (and dy).
template <typename T>
std::vector<T> RunBody(const std::string& op, const Window& win, bool include_pad,
                       const std::vector<T>& x, const std::vector<T>& dy, int64_t planes) {
  if (op == "max_pool" || op == "avg_pool") {
    std::vector<T> y(static_cast<size_t>(planes * win.out_size()));
    HostFor(static_cast<int64_t>(y.size()),
            portable::PoolBody<T>{x.data(), y.data(), win, op == "max_pool", include_pad});
    return y;
  }
  std::vector<T> dx(x.size());
  if (op == "avg_pool_grad") {
    HostFor(static_cast<int64_t>(dx.size()),
            portable::AvgPoolGradBody<T>{dy.data(), dx.data(), win, include_pad});
    return dx;
  }
  std::vector<int64_t> arg(static_cast<size_t>(planes * win.out_size()), -7);
  HostFor(static_cast<int64_t>(arg.size()), portable::MaxPoolArgBody<T>{x.data(), arg.data(), win});
  HostFor(static_cast<int64_t>(dx.size()),
          portable::MaxPoolGradBody<T>{dy.data(), arg.data(), dx.data(), win});
  return dx;
}

// Equal values (NaN matching NaN, infinities equal).
template <typename T>
void ExpectSameValues(const std::vector<T>& got, const std::vector<T>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!same) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
      ++bad;
    }
  }
}

const char* const kOps[] = {"max_pool", "avg_pool", "max_pool_grad", "avg_pool_grad"};

// Puts a NaN, +inf and -inf into the first plane (after `skip` elements).
void AddSpecials(std::vector<float>* x, int64_t plane) {
  if (plane >= 5) {
    (*x)[1] = NAN;
    (*x)[3] = INFINITY;
    (*x)[static_cast<size_t>(plane - 1)] = -INFINITY;
  }
}

TEST(PortablePool, BodiesMatchHostKernels) {
  uint32_t seed = 1;
  for (const PoolCase& c : kCases) {
    for (const bool coarse : {false, true}) {
      Shape ys;
      const Window win = WindowOf(c, &ys);
      const int64_t planes = c.x[0] * c.x[1];
      std::vector<float> x = Grid(NumElements(c.x), seed++, coarse);
      const std::vector<float> dy = Grid(NumElements(ys), seed++);
      if (!coarse) AddSpecials(&x, win.in_size());
      const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
      for (const char* op : kOps) {
        const std::string o = op;
        const bool grad = o.find("_grad") != std::string::npos;
        for (const bool include_pad : {false, true}) {
          if (o.find("max") != std::string::npos && include_pad) continue;
          SCOPED_TRACE(std::string(c.name) + ": " + o + (coarse ? ", ties" : ", NaN and inf") +
                       (include_pad ? ", count_include_pad" : ""));
          const Shape out = grad ? c.x : ys;
          std::vector<Tensor> in = {F32(c.x, x)};
          if (grad) in.push_back(F32(ys, dy));
          ExpectSameValues(RunBody<float>(o, win, include_pad, x, dy, planes),
                           Vec<float>(HostPoolOp(o, c, include_pad, in, {DType::kF32, out})),
                           "f32");
          std::vector<Tensor> ind = {F64(c.x, xd)};
          if (grad) ind.push_back(F64(ys, dyd));
          ExpectSameValues(RunBody<double>(o, win, include_pad, xd, dyd, planes),
                           Vec<double>(HostPoolOp(o, c, include_pad, ind, {DType::kF64, out})),
                           "f64");
        }
      }
    }
  }
}

// Windows with nothing inside the input: max gives -inf, avg NaN (or 0
// with count_include_pad, whose divisor counts the pads); they pass no
// gradient.
TEST(PortablePool, WindowsOutsideTheInput) {
  const PoolCase c = {"outside", {1, 1, 3}, {1}, {1}, {2, 2}, {1}, 0};
  Shape ys;
  const Window win = WindowOf(c, &ys);
  ASSERT_EQ(ys, (Shape{1, 1, 7}));
  const std::vector<float> x = {1.0f, -2.0f, 3.0f};
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6, 7};
  const float inf = INFINITY;
  ExpectSameValues(RunBody<float>("max_pool", win, false, x, dy, 1),
                   {-inf, -inf, 1.0f, -2.0f, 3.0f, -inf, -inf}, "max_pool");
  const std::vector<float> avg = RunBody<float>("avg_pool", win, false, x, dy, 1);
  EXPECT_TRUE(std::isnan(avg[0]) && std::isnan(avg[6])) << avg[0] << " " << avg[6];
  ExpectSameValues(RunBody<float>("avg_pool", win, true, x, dy, 1),
                   {0.0f, 0.0f, 1.0f, -2.0f, 3.0f, 0.0f, 0.0f}, "avg_pool include pad");
  ExpectSameValues(RunBody<float>("max_pool_grad", win, false, x, dy, 1), {3, 4, 5},
                   "max_pool_grad");
  for (const char* op : kOps) {
    for (const bool include_pad : {false, true}) {
      const bool grad = std::string(op).find("_grad") != std::string::npos;
      std::vector<Tensor> in = {F32(c.x, x)};
      if (grad) in.push_back(F32(ys, dy));
      ExpectSameValues(RunBody<float>(op, win, include_pad, x, dy, 1),
                       Vec<float>(HostPoolOp(op, c, include_pad, in,
                                             {DType::kF32, grad ? c.x : ys})),
                       op);
    }
  }
}

// max_pool_grad's element: the first maximum of a window in scan order; a
// NaN takes it (the last NaN of the window).
TEST(PortablePool, MaxPoolGradPicksTheHostsElement) {
  const PoolCase c = {"one window", {1, 1, 2, 3}, {2, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0};
  Shape ys;
  const Window win = WindowOf(c, &ys);
  const std::vector<float> dy = {2.5f};
  const std::vector<std::vector<float>> xs = {
      {1, 5, 5, 0, 5, 2},      // first of three ties
      {NAN, 5, 1, NAN, 7, 2},  // the last NaN
      {-1, -1, -1, -1, -1, -1},
  };
  const std::vector<std::vector<float>> want = {
      {0, 2.5f, 0, 0, 0, 0}, {0, 0, 0, 2.5f, 0, 0}, {2.5f, 0, 0, 0, 0, 0}};
  for (size_t i = 0; i < xs.size(); ++i) {
    ExpectSameValues(RunBody<float>("max_pool_grad", win, false, xs[i], dy, 1), want[i],
                     "case " + std::to_string(i));
    ExpectSameValues(
        RunBody<float>("max_pool_grad", win, false, xs[i], dy, 1),
        Vec<float>(HostPoolOp("max_pool_grad", c, false, {F32(c.x, xs[i]), F32(ys, dy)},
                              {DType::kF32, c.x})),
        "host, case " + std::to_string(i));
  }
}

// bf16 / f16 against the host's f32 result of the rounded values: max and
// max_pool_grad (sums of a few gradients, exact in f32) are that result
// rounded once; averages divide in f32 where the host divides in f64, so
// they are within a rounding of it.
template <typename H>
void CheckHalf(uint16_t (*from)(float), float (*to)(uint16_t), const char* type) {
  uint32_t seed = 200;
  for (const PoolCase& c : kCases) {
    Shape ys;
    const Window win = WindowOf(c, &ys);
    const int64_t planes = c.x[0] * c.x[1];
    const std::vector<float> x0 = Grid(NumElements(c.x), seed++, true);
    const std::vector<float> dy0 = Grid(NumElements(ys), seed++);
    std::vector<H> x(x0.size()), dy(dy0.size());
    std::vector<float> xf(x0.size()), dyf(dy0.size());
    for (size_t i = 0; i < x0.size(); ++i) {
      x[i].bits = from(x0[i]);
      xf[i] = to(x[i].bits);
    }
    for (size_t i = 0; i < dy0.size(); ++i) {
      dy[i].bits = from(dy0[i] * 3.0f);  // not exact in bf16: a rounding to check
      dyf[i] = to(dy[i].bits);
    }
    for (const char* op : kOps) {
      for (const bool include_pad : {false, true}) {
        const std::string o = op;
        const bool grad = o.find("_grad") != std::string::npos;
        SCOPED_TRACE(std::string(c.name) + ": " + o + " " + type +
                     (include_pad ? ", count_include_pad" : ""));
        std::vector<Tensor> in = {F32(c.x, xf)};
        if (grad) in.push_back(F32(ys, dyf));
        const std::vector<float> want =
            Vec<float>(HostPoolOp(o, c, include_pad, in, {DType::kF32, grad ? c.x : ys}));
        const std::vector<H> got = RunBody<H>(o, win, include_pad, x, dy, planes);
        ASSERT_EQ(got.size(), want.size());
        const bool exact = o == "max_pool" || o == "max_pool_grad";
        int bad = 0;
        for (size_t i = 0; i < got.size() && bad < 10; ++i) {
          const float g = to(got[i].bits), r = to(from(want[i]));
          bool ok;
          if (std::isnan(want[i]))
            ok = std::isnan(g);
          else if (exact)
            ok = got[i].bits == from(want[i]);
          else  // the rounding of want, or of a value within f32 rounding of it
            ok = g == r || std::fabs(g - want[i]) <= std::fabs(r - want[i]) + 1e-6f * std::fabs(want[i]);
          if (!ok) {
            ADD_FAILURE() << "element " << i << ": got " << g << ", want " << want[i]
                          << " rounded, " << r;
            ++bad;
          }
        }
      }
    }
  }
}

TEST(PortablePool, HalfTypesRoundTheF32Result) {
  CheckHalf<bf16_t>(FloatToBF16, BF16ToFloat, "bf16");
  CheckHalf<f16_t>(FloatToHalf, HalfToFloat, "f16");
}

// ---- global pools -------------------------------------------------------------------

enum class Lanes { kOne, kSim };

template <typename T>
std::vector<T> RunGlobal(bool is_max, const std::vector<T>& x, int64_t planes, int64_t n,
                         Lanes lanes) {
  std::vector<T> y(static_cast<size_t>(planes));
  portable::GlobalPoolBody<T> body{x.data(), y.data(), n, is_max};
  if (lanes == Lanes::kSim)
    SimWarpRows(planes, body);
  else
    HostRows(planes, body);
  return y;
}

TEST(PortablePool, GlobalPoolsMatchHostKernels) {
  for (const Shape& s : {Shape{2, 3, 7, 5}, Shape{3, 2, 100}, Shape{1, 4, 2, 3, 4}, Shape{2, 2, 1}}) {
    SCOPED_TRACE(ShapeToString(s));
    const int64_t planes = s[0] * s[1], n = NumElements(s) / planes;
    std::vector<float> x = Grid(NumElements(s), 7);
    if (n > 4) {
      x[static_cast<size_t>(n + 2)] = NAN;            // plane 1
      x[static_cast<size_t>(2 * n)] = INFINITY;       // plane 2 (when there is one)
      if (planes > 3) x[static_cast<size_t>(3 * n + 1)] = -INFINITY;
    }
    Shape ys = s;
    for (size_t i = 2; i < ys.size(); ++i) ys[i] = 1;
    const std::vector<double> xd(x.begin(), x.end());
    for (const char* op : {"global_max_pool", "global_avg_pool"}) {
      SCOPED_TRACE(op);
      const bool is_max = std::string(op) == "global_max_pool";
      const std::vector<float> want = Vec<float>(Run1(op, {F32(s, x)}, {DType::kF32, ys}));
      // Sums of multiples of 1/256 are exact: any lane order gives the host's.
      for (const Lanes l : {Lanes::kOne, Lanes::kSim})
        ExpectSameValues(RunGlobal<float>(is_max, x, planes, n, l), want, "f32");
      ExpectSameValues(RunGlobal<double>(is_max, xd, planes, n, Lanes::kOne),
                       Vec<double>(Run1(op, {F64(s, xd)}, {DType::kF64, ys})), "f64");
      std::vector<bf16_t> xb(x.size());
      std::vector<float> xbf(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        xb[i].bits = FloatToBF16(x[i]);
        xbf[i] = BF16ToFloat(xb[i].bits);
      }
      const std::vector<float> wantb = Vec<float>(Run1(op, {F32(s, xbf)}, {DType::kF32, ys}));
      const std::vector<bf16_t> gotb = RunGlobal<bf16_t>(is_max, xb, planes, n, Lanes::kSim);
      for (size_t i = 0; i < gotb.size(); ++i) {
        const float g = BF16ToFloat(gotb[i].bits);
        if (std::isnan(wantb[i])) {
          EXPECT_TRUE(std::isnan(g)) << i;
        } else {
          // The mean divides in f32 (the host in f64): equal after rounding
          // to bf16 unless the f32 mean sits on a rounding boundary.
          EXPECT_EQ(gotb[i].bits, FloatToBF16(wantb[i])) << i << ": " << g << " vs " << wantb[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

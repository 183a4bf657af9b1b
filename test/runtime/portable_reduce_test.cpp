// The CUDA reduction kernels' bodies and plans (portable/reduce.h), run on
// the host pass by pass as cuda/reduce.cu launches them, against the host
// kernels (reduce_*, argmax, argmin): every axis set, keepdims, reductions
// over nothing, NaN, the split (two-pass) plans for long rows and long
// columns, bf16/f16 (f32 arithmetic, one rounding), and the 32 lanes of a
// warp simulated (sim_warp.h) for the lanes' combination. Inputs are
// multiples of 1/256 in [-1, 1], whose sums are exact in f32 and f64 at
// these sizes: sums, maxima and minima must match the host bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <type_traits>

#include "portable/host_launch.h"
#include "portable/reduce.h"
#include "sim_warp.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::Elem;
using portable::HostFor;
using portable::HostRows;
using portable::ReduceOp;
using portable::ReducePass;
using portable::ReduceTargets;

std::vector<float> Grid(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> k(-256, 256);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(k(gen)) / 256.0f;
  return v;
}

// ---- running a plan on the host, as cuda::LaunchReducePass does -----------------

template <typename In, typename Out, typename Fold>
void Pass(const ReducePass& p, const void* in, void* out, bool mean, int64_t count, bool sim) {
  using C = typename Elem<In>::Compute;
  const In* x = static_cast<const In*>(in);
  Out* y = static_cast<Out*>(out);
  if constexpr (!std::is_same<Fold, portable::ProdFold>::value) {
    if (p.rows) {
      portable::ReduceRowsBody<In, Out, Fold> body{
          x, y, p.R, p.splits, p.chunk, mean, static_cast<C>(count)};
      if (sim)
        SimWarpRows(p.outer * p.splits, body);
      else
        HostRows(p.outer * p.splits, body);
      return;
    }
  }
  portable::ReduceColsBody<In, Out, Fold> body{x,        y,       p.R,  p.inner,
                                               p.splits, p.chunk, mean, static_cast<C>(count)};
  HostFor(p.outer * p.inner * p.splits, body);
}

template <typename T, typename Fold>
void PassOf(const ReducePass& p, const void* in, bool in_partial, void* out, bool out_partial,
            bool mean, int64_t count, bool sim) {
  using C = typename Elem<T>::Compute;
  if (in_partial && out_partial) return Pass<C, C, Fold>(p, in, out, mean, count, sim);
  if (in_partial) return Pass<C, T, Fold>(p, in, out, mean, count, sim);
  if (out_partial) return Pass<T, C, Fold>(p, in, out, mean, count, sim);
  Pass<T, T, Fold>(p, in, out, mean, count, sim);
}

// The bodies' result for `x` of `shape` reduced over sorted, normalised
// `axes`; *passes receives the plan's length.
template <typename T>
std::vector<T> BodyReduce(ReduceOp op, const std::vector<T>& x, const Shape& shape,
                          const std::vector<int64_t>& axes, const ReduceTargets& targets,
                          bool sim = false, std::vector<ReducePass>* plan_out = nullptr) {
  using C = typename Elem<T>::Compute;
  int64_t count;
  const std::vector<ReducePass> plan = portable::MakeReducePlan(op, shape, axes, targets, &count);
  if (plan_out) *plan_out = plan;
  std::vector<std::vector<C>> temps(plan.size());
  std::vector<T> y(static_cast<size_t>(plan.back().result_elements()));
  const void* in = x.data();
  bool in_partial = false;
  for (size_t k = 0; k < plan.size(); ++k) {
    const bool last = k + 1 == plan.size();
    void* out = y.data();
    if (!last) {
      temps[k].resize(static_cast<size_t>(plan[k].result_elements()));
      out = temps[k].data();
    }
    const bool mean = last && op == ReduceOp::kMean;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        PassOf<T, portable::SumFold>(plan[k], in, in_partial, out, !last, mean, count, sim);
        break;
      case ReduceOp::kMax:
        PassOf<T, portable::MaxFold>(plan[k], in, in_partial, out, !last, mean, count, sim);
        break;
      case ReduceOp::kMin:
        PassOf<T, portable::MinFold>(plan[k], in, in_partial, out, !last, mean, count, sim);
        break;
      case ReduceOp::kProd:
        PassOf<T, portable::ProdFold>(plan[k], in, in_partial, out, !last, mean, count, sim);
        break;
    }
    in = out;
    in_partial = !last;
  }
  return y;
}

struct OpName {
  const char* name;
  ReduceOp op;
};
const OpName kOps[] = {{"reduce_sum", ReduceOp::kSum},
                       {"reduce_mean", ReduceOp::kMean},
                       {"reduce_max", ReduceOp::kMax},
                       {"reduce_min", ReduceOp::kMin},
                       {"reduce_prod", ReduceOp::kProd}};

// Sorted normalised axes (empty: all) and the output shape.
void Normalise(const Shape& shape, const std::vector<int64_t>& raw, bool keepdims,
               std::vector<int64_t>* axes, Shape* out) {
  const int64_t r = static_cast<int64_t>(shape.size());
  axes->clear();
  if (raw.empty())
    for (int64_t i = 0; i < r; ++i) axes->push_back(i);
  for (int64_t a : raw) axes->push_back(a < 0 ? a + r : a);
  std::sort(axes->begin(), axes->end());
  out->clear();
  for (int64_t i = 0; i < r; ++i) {
    if (!std::binary_search(axes->begin(), axes->end(), i))
      out->push_back(shape[static_cast<size_t>(i)]);
    else if (keepdims)
      out->push_back(1);
  }
}

// sum, max, min exact; mean within its last rounding; prod within f32
// accumulation (the host's is in f64).
void ExpectMatch(ReduceOp op, const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else if (op == ReduceOp::kMean || op == ReduceOp::kProd) {
      const float rel = op == ReduceOp::kMean ? 2e-6f : 5e-5f;
      EXPECT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-30f) << "element " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

struct Case {
  Shape shape;
  std::vector<int64_t> axes;  // as the attribute gives them
  int keepdims;
};

// Checks every op on `c` against the host kernel.
void CheckCase(const Case& c, const ReduceTargets& targets, bool sim, uint32_t seed) {
  std::vector<int64_t> axes;
  Shape out;
  Normalise(c.shape, c.axes, c.keepdims != 0, &axes, &out);
  std::vector<float> x = Grid(NumElements(c.shape), seed);
  for (const OpName& o : kOps) {
    SCOPED_TRACE(o.name);
    std::vector<float> in = x;
    // Products of numbers near 1 stay representable.
    if (o.op == ReduceOp::kProd)
      for (float& v : in) v = 1.0f + v / 8.0f;
    const std::vector<float> want =
        Vec<float>(Run1(o.name, {F32(c.shape, in)}, {DType::kF32, out},
                        {{"axes", AttrInts(c.axes)}, {"keepdims", AttrInt(c.keepdims)}}));
    ExpectMatch(o.op, BodyReduce<float>(o.op, in, c.shape, axes, targets, sim), want);
  }
}

const Case kCases[] = {
    {{6, 7, 5}, {1}, 1},
    {{6, 7, 5}, {1}, 0},
    {{6, 7, 5}, {-1}, 1},
    {{6, 7, 5}, {0}, 0},
    {{6, 7, 5}, {0, 2}, 1},
    {{6, 7, 5}, {-3, -1}, 0},
    {{6, 7, 5}, {}, 0},
    {{6, 7, 5}, {0, 1, 2}, 1},
    {{6, 40, 3}, {1}, 1},
    {{3, 2, 4, 5}, {0, 2, 3}, 0},
    {{2, 3, 4, 5}, {1, 3}, 1},
    {{2, 1, 3, 1, 4}, {1, 3}, 0},
    {{2, 1, 3, 1, 4}, {0, 3}, 1},
    {{1, 70}, {1}, 0},
    {{33, 64}, {1}, 0},
    {{}, {}, 1},
    {{5}, {0}, 0},
};

TEST(PortableReduce, BodiesMatchHostKernels) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axes " + ::testing::PrintToString(c.axes) +
                 " keepdims " + std::to_string(c.keepdims));
    CheckCase(c, ReduceTargets(), false, seed++);
  }
}

// Tiny targets split even small reductions: every pass kind, split rows
// and columns, partial results of partial results.
TEST(PortableReduce, SplitPlansMatchHostKernels) {
  ReduceTargets tiny;
  tiny.threads = 8;
  tiny.warps = 2;
  tiny.min_row_chunk = 16;
  tiny.min_col_chunk = 2;
  uint32_t seed = 50;
  for (const Case& c : kCases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axes " + ::testing::PrintToString(c.axes));
    CheckCase(c, tiny, false, seed++);
  }
  // The columns of [500, 3] split (3 outputs, 500 rows).
  std::vector<ReducePass> plan;
  std::vector<float> x = Grid(1500, 7);
  BodyReduce<float>(ReduceOp::kSum, x, {500, 3}, {0}, tiny, false, &plan);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_FALSE(plan[0].rows);
  EXPECT_GT(plan[0].splits, 1);
}

// With the default targets: a scalar grad norm's sum, a few long rows
// (two passes: chunks, then their partial results), and bias gradients
// (few long columns).
TEST(PortableReduce, LongReductionsSplitWithDefaultTargets) {
  struct Long {
    Shape shape;
    std::vector<int64_t> axes;
    bool rows;
  };
  const Long cases[] = {{{3, 70000}, {1}, true}, {{5000, 40}, {0}, false}, {{300, 301}, {}, true}};
  for (const Long& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    const std::vector<float> x = Grid(NumElements(c.shape), 9);
    std::vector<int64_t> axes;
    Shape out;
    Normalise(c.shape, c.axes, false, &axes, &out);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      const char* name = kOps[static_cast<int>(op)].name;
      SCOPED_TRACE(name);
      std::vector<ReducePass> plan;
      const std::vector<float> got =
          BodyReduce<float>(op, x, c.shape, axes, ReduceTargets(), false, &plan);
      ASSERT_EQ(plan.size(), 2u);
      EXPECT_EQ(plan[0].rows, c.rows);
      EXPECT_GT(plan[0].splits, 1);
      EXPECT_EQ(plan[1].R, plan[0].splits);
      ExpectMatch(op, got,
                  Vec<float>(Run1(name, {F32(c.shape, x)}, {DType::kF32, out},
                                  {{"axes", AttrInts(c.axes)}, {"keepdims", AttrInt(0)}})));
    }
  }
}

// Reductions over nothing: sum 0, mean NaN (0/0), max -inf, min +inf,
// prod 1; and an empty output.
TEST(PortableReduce, EmptyReductionsMatchHostKernels) {
  for (const Case& c : {Case{{3, 0, 4}, {1}, 0}, Case{{3, 0}, {1}, 1}, Case{{0, 5}, {1}, 0},
                        Case{{2, 0, 3}, {0, 1}, 0}}) {
    SCOPED_TRACE(ShapeToString(c.shape));
    CheckCase(c, ReduceTargets(), false, 3);
  }
}

TEST(PortableReduce, NanPropagatesAsOnTheHost) {
  const Shape s = {4, 50, 3};
  std::vector<float> x = Grid(600, 11);
  x[7] = NAN;  // row 0 (axis 1 reduction), column 1
  x[3 * 50 + 20] = NAN;
  for (const std::vector<int64_t>& raw : {std::vector<int64_t>{1}, {2}, {0, 2}, {}}) {
    std::vector<int64_t> axes;
    Shape out;
    Normalise(s, raw, false, &axes, &out);
    for (const OpName& o : kOps) {
      SCOPED_TRACE(std::string(o.name) + " axes " + ::testing::PrintToString(raw));
      const std::vector<float> want =
          Vec<float>(Run1(o.name, {F32(s, x)}, {DType::kF32, out},
                          {{"axes", AttrInts(raw)}, {"keepdims", AttrInt(0)}}));
      ExpectMatch(o.op, BodyReduce<float>(o.op, x, s, axes, ReduceTargets()), want);
    }
  }
}

TEST(PortableReduce, F64BodiesMatchHostKernels) {
  const Shape s = {5, 9, 7};
  const std::vector<float> xf = Grid(315, 13);
  const std::vector<double> x(xf.begin(), xf.end());
  std::vector<int64_t> axes;
  Shape out;
  Normalise(s, {0, 2}, true, &axes, &out);
  for (const OpName& o : kOps) {
    SCOPED_TRACE(o.name);
    const std::vector<double> want =
        Vec<double>(Run1(o.name, {F64(s, x)}, {DType::kF64, out}, {{"axes", AttrInts({0, 2})}}));
    const std::vector<double> got = BodyReduce<double>(o.op, x, s, axes, ReduceTargets());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-14 * (1 + std::fabs(want[i]))) << "element " << i;
  }
}

// bf16 and f16 accumulate in f32 (partial results too) and round once: the
// f32 result of the same values, rounded.
TEST(PortableReduce, HalfBodiesRoundTheF32ResultOnce) {
  ReduceTargets tiny;  // split, so partial results travel in f32
  tiny.threads = 8;
  tiny.warps = 2;
  tiny.min_row_chunk = 16;
  tiny.min_col_chunk = 2;
  const Shape s = {6, 300};
  const std::vector<float> x = Grid(1800, 17);  // exact in bf16 and f16
  std::vector<bf16_t> xb(x.size());
  std::vector<f16_t> xh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xb[i].bits = FloatToBF16(x[i]);
    xh[i].bits = FloatToHalf(x[i]);
  }
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {0}, {0, 1}}) {
    std::vector<int64_t> ax;
    Shape out;
    Normalise(s, axes, false, &ax, &out);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      SCOPED_TRACE(std::string(kOps[static_cast<int>(op)].name) + " axes " +
                   ::testing::PrintToString(axes));
      // The exact f32 sum (or extreme) from the host kernel.
      const char* host = op == ReduceOp::kMean ? "reduce_sum" : kOps[static_cast<int>(op)].name;
      std::vector<float> want =
          Vec<float>(Run1(host, {F32(s, x)}, {DType::kF32, out},
                          {{"axes", AttrInts(axes)}, {"keepdims", AttrInt(0)}}));
      if (op == ReduceOp::kMean) {
        int64_t count = 1;
        for (int64_t a : ax) count *= s[static_cast<size_t>(a)];
        for (float& w : want) w = w / static_cast<float>(count);
      }
      for (const bool split : {false, true}) {
        const ReduceTargets t = split ? tiny : ReduceTargets();
        const std::vector<bf16_t> gb = BodyReduce<bf16_t>(op, xb, s, ax, t);
        const std::vector<f16_t> gh = BodyReduce<f16_t>(op, xh, s, ax, t);
        ASSERT_EQ(gb.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ(gb[i].bits, FloatToBF16(want[i])) << "element " << i;
          EXPECT_EQ(gh[i].bits, FloatToHalf(want[i])) << "element " << i;
        }
      }
    }
  }
}

// 32 simulated lanes: the warp's combination of strided shares (rows with
// NaN, split rows whose partial results are rows again).
TEST(PortableReduce, WarpLanesCombineAsOnTheHost) {
  ReduceTargets split;
  split.warps = 4;
  split.min_row_chunk = 100;
  const Shape s = {3, 1000};
  std::vector<float> x = Grid(3000, 19);
  x[1500] = NAN;  // row 1
  for (const ReduceTargets& t : {ReduceTargets(), split}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      const char* name = kOps[static_cast<int>(op)].name;
      SCOPED_TRACE(name);
      std::vector<ReducePass> plan;
      const std::vector<float> got = BodyReduce<float>(op, x, s, {1}, t, true, &plan);
      EXPECT_TRUE(plan[0].rows);
      ExpectMatch(op, got,
                  Vec<float>(Run1(name, {F32(s, x)}, {DType::kF32, {3}},
                                  {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}})));
    }
  }
}

// ---- argmax / argmin ----------------------------------------------------------------

// Runs the argmax body cuda::LaunchArg picks for [outer, n, inner].
std::vector<int64_t> BodyArg(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner,
                             bool is_max, bool last, bool sim) {
  std::vector<int64_t> y(static_cast<size_t>(outer * inner));
  if (inner == 1 && n >= 32) {
    portable::ArgRowsBody<float> body{x.data(), y.data(), n, is_max, last};
    if (sim)
      SimWarpRows<8>(outer, body);  // 8 lanes: the same agreement, cheaper
    else
      HostRows(outer, body);
  } else {
    HostFor(outer * inner,
            portable::ArgColsBody<float>{x.data(), y.data(), n, inner, is_max, last});
  }
  return y;
}

TEST(PortableReduce, ArgBodiesMatchHostKernels) {
  // Few distinct values: many ties. Rows of 70 share out over 32 lanes.
  const int64_t outer = 6, n = 70, inner = 1;
  std::mt19937 gen(23);
  std::uniform_int_distribution<int> k(-3, 3);
  std::vector<float> x(static_cast<size_t>(outer * n));
  for (float& v : x) v = static_cast<float>(k(gen));
  // Row 1: NaNs at 5 and 40; row 2: all -inf; row 3: all equal; row 4: +inf twice.
  x[70 + 5] = NAN;
  x[70 + 40] = NAN;
  for (int64_t j = 0; j < n; ++j) {
    x[2 * 70 + j] = -INFINITY;
    x[3 * 70 + j] = 1.5f;
  }
  x[4 * 70 + 3] = INFINITY;
  x[4 * 70 + 66] = INFINITY;
  x[5 * 70 + 69] = -INFINITY;  // argmin at the end
  const Shape s = {outer, n};
  for (const char* name : {"argmax", "argmin"}) {
    for (int last = 0; last < 2; ++last) {
      SCOPED_TRACE(std::string(name) + " last " + std::to_string(last));
      const std::vector<int64_t> want = Vec<int64_t>(Run1(
          name, {F32(s, x)}, {DType::kI64, {outer}},
          {{"axis", AttrInt(-1)}, {"keepdims", AttrInt(0)}, {"select_last_index", AttrInt(last)}}));
      const bool is_max = std::string(name) == "argmax";
      EXPECT_EQ(BodyArg(x, outer, n, inner, is_max, last != 0, false), want);
      EXPECT_EQ(BodyArg(x, outer, n, inner, is_max, last != 0, true), want);
      // The same values as columns: x^T [n, outer] over axis 0.
      std::vector<float> xt(x.size());
      for (int64_t r = 0; r < outer; ++r)
        for (int64_t j = 0; j < n; ++j) xt[j * outer + r] = x[r * n + j];
      const std::vector<int64_t> want_t =
          Vec<int64_t>(Run1(name, {F32({n, outer}, xt)}, {DType::kI64, {1, outer}},
                            {{"axis", AttrInt(0)}, {"select_last_index", AttrInt(last)}}));
      EXPECT_EQ(want_t, want);
      EXPECT_EQ(BodyArg(xt, 1, n, outer, is_max, last != 0, false), want_t);
    }
  }
  // Short rows (a thread each), axis in the middle.
  const Shape m = {2, 5, 3};
  std::vector<float> y = Grid(30, 29);
  y[4] = NAN;
  for (const char* name : {"argmax", "argmin"}) {
    const std::vector<int64_t> want =
        Vec<int64_t>(Run1(name, {F32(m, y)}, {DType::kI64, {2, 1, 3}}, {{"axis", AttrInt(1)}}));
    EXPECT_EQ(BodyArg(y, 2, 5, 3, std::string(name) == "argmax", false, false), want) << name;
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

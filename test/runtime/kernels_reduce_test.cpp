// Reductions, arg-reductions and normalisations against hand loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

// Reference reduction of a 3-D tensor [2, 3, 4] (values i*0.5-3) over `axes`.
std::vector<float> RefReduce(const std::string& op, const std::vector<int>& axes) {
  const int D[3] = {2, 3, 4};
  bool red[3] = {false, false, false};
  for (int a : axes) red[a] = true;
  int od[3];
  for (int d = 0; d < 3; ++d) od[d] = red[d] ? 1 : D[d];
  std::vector<double> acc(static_cast<size_t>(od[0] * od[1] * od[2]), op == "reduce_prod"  ? 1.0
                                                                      : op == "reduce_max" ? -1e30
                                                                      : op == "reduce_min" ? 1e30
                                                                                           : 0.0);
  std::vector<int> count(acc.size(), 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        double v = ((i * 3 + j) * 4 + k) * 0.5 - 3;
        int o = ((red[0] ? 0 : i) * od[1] + (red[1] ? 0 : j)) * od[2] + (red[2] ? 0 : k);
        if (op == "reduce_prod")
          acc[o] *= v;
        else if (op == "reduce_max")
          acc[o] = std::max(acc[o], v);
        else if (op == "reduce_min")
          acc[o] = std::min(acc[o], v);
        else
          acc[o] += v;
        count[o]++;
      }
  std::vector<float> out;
  for (size_t o = 0; o < acc.size(); ++o) {
    out.push_back(static_cast<float>(op == "reduce_mean" ? acc[o] / count[o] : acc[o]));
  }
  return out;
}

TEST(Reduce, AllOpsAllAxisSets) {
  Tensor x = Iota({2, 3, 4}, 0.5f, -3.0f);
  const std::vector<std::vector<int>> axis_sets = {{0},    {1},    {2},      {0, 1},
                                                   {1, 2}, {0, 2}, {0, 1, 2}};
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
    for (const auto& axes : axis_sets) {
      Shape keep = {2, 3, 4}, drop;
      for (int a : axes) keep[a] = 1;
      for (int d = 0; d < 3; ++d) {
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) drop.push_back(keep[d]);
      }
      std::vector<int64_t> ax(axes.begin(), axes.end());
      std::vector<float> want = RefReduce(op, axes);
      SCOPED_TRACE(StrCat(op, " axes ", ShapeToString(ax)));
      ExpectF32(
          Run1(op, {x}, {DType::kF32, keep}, {{"axes", AttrInts(ax)}, {"keepdims", AttrInt(1)}}),
          keep, want, 1e-4f);
      ExpectF32(
          Run1(op, {x}, {DType::kF32, drop}, {{"axes", AttrInts(ax)}, {"keepdims", AttrInt(0)}}),
          drop, want, 1e-4f);
    }
  }
}

TEST(Reduce, EmptyAxesReducesEverything) {
  Tensor x = Iota({3, 2});
  ExpectF32(Run1("reduce_sum", {x}, {DType::kF32, {}}, {{"keepdims", AttrInt(0)}}), {}, {15});
  ExpectF32(Run1("reduce_max", {x}, {DType::kF32, {1, 1}}), {1, 1}, {5});
}

// Max and min over rows longer than the kernel's 32 running extremes, with
// a tail: against a hand loop, then with a NaN put in each lane position
// (and the tail) of one row, which makes that row's result NaN and no
// other's; infinities are values like any other.
TEST(Reduce, MaxAndMinOfLongRows) {
  const int64_t rows = 3, len = 32 * 5 + 7;
  std::vector<float> v = RandomUniform<float>(rows * len, 11);
  v[len + 40] = std::numeric_limits<float>::infinity();
  v[2 * len + 3] = -std::numeric_limits<float>::infinity();
  auto reduce = [&](const char* op, const std::vector<float>& x) {
    return Vec<float>(Run1(op, {F32({rows, len}, x)}, {DType::kF32, {rows}},
                           {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}}));
  };
  for (bool is_max : {true, false}) {
    const char* op = is_max ? "reduce_max" : "reduce_min";
    SCOPED_TRACE(op);
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r) {
      float best = v[r * len];
      for (int64_t i = 1; i < len; ++i)
        best = is_max ? std::max(best, v[r * len + i]) : std::min(best, v[r * len + i]);
      want.push_back(best);
    }
    EXPECT_EQ(reduce(op, v), want);
    for (int64_t at : {int64_t{0}, int64_t{31}, int64_t{32}, int64_t{77}, len - 1}) {
      SCOPED_TRACE(StrCat("NaN at ", at));
      std::vector<float> x = v;
      x[len + at] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> got = reduce(op, x);
      EXPECT_EQ(got[0], want[0]);
      EXPECT_TRUE(std::isnan(got[1]));
      EXPECT_EQ(got[2], want[2]);
    }
  }
}

TEST(Reduce, IntegersAndWrongDeclaredShape) {
  Tensor x = I64({2, 3}, {1, -2, 3, 4, 5, 7});
  EXPECT_EQ(Vec<int64_t>(Run1("reduce_sum", {x}, {DType::kI64, {2}},
                              {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(Vec<int64_t>(Run1("reduce_mean", {x}, {DType::kI64, {2}},
                              {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{0, 5}));  // 2/3 -> 0, 16/3 -> 5 (truncation)
  EXPECT_EQ(Vec<int64_t>(Run1("reduce_prod", {x}, {DType::kI64, {3}},
                              {{"axes", AttrInts({0})}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{4, -10, 21}));
  std::vector<Tensor> out;
  Status st = RunOp("reduce_sum", {x}, {{DType::kI64, {3}}},
                    {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("declares the output as i64[3]"), std::string::npos) << st.message();
}

// sum_squares (the fused form of reduce_sum(x * x) over every axis) against
// a long-double loop, over more elements than one of its parallel chunks;
// on one and on 4 intra-op threads the result is the same bits.
TEST(Reduce, SumSquares) {
  const int64_t n = 3 * 65536 + 5;
  const std::vector<float> v = RandomUniform<float>(n, 7);
  long double want = 0;
  for (float x : v) want += static_cast<long double>(x) * x;
  const Tensor x = F32({3, n / 3 + 1, 1}, [&] {
    std::vector<float> padded = v;
    padded.resize(static_cast<size_t>(3 * (n / 3 + 1)), 0.0f);
    return padded;
  }());
  auto on = [&](int threads) {
    return Vec<float>(Run1("sum_squares", {x}, {DType::kF32, {}}, {}, threads))[0];
  };
  const float one = on(1);
  EXPECT_NEAR(one, static_cast<double>(want), 1e-6 * static_cast<double>(want));
  EXPECT_EQ(on(4), one);
  const std::vector<double> d = {1.5, -2.0, 1e-3};
  EXPECT_DOUBLE_EQ(Vec<double>(Run1("sum_squares", {F64({3}, d)}, {DType::kF64, {}}))[0],
                   2.25 + 4.0 + 1e-6);
  EXPECT_EQ(Vec<float>(Run1("sum_squares", {F32({0, 4}, {})}, {DType::kF32, {}}))[0], 0.0f);
  std::vector<Tensor> outs;
  Status st = RunOp("sum_squares", {F32({2}, {1, 2})}, {{DType::kF32, {1}}}, {}, &outs);
  EXPECT_FALSE(st.ok());
}

// A bf16 x (a gradient whose cast folded) sums into f32: the same bits on
// 1 and 4 threads, and those of the sum of its f32 cast.
TEST(Reduce, SumSquaresOfBF16) {
  const int64_t n = 2 * 65536 + 2049;
  const std::vector<float> v = RandomUniform<float>(n, 8);
  Tensor x, wide;
  ASSERT_TRUE(Tensor::Allocate(DType::kBF16, {n}, &x).ok());
  ASSERT_TRUE(Tensor::Allocate(DType::kF32, {n}, &wide).ok());
  for (int64_t i = 0; i < n; ++i) {
    x.data<uint16_t>()[i] = FloatToBF16(v[static_cast<size_t>(i)]);
    wide.data<float>()[i] = BF16ToFloat(x.data<uint16_t>()[i]);
  }
  auto on = [&](const Tensor& t, int threads) {
    return Vec<float>(Run1("sum_squares", {t}, {DType::kF32, {}}, {}, threads))[0];
  };
  const float one = on(x, 1);
  EXPECT_EQ(one, on(wide, 1));
  EXPECT_EQ(on(x, 4), one);
  std::vector<Tensor> outs;
  Status st = RunOp("sum_squares", {x}, {{DType::kBF16, {}}}, {}, &outs);
  ASSERT_TRUE(st.ok()) << st.ToString();  // through f32 copies, rounded back
}

TEST(Reduce, Float64Sum) {
  Tensor x = F64({4}, {1e-3, 2e-3, 3e-3, 4e-3});
  EXPECT_NEAR(Vec<double>(Run1("reduce_sum", {x}, {DType::kF64, {1}}))[0], 1e-2, 1e-15);
}

TEST(ArgReduce, FirstOccurrenceAndKeepdims) {
  Tensor x = F32({2, 4}, {1, 5, 5, 0, 7, -1, 7, -1});
  EXPECT_EQ(Vec<int64_t>(Run1("argmax", {x}, {DType::kI64, {2, 1}}, {{"axis", AttrInt(1)}})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Vec<int64_t>(Run1("argmin", {x}, {DType::kI64, {2}},
                              {{"axis", AttrInt(1)}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(Vec<int64_t>(Run1("argmax", {x}, {DType::kI64, {4}},
                              {{"axis", AttrInt(0)}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(
      Vec<int64_t>(Run1(
          "argmax", {x}, {DType::kI64, {2}},
          {{"axis", AttrInt(1)}, {"keepdims", AttrInt(0)}, {"select_last_index", AttrInt(1)}})),
      (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Vec<int64_t>(Run1("argmin", {I32({3}, {4, -9, -9})}, {DType::kI64, {}},
                              {{"axis", AttrInt(0)}, {"keepdims", AttrInt(0)}})),
            (std::vector<int64_t>{1}));
}

std::vector<float> RefSoftmax(const std::vector<float>& x, int outer, int n, int inner, bool log) {
  std::vector<float> y(x.size());
  for (int o = 0; o < outer; ++o)
    for (int i = 0; i < inner; ++i) {
      double m = -1e30, s = 0;
      for (int k = 0; k < n; ++k) m = std::max<double>(m, x[(o * n + k) * inner + i]);
      for (int k = 0; k < n; ++k) s += std::exp(x[(o * n + k) * inner + i] - m);
      for (int k = 0; k < n; ++k) {
        double v = x[(o * n + k) * inner + i] - m;
        y[(o * n + k) * inner + i] = static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
      }
    }
  return y;
}

TEST(Softmax, LastAndMiddleAxis) {
  Tensor x = Iota({2, 3, 4}, 0.7f, -4.0f);
  std::vector<float> xv = Vec<float>(x);
  ExpectF32(Run1("softmax", {x}, {DType::kF32, {2, 3, 4}}, {{"axis", AttrInt(2)}}), {2, 3, 4},
            RefSoftmax(xv, 6, 4, 1, false));
  ExpectF32(Run1("softmax", {x}, {DType::kF32, {2, 3, 4}}, {{"axis", AttrInt(1)}}), {2, 3, 4},
            RefSoftmax(xv, 2, 3, 4, false));
  ExpectF32(Run1("log_softmax", {x}, {DType::kF32, {2, 3, 4}}, {{"axis", AttrInt(2)}}), {2, 3, 4},
            RefSoftmax(xv, 6, 4, 1, true));
  ExpectF32(Run1("log_softmax", {x}, {DType::kF32, {2, 3, 4}}, {{"axis", AttrInt(0)}}), {2, 3, 4},
            RefSoftmax(xv, 1, 2, 12, true));
}

TEST(Softmax, LargeValuesAreStable) {
  ExpectF32(
      Run1("softmax", {F32({3}, {1000, 1000, -1000})}, {DType::kF32, {3}}, {{"axis", AttrInt(0)}}),
      {3}, {0.5f, 0.5f, 0.0f});
}

TEST(LayerNorm, BiasedVarianceWithScaleAndBias) {
  Tensor x = F32({2, 4}, {1, 2, 3, 4, -1, 0, 0, 5});
  Tensor scale = F32({4}, {1, 2, 0.5f, 1}), bias = F32({4}, {0, 1, 0, -1});
  std::vector<float> xv = Vec<float>(x), want;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += xv[r * 4 + i];
    mean /= 4;
    for (int i = 0; i < 4; ++i) var += (xv[r * 4 + i] - mean) * (xv[r * 4 + i] - mean);
    var /= 4;  // biased
    const float s[4] = {1, 2, 0.5f, 1}, b[4] = {0, 1, 0, -1};
    for (int i = 0; i < 4; ++i) {
      want.push_back(
          static_cast<float>((xv[r * 4 + i] - mean) / std::sqrt(var + 1e-5) * s[i] + b[i]));
    }
  }
  ExpectF32(Run1("layer_norm", {x, scale, bias}, {DType::kF32, {2, 4}},
                 {{"axis", AttrInt(1)}, {"epsilon", AttrFloat(1e-5)}}),
            {2, 4}, want);
}

TEST(LayerNorm, OverTwoAxesWithoutBias) {
  Tensor x = Iota({2, 2, 3}, 1.0f, 0.0f);
  Tensor scale = F32({2, 3}, {1, 1, 1, 2, 2, 2});
  std::vector<float> want;
  for (int r = 0; r < 2; ++r) {
    // each row: 6 consecutive values 6r..6r+5, mean 6r+2.5, biased var 35/12
    for (int i = 0; i < 6; ++i) {
      double v = (i - 2.5) / std::sqrt(35.0 / 12 + 0.01);
      want.push_back(static_cast<float>(v * (i < 3 ? 1 : 2)));
    }
  }
  ExpectF32(Run1("layer_norm", {x, scale}, {DType::kF32, {2, 2, 3}},
                 {{"axis", AttrInt(1)}, {"epsilon", AttrFloat(0.01)}}),
            {2, 2, 3}, want);
  // A scale that broadcasts over the normalised shape.
  ExpectF32(Run1("layer_norm", {x, F32({3}, {1, 1, 1})}, {DType::kF32, {2, 2, 3}},
                 {{"axis", AttrInt(1)}, {"epsilon", AttrFloat(0.01)}}),
            {2, 2, 3}, [&] {
              std::vector<float> w;
              for (int r = 0; r < 2; ++r)
                for (int i = 0; i < 6; ++i)
                  w.push_back(static_cast<float>((i - 2.5) / std::sqrt(35.0 / 12 + 0.01)));
              return w;
            }());
}

TEST(BatchNorm, InferenceForm) {
  Tensor x = Iota({2, 2, 3});  // N=2, C=2, L=3
  Tensor scale = F32({2}, {1, 2}), bias = F32({2}, {0, 1}), mean = F32({2}, {1, 10}),
             var = F32({2}, {4, 0.25f});
  std::vector<float> want;
  const float s[2] = {1, 2}, b[2] = {0, 1}, m[2] = {1, 10}, v[2] = {4, 0.25f};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int l = 0; l < 3; ++l) {
        float xv = static_cast<float>((n * 2 + c) * 3 + l);
        want.push_back((xv - m[c]) / std::sqrt(v[c] + 1e-5f) * s[c] + b[c]);
      }
  ExpectF32(Run1("batch_norm", {x, scale, bias, mean, var}, {DType::kF32, {2, 2, 3}},
                 {{"epsilon", AttrFloat(1e-5)}}),
            {2, 2, 3}, want);
}

}  // namespace
}  // namespace distrt

namespace distrt {
namespace {
using namespace distrt::testing;  // NOLINT

TEST(CumSum, InclusiveExclusiveReverseEitherAxis) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto run = [&](int64_t axis, int64_t exclusive, int64_t reverse) {
    return Run1("cumsum", {x}, {DType::kF32, {2, 3}},
                {{"axis", AttrInt(axis)},
                 {"exclusive", AttrInt(exclusive)},
                 {"reverse", AttrInt(reverse)}});
  };
  ExpectF32(run(1, 0, 0), {2, 3}, {1, 3, 6, 4, 9, 15});
  ExpectF32(run(1, 1, 0), {2, 3}, {0, 1, 3, 0, 4, 9});
  ExpectF32(run(-1, 0, 1), {2, 3}, {6, 5, 3, 15, 11, 6});
  ExpectF32(run(1, 1, 1), {2, 3}, {5, 3, 0, 11, 6, 0});
  ExpectF32(run(0, 0, 0), {2, 3}, {1, 2, 3, 5, 7, 9});
  EXPECT_EQ(Vec<int64_t>(Run1("cumsum", {I64({4}, {1, -2, 3, 10})}, {DType::kI64, {4}},
                              {{"axis", AttrInt(0)}, {"reverse", AttrInt(1)}})),
            (std::vector<int64_t>{12, 11, 13, 10}));
  std::vector<Tensor> out;
  Status st = RunOp("cumsum", {x}, {{DType::kF32, {2, 3}}}, {{"axis", AttrInt(2)}}, &out);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace distrt

namespace distrt {
namespace {
using namespace distrt::testing;  // NOLINT

Tensor Einsum(const std::string& eq, const std::vector<Tensor>& in, DType dt, const Shape& s) {
  return Run1("einsum", in, {dt, s}, {{"equation", AttrString(eq)}});
}

// Products that are batched GEMMs (operands and result in any letter
// order), against hand-computed values.
TEST(Einsum, MatmulForms) {
  Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6}), b = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectF32(Einsum("ij,jk->ik", {a, b}, DType::kF32, {2, 2}), {2, 2}, {22, 28, 49, 64});
  ExpectF32(Einsum("ij,jk->ki", {a, b}, DType::kF32, {2, 2}), {2, 2}, {22, 49, 28, 64});
  Tensor at = F32({3, 2}, {1, 4, 2, 5, 3, 6});
  ExpectF32(Einsum("ji,jk->ik", {at, b}, DType::kF32, {2, 2}), {2, 2}, {22, 28, 49, 64});
  ExpectF32(Einsum("bij,bjk->bik", {F32({2, 1, 2}, {1, 2, 5, 6}), F32({2, 2, 1}, {3, 4, 7, 8})},
                   DType::kF32, {2, 1, 1}),
            {2, 1, 1}, {11, 83});
  // An outer product: no summed letter.
  ExpectF32(Einsum("i,j->ij", {F32({2}, {1, 2}), F32({3}, {3, 4, 5})}, DType::kF32, {2, 3}),
            {2, 3}, {3, 4, 5, 6, 8, 10});
  EXPECT_EQ(Vec<double>(Einsum("ij,jk->ik", {F64({2, 2}, {1, 2, 3, 4}), F64({2, 2}, {5, 6, 7, 8})},
                               DType::kF64, {2, 2})),
            (std::vector<double>{19, 22, 43, 50}));
}

// Diagonals, sums within one operand, several operands and integers take
// the general loop.
TEST(Einsum, GeneralForms) {
  Tensor sq = F32({2, 2}, {1, 2, 3, 4}), a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectF32(Einsum("ii->i", {sq}, DType::kF32, {2}), {2}, {1, 4});
  ExpectF32(Einsum("ii->", {sq}, DType::kF32, {}), {}, {5});
  ExpectF32(Einsum("ij->", {a}, DType::kF32, {}), {}, {21});
  ExpectF32(Einsum("ij->j", {a}, DType::kF32, {3}), {3}, {5, 7, 9});
  ExpectF32(Einsum("ij->ji", {a}, DType::kF32, {3, 2}), {3, 2}, {1, 4, 2, 5, 3, 6});
  ExpectF32(Einsum("i,i,i->", {F32({2}, {1, 2}), F32({2}, {3, 4}), F32({2}, {5, 6})},
                   DType::kF32, {}),
            {}, {63});
  // j summed within the first operand alone: (1+2+3)*1 + (4+5+6)*2 per row.
  ExpectF32(Einsum("ij,i->", {a, F32({2}, {1, 2})}, DType::kF32, {}), {}, {36});
  EXPECT_EQ(Vec<int64_t>(Einsum("ij,jk->ik", {I64({2, 2}, {1, 2, 3, 4}), I64({2, 2}, {5, 6, 7, 8})},
                                DType::kI64, {2, 2})),
            (std::vector<int64_t>{19, 22, 43, 50}));
}

TEST(Einsum, RejectsMismatches) {
  std::vector<Tensor> out;
  Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(RunOp("einsum", {a, a}, {{DType::kF32, {2, 2}}},
                     {{"equation", AttrString("ij,jk->ik")}}, &out)
                   .ok());
  EXPECT_FALSE(
      RunOp("einsum", {a}, {{DType::kF32, {2}}}, {{"equation", AttrString("ijk->i")}}, &out).ok());
  EXPECT_FALSE(
      RunOp("einsum", {a}, {{DType::kF32, {2}}}, {{"equation", AttrString("ij")}}, &out).ok());
}

// A two-operand einsum by its definition: every assignment of the letters,
// products summed in double into the result's element.
std::vector<float> ReferenceEinsum(const std::string& a_term, const std::string& b_term,
                                   const std::string& out_term, const std::map<char, int64_t>& size,
                                   const std::vector<float>& a, const std::vector<float>& b) {
  std::string letters;
  for (const auto& [c, n] : size) letters += c;
  auto offset = [&](const std::string& term, const std::map<char, int64_t>& at) {
    int64_t off = 0;
    for (char c : term) off = off * size.at(c) + at.at(c);
    return off;
  };
  int64_t n_out = 1;
  for (char c : out_term) n_out *= size.at(c);
  std::vector<double> out(static_cast<size_t>(n_out), 0.0);
  std::map<char, int64_t> at;
  for (char c : letters) at[c] = 0;
  for (const auto& [c, n] : size) {
    if (n == 0) return std::vector<float>(out.begin(), out.end());  // nothing to sum
  }
  while (true) {
    out[offset(out_term, at)] += static_cast<double>(a[offset(a_term, at)]) * b[offset(b_term, at)];
    size_t d = letters.size();
    while (d > 0 && ++at[letters[d - 1]] == size.at(letters[d - 1])) at[letters[--d]] = 0;
    if (d == 0) break;
  }
  return std::vector<float>(out.begin(), out.end());
}

// The batched-GEMM path of einsum on the equations a mixture of experts
// trains with (GShard's dispatch, experts and combine, and their
// gradients) and on layouts it reads in place, transposed, or copies,
// single-threaded and with the executor's threads taking whole batches
// (3 experts over 3 threads) or rows of each (2 experts over 3 threads).
TEST(Einsum, BatchedProductsMatchTheDefinition) {
  struct Case {
    std::string eq;
    std::map<char, int64_t> size;
  };
  const std::vector<Case> cases = {
      {"gecd,edf->gecf", {{'g', 4}, {'e', 3}, {'c', 8}, {'d', 32}, {'f', 96}}},
      {"gecf,efd->gecd", {{'g', 4}, {'e', 2}, {'c', 8}, {'d', 32}, {'f', 96}}},
      {"gecd,gecf->edf", {{'g', 4}, {'e', 3}, {'c', 8}, {'d', 32}, {'f', 96}}},
      {"gsec,gsd->gecd", {{'g', 2}, {'s', 16}, {'e', 3}, {'c', 4}, {'d', 24}}},
      {"gsec,gecd->gsd", {{'g', 2}, {'s', 16}, {'e', 3}, {'c', 4}, {'d', 24}}},
      {"ji,kj->ik", {{'i', 70}, {'j', 60}, {'k', 80}}},  // both transposed, in place
      {"bij,bkj->bki", {{'b', 3}, {'i', 40}, {'j', 50}, {'k', 60}}},
      {"ij,jk->ik", {{'i', 1}, {'j', 0}, {'k', 5}}},  // an empty sum is 0
  };
  uint32_t seed = 7;
  for (const Case& c : cases) {
    const size_t comma = c.eq.find(','), arrow = c.eq.find("->");
    const std::string at = c.eq.substr(0, comma), bt = c.eq.substr(comma + 1, arrow - comma - 1),
                      ot = c.eq.substr(arrow + 2);
    auto shape = [&](const std::string& term) {
      Shape s;
      for (char l : term) s.push_back(c.size.at(l));
      return s;
    };
    const std::vector<float> a = RandomUniform<float>(NumElements(shape(at)), seed++),
                             b = RandomUniform<float>(NumElements(shape(bt)), seed++);
    const std::vector<float> want = ReferenceEinsum(at, bt, ot, c.size, a, b);
    for (int threads : {1, 3}) {
      std::vector<Tensor> outs;
      Status st = RunOp("einsum", {F32(shape(at), a), F32(shape(bt), b)},
                        {{DType::kF32, shape(ot)}}, {{"equation", AttrString(c.eq)}}, &outs,
                        threads);
      ASSERT_TRUE(st.ok()) << c.eq << ": " << st.ToString();
      const std::vector<float> got = Vec<float>(outs[0]);
      ASSERT_EQ(got.size(), want.size()) << c.eq;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i])))
            << c.eq << " at " << i << " with " << threads << " thread(s)";
      }
    }
  }
}

TEST(TopK, LargestSmallestTiesAndAxis) {
  Tensor x = F32({2, 4}, {3, 1, 3, 2, 0, 5, 5, -1});
  auto run = [&](int64_t k, int64_t axis, int64_t smallest, const Shape& s) {
    return Vec<int64_t>(Run1("top_k", {x}, {DType::kI64, s},
                             {{"k", AttrInt(k)},
                              {"axis", AttrInt(axis)},
                              {"smallest", AttrInt(smallest)}}));
  };
  // Equal values: the lower index first.
  EXPECT_EQ(run(2, 1, 0, {2, 2}), (std::vector<int64_t>{0, 2, 1, 2}));
  EXPECT_EQ(run(2, 1, 1, {2, 2}), (std::vector<int64_t>{1, 3, 3, 0}));
  EXPECT_EQ(run(1, 0, 0, {1, 4}), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(run(4, -1, 0, {2, 4}), (std::vector<int64_t>{0, 2, 3, 1, 1, 2, 0, 3}));
  std::vector<Tensor> out;
  EXPECT_FALSE(RunOp("top_k", {x}, {{DType::kI64, {2, 5}}}, {{"k", AttrInt(5)}, {"axis", AttrInt(1)}},
                     &out)
                   .ok());
}

}  // namespace
}  // namespace distrt

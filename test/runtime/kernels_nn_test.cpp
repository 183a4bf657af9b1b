// matmul, conv and pooling against naive loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

std::vector<float> RefMatmul(const std::vector<float>& a, const std::vector<float>& b, int m, int k,
                             int n) {
  std::vector<float> c(static_cast<size_t>(m * n), 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

TEST(Matmul, TwoD) {
  Tensor a = Iota({3, 4}, 0.5f, -1), b = Iota({4, 5}, -0.25f, 2);
  ExpectF32(Run1("matmul", {a, b}, {DType::kF32, {3, 5}}), {3, 5},
            RefMatmul(Vec<float>(a), Vec<float>(b), 3, 4, 5));
}

TEST(Matmul, BatchBroadcastAndVectors) {
  // a [2, 1, 3, 4] x b [3, 4, 2] -> [2, 3, 3, 2]
  Tensor a = Iota({2, 1, 3, 4}, 0.1f, -1), b = Iota({3, 4, 2}, 0.2f, -2);
  std::vector<float> av = Vec<float>(a), bv = Vec<float>(b), want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      std::vector<float> am(av.begin() + i * 12, av.begin() + i * 12 + 12);
      std::vector<float> bm(bv.begin() + j * 8, bv.begin() + j * 8 + 8);
      auto c = RefMatmul(am, bm, 3, 4, 2);
      want.insert(want.end(), c.begin(), c.end());
    }
  ExpectF32(Run1("matmul", {a, b}, {DType::kF32, {2, 3, 3, 2}}), {2, 3, 3, 2}, want);
  // Shared rhs: [2, 3, 4] x [4, 2] (folded into one GEMM).
  Tensor a3 = Iota({2, 3, 4}, 0.3f, -2);
  std::vector<float> b0(bv.begin(), bv.begin() + 8);
  ExpectF32(Run1("matmul", {a3, F32({4, 2}, b0)}, {DType::kF32, {2, 3, 2}}), {2, 3, 2},
            RefMatmul(Vec<float>(a3), b0, 6, 4, 2));
  // 1-D operands: [4] x [4, 2] -> [2]; [3, 4] x [4] -> [3]; [4] x [4] -> [].
  Tensor v = F32({4}, {1, -1, 2, 0.5f});
  ExpectF32(Run1("matmul", {v, F32({4, 2}, b0)}, {DType::kF32, {2}}), {2},
            RefMatmul(Vec<float>(v), b0, 1, 4, 2));
  Tensor m = Iota({3, 4});
  ExpectF32(Run1("matmul", {m, v}, {DType::kF32, {3}}), {3},
            RefMatmul(Vec<float>(m), Vec<float>(v), 3, 4, 1));
  ExpectF32(Run1("matmul", {v, v}, {DType::kF32, {}}), {}, {1 + 1 + 4 + 0.25f});
  // Batched lhs with a 1-D rhs: [2, 3, 4] x [4] -> [2, 3].
  ExpectF32(Run1("matmul", {a3, v}, {DType::kF32, {2, 3}}), {2, 3},
            RefMatmul(Vec<float>(a3), Vec<float>(v), 6, 4, 1));
}

TEST(Matmul, IntegersFloat64AndErrors) {
  Tensor a = I64({2, 2}, {1, 2, 3, 4}), b = I64({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(Vec<int64_t>(Run1("matmul", {a, b}, {DType::kI64, {2, 2}})),
            (std::vector<int64_t>{19, 22, 43, 50}));
  Tensor c =
      Run1("matmul", {F64({1, 2}, {0.5, 0.25}), F64({2, 1}, {4, 8})}, {DType::kF64, {1, 1}});
  EXPECT_EQ(Vec<double>(c)[0], 4.0);
  std::vector<Tensor> out;
  Status st = RunOp("matmul", {Iota({2, 3}), Iota({2, 3})}, {{DType::kF32, {2, 3}}}, {}, &out);
  EXPECT_NE(st.message().find("inner dimensions differ"), std::string::npos);
  // K = 0 gives zeros.
  ExpectF32(Run1("matmul", {F32({2, 0}, {}), F32({0, 3}, {})}, {DType::kF32, {2, 3}}), {2, 3},
            {0, 0, 0, 0, 0, 0});
}

// ---- conv --------------------------------------------------------------------

struct ConvCfg {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

// Naive N-d (1..3 spatial) convolution.
std::vector<float> RefConv(const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>* bias, const ConvCfg& c, Shape* out_shape) {
  const int r = static_cast<int>(c.x.size()) - 2;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, o[3] = {1, 1, 1};
  for (int i = 0; i < r; ++i) {
    int j = 3 - r + i;
    in[j] = c.x[2 + i];
    k[j] = c.w[2 + i];
    s[j] = c.strides[i];
    d[j] = c.dilations[i];
    pb[j] = c.pads[i];
    pe[j] = c.pads[i + r];
    o[j] = (in[j] + pb[j] + pe[j] - (k[j] - 1) * d[j] - 1) / s[j] + 1;
  }
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], G = c.group, cg = C / G, mg = M / G;
  *out_shape = {N, M};
  for (int i = 0; i < r; ++i) out_shape->push_back(o[3 - r + i]);
  std::vector<float> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t a = 0; a < o[0]; ++a)
        for (int64_t b = 0; b < o[1]; ++b)
          for (int64_t e = 0; e < o[2]; ++e) {
            double acc = bias ? (*bias)[m] : 0.0;
            const int64_t g = m / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t ka = 0; ka < k[0]; ++ka)
                for (int64_t kb = 0; kb < k[1]; ++kb)
                  for (int64_t ke = 0; ke < k[2]; ++ke) {
                    int64_t ia = a * s[0] - pb[0] + ka * d[0], ib = b * s[1] - pb[1] + kb * d[1],
                            ie = e * s[2] - pb[2] + ke * d[2];
                    if (ia < 0 || ia >= in[0] || ib < 0 || ib >= in[1] || ie < 0 || ie >= in[2])
                      continue;
                    const int64_t ch = g * cg + ci;
                    acc += x[(((n * C + ch) * in[0] + ia) * in[1] + ib) * in[2] + ie] *
                           w[(((m * cg + ci) * k[0] + ka) * k[1] + kb) * k[2] + ke];
                  }
            y.push_back(static_cast<float>(acc));
          }
  return y;
}

void CheckConv(const ConvCfg& c, bool with_bias) {
  Tensor x = Iota(c.x, 0.1f, -1.0f), w = Iota(c.w, -0.05f, 0.7f);
  std::vector<float> bias;
  for (int64_t m = 0; m < c.w[0]; ++m) bias.push_back(0.5f * m - 1);
  Shape out;
  std::vector<float> want =
      RefConv(Vec<float>(x), Vec<float>(w), with_bias ? &bias : nullptr, c, &out);
  std::vector<Tensor> ins = {x, w};
  if (with_bias) ins.push_back(F32({c.w[0]}, bias));
  SCOPED_TRACE(StrCat("x ", ShapeToString(c.x), " w ", ShapeToString(c.w), " group ", c.group));
  ExpectF32(Run1("conv", ins, {DType::kF32, out},
                 {{"strides", AttrInts(c.strides)},
                  {"pads", AttrInts(c.pads)},
                  {"dilations", AttrInts(c.dilations)},
                  {"group", AttrInt(c.group)}}),
            out, want, 1e-4f);
}

TEST(Conv, TwoDStridesPadsDilations) {
  CheckConv({{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1}, true);
  CheckConv({{1, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1}, false);
}

TEST(Conv, GroupsAndDepthwise) {
  CheckConv({{1, 4, 5, 5}, {6, 2, 3, 3}, {1, 2}, {0, 1, 1, 0}, {1, 1}, 2}, true);
  CheckConv({{2, 3, 4, 4}, {3, 1, 2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 1}, 3}, true);  // depthwise
}

TEST(Conv, PointwiseOneDAndThreeD) {
  CheckConv({{2, 5, 3, 4}, {7, 5, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1}, true);  // 1x1 fast path
  CheckConv({{2, 3, 9}, {4, 3, 3}, {2}, {1, 2}, {2}, 1}, true);
  CheckConv({{1, 2, 4, 3, 5}, {2, 2, 2, 2, 3}, {1, 1, 2}, {0, 1, 1, 1, 0, 1}, {1, 1, 1}, 1}, false);
}

TEST(Conv, ManyOutputChannelsSplitAcrossThreads) {
  // Single image, mg >= 16: output channels are split across the pool.
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {1, 3, 6, 6});
  int w = b.Input("w", DType::kF32, {40, 3, 3, 3});
  int y = b.Apply("conv", {x, w}, DType::kF32, {1, 40, 4, 4});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "", ".", &p).ok());
  std::unique_ptr<Executor> e;
  ExecutorOptions opts;
  opts.threads = 3;
  ASSERT_TRUE(Executor::Create(p, nullptr, opts, &e).ok());
  Tensor xt = Iota({1, 3, 6, 6}, 0.1f, -1), wt = Iota({40, 3, 3, 3}, 0.01f, -0.5f);
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({xt, wt}, &out).ok());
  Shape os;
  ConvCfg c{{1, 3, 6, 6}, {40, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1};
  ExpectF32(out[0], {1, 40, 4, 4}, RefConv(Vec<float>(xt), Vec<float>(wt), nullptr, c, &os), 1e-4f);
}

TEST(Conv, BadGroupIsAnError) {
  std::vector<Tensor> out;
  Status st = RunOp("conv", {Iota({1, 3, 4, 4}), Iota({4, 3, 1, 1})}, {{DType::kF32, {1, 4, 4, 4}}},
                    {{"group", AttrInt(2)}}, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("group 2"), std::string::npos) << st.message();
}

// ---- pooling -------------------------------------------------------------------

TEST(Pool, MaxAndAvgFloorMode) {
  Tensor x = Iota({1, 1, 4, 4});
  ExpectF32(Run1("max_pool", {x}, {DType::kF32, {1, 1, 2, 2}},
                 {{"kernel", AttrInts({2, 2})}, {"strides", AttrInts({2, 2})}}),
            {1, 1, 2, 2}, {5, 7, 13, 15});
  ExpectF32(Run1("avg_pool", {x}, {DType::kF32, {1, 1, 2, 2}},
                 {{"kernel", AttrInts({2, 2})}, {"strides", AttrInts({2, 2})}}),
            {1, 1, 2, 2}, {2.5f, 4.5f, 10.5f, 12.5f});
  // kernel 3 stride 2 without ceil_mode: a single window.
  ExpectF32(Run1("max_pool", {x}, {DType::kF32, {1, 1, 1, 1}},
                 {{"kernel", AttrInts({3, 3})}, {"strides", AttrInts({2, 2})}}),
            {1, 1, 1, 1}, {10});
}

TEST(Pool, CeilModeAddsPartialWindows) {
  Tensor x = Iota({1, 1, 4, 4});
  ExpectF32(
      Run1(
          "max_pool", {x}, {DType::kF32, {1, 1, 2, 2}},
          {{"kernel", AttrInts({3, 3})}, {"strides", AttrInts({2, 2})}, {"ceil_mode", AttrInt(1)}}),
      {1, 1, 2, 2}, {10, 11, 14, 15});
  // Partial windows average only the elements they cover.
  ExpectF32(
      Run1(
          "avg_pool", {x}, {DType::kF32, {1, 1, 2, 2}},
          {{"kernel", AttrInts({3, 3})}, {"strides", AttrInts({2, 2})}, {"ceil_mode", AttrInt(1)}}),
      {1, 1, 2, 2}, {5, 6.5f, 11, 12.5f});
}

TEST(Pool, CeilModeDropsWindowStartingInEndPadding) {
  // Width 5, kernel 2, stride 2, pads 1/1: ceil gives 4 windows but the 4th
  // would start at index 5 (in the end padding), so it is dropped -> 3.
  Tensor x = F32({1, 1, 5}, {1, 2, 3, 4, 5});
  ExpectF32(Run1("max_pool", {x}, {DType::kF32, {1, 1, 3}},
                 {{"kernel", AttrInts({2})},
                  {"strides", AttrInts({2})},
                  {"pads", AttrInts({1, 1})},
                  {"ceil_mode", AttrInt(1)}}),
            {1, 1, 3}, {1, 3, 5});
  // Width 6, kernel 3, stride 2, pads 1/1, ceil: 4 windows, the last one
  // starts inside the input and is kept.
  Tensor y = F32({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  ExpectF32(Run1("avg_pool", {y}, {DType::kF32, {1, 1, 4}},
                 {{"kernel", AttrInts({3})},
                  {"strides", AttrInts({2})},
                  {"pads", AttrInts({1, 1})},
                  {"ceil_mode", AttrInt(1)}}),
            {1, 1, 4}, {1.5f, 3, 5, 6});
}

TEST(Pool, CountIncludePadAndDilations) {
  Tensor x = F32({1, 1, 3}, {3, 6, 9});
  // Window of 3 with one pad on each side.
  ExpectF32(Run1("avg_pool", {x}, {DType::kF32, {1, 1, 3}},
                 {{"kernel", AttrInts({3})},
                  {"pads", AttrInts({1, 1})},
                  {"count_include_pad", AttrInt(0)}}),
            {1, 1, 3}, {4.5f, 6, 7.5f});
  ExpectF32(Run1("avg_pool", {x}, {DType::kF32, {1, 1, 3}},
                 {{"kernel", AttrInts({3})},
                  {"pads", AttrInts({1, 1})},
                  {"count_include_pad", AttrInt(1)}}),
            {1, 1, 3}, {3, 6, 5});
  // Dilation 2: window {i, i + 2}.
  Tensor z = F32({1, 1, 5}, {1, 9, 2, 8, 3});
  ExpectF32(Run1("max_pool", {z}, {DType::kF32, {1, 1, 3}},
                 {{"kernel", AttrInts({2})}, {"dilations", AttrInts({2})}}),
            {1, 1, 3}, {2, 9, 3});
  // Max pool ignores padding even when every value is negative.
  ExpectF32(Run1("max_pool", {F32({1, 1, 2}, {-5, -7})}, {DType::kF32, {1, 1, 2}},
                 {{"kernel", AttrInts({2})}, {"pads", AttrInts({1, 0})}}),
            {1, 1, 2}, {-5, -5});
}

TEST(Pool, GlobalPools) {
  Tensor x = Iota({2, 3, 2, 2});
  std::vector<float> avg, mx;
  for (int p = 0; p < 6; ++p) {
    avg.push_back(4 * p + 1.5f);
    mx.push_back(4 * p + 3.0f);
  }
  ExpectF32(Run1("global_avg_pool", {x}, {DType::kF32, {2, 3, 1, 1}}), {2, 3, 1, 1}, avg);
  ExpectF32(Run1("global_max_pool", {x}, {DType::kF32, {2, 3, 1, 1}}), {2, 3, 1, 1}, mx);
}

}  // namespace
}  // namespace distrt

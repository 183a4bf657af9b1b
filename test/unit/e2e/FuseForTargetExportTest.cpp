//===- FuseForTargetExportTest.cpp - fused forms, exported and run -*- C++
//-*-===//
//
// dist-fuse-for-target, then export, then the host executor: a transpose of
// a matrix whose only reader is a matmul is not exported (the matmul reads
// the stored matrix with `transpose_lhs` / `transpose_rhs`); a bias add and
// an exact GELU that only the matmul's result feeds are folded into it (a
// third input, `epilogue = "gelu"`). Each case checks the exported
// instructions and runs the program against a result computed here from the
// inputs. Softmax's gradient, as its rule writes it, becomes one
// `softmax_grad`; cross-entropy's loss and gradient become
// `cross_entropy_sums` and `cross_entropy_grad`; a bf16 gradient's cast to
// f32 folds into the optimizer update and the norm's `sum_squares`. The
// host kernels run every form the cpu target description claims; the
// `none` target fuses nothing and computes the same.
//
//===----------------------------------------------------------------------===//
#include "ExportAndRun.h"
#include "distopt/Fusion/TargetDescription.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace distopt;
using namespace distopt::testing;

namespace {

/// C = op(A) op(B) from the stored matrices.
std::vector<float> product(const distrt::Tensor &a, bool ta,
                           const distrt::Tensor &b, bool tb) {
  const int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  const float *pa = a.data<float>(), *pb = b.data<float>();
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? pa[p * m + i] : pa[i * k + p]) *
             double(tb ? pb[j * k + p] : pb[p * n + j]);
      c[static_cast<size_t>(i * n + j)] = static_cast<float>(s);
    }
  return c;
}

void expectNear(const distrt::Tensor &got, const std::vector<float> &want) {
  ASSERT_EQ(static_cast<size_t>(got.num_elements()), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], 1e-4) << "element " << i;
}

TEST(MatMulTransposeExport, WeightOfALinearLayer) {
  // x @ transpose(w), as torch exports a Linear: no transpose runs.
  Exported e =
      exportAndRun(R"(
func.func @main(%x: tensor<37x20xf32>, %w: tensor<45x20xf32>) -> tensor<37x45xf32> {
  %wt = nn.transpose %w perm [1, 0] : tensor<45x20xf32> -> tensor<20x45xf32>
  %y = nn.matmul %x, %wt : tensor<37x20xf32>, tensor<20x45xf32> -> tensor<37x45xf32>
  return %y : tensor<37x45xf32>
})",
                   {randomMatrix({37, 20}, 1), randomMatrix({45, 20}, 2)});
  EXPECT_EQ(e.ops, std::vector<std::string>{"matmul"});
  EXPECT_EQ(e.matmulFlags["transpose_rhs"], 1);
  EXPECT_EQ(e.matmulFlags.count("transpose_lhs"), 0u);
  ASSERT_EQ(e.outputs.size(), 1u);
  expectNear(e.outputs[0], product(randomMatrix({37, 20}, 1), false,
                                   randomMatrix({45, 20}, 2), true));
}

TEST(MatMulTransposeExport, BothOperandsOfAWeightGradient) {
  // d^T x: the gradient of a transposed weight.
  Exported e =
      exportAndRun(R"(
func.func @main(%d: tensor<33x12xf32>, %x: tensor<12x33xf32>) -> tensor<12x12xf32> {
  %dt = nn.transpose %d perm [1, 0] : tensor<33x12xf32> -> tensor<12x33xf32>
  %xt = nn.transpose %x perm [1, 0] : tensor<12x33xf32> -> tensor<33x12xf32>
  %y = nn.matmul %dt, %xt : tensor<12x33xf32>, tensor<33x12xf32> -> tensor<12x12xf32>
  return %y : tensor<12x12xf32>
})",
                   {randomMatrix({33, 12}, 3), randomMatrix({12, 33}, 4)});
  EXPECT_EQ(e.ops, std::vector<std::string>{"matmul"});
  EXPECT_EQ(e.matmulFlags["transpose_lhs"], 1);
  EXPECT_EQ(e.matmulFlags["transpose_rhs"], 1);
  ASSERT_EQ(e.outputs.size(), 1u);
  expectNear(e.outputs[0], product(randomMatrix({33, 12}, 3), true,
                                   randomMatrix({12, 33}, 4), true));
}

TEST(MatMulTransposeExport, TransposeReadTwiceIsKept) {
  // The transposed matrix is also a result: it must exist.
  Exported e =
      exportAndRun(R"(
func.func @main(%x: tensor<9x20xf32>, %w: tensor<11x20xf32>) -> (tensor<9x11xf32>, tensor<20x11xf32>) {
  %wt = nn.transpose %w perm [1, 0] : tensor<11x20xf32> -> tensor<20x11xf32>
  %y = nn.matmul %x, %wt : tensor<9x20xf32>, tensor<20x11xf32> -> tensor<9x11xf32>
  return %y, %wt : tensor<9x11xf32>, tensor<20x11xf32>
})",
                   {randomMatrix({9, 20}, 5), randomMatrix({11, 20}, 6)});
  EXPECT_EQ(e.ops, (std::vector<std::string>{"transpose", "matmul"}));
  EXPECT_EQ(e.matmulFlags.count("transpose_rhs"), 0u);
  ASSERT_EQ(e.outputs.size(), 2u);
  expectNear(e.outputs[0], product(randomMatrix({9, 20}, 5), false,
                                   randomMatrix({11, 20}, 6), true));
}

TEST(MatMulTransposeExport, BatchedLhsReadsATransposedMatrix) {
  // A batch of activations against a transposed weight: one tall product.
  Exported e =
      exportAndRun(R"(
func.func @main(%x: tensor<3x5x20xf32>, %w: tensor<45x20xf32>) -> tensor<3x5x45xf32> {
  %wt = nn.transpose %w perm [1, 0] : tensor<45x20xf32> -> tensor<20x45xf32>
  %y = nn.matmul %x, %wt : tensor<3x5x20xf32>, tensor<20x45xf32> -> tensor<3x5x45xf32>
  return %y : tensor<3x5x45xf32>
})",
                   {[] {
                      distrt::Tensor t = randomMatrix({15, 20}, 7), r;
                      EXPECT_TRUE(t.Reshaped({3, 5, 20}, &r).ok());
                      return r;
                    }(),
                    randomMatrix({45, 20}, 8)});
  EXPECT_EQ(e.ops, std::vector<std::string>{"matmul"});
  EXPECT_EQ(e.matmulFlags["transpose_rhs"], 1);
  ASSERT_EQ(e.outputs.size(), 1u);
  expectNear(e.outputs[0], product(randomMatrix({15, 20}, 7), false,
                                   randomMatrix({45, 20}, 8), true));
}

// Large enough that two threads split the product: by columns (few rows,
// a transposed rhs), then by rows (a transposed lhs).
TEST(MatMulTransposeExport, SplitAcrossThreads) {
  Exported cols =
      exportAndRun(R"(
func.func @main(%x: tensor<64x1100xf32>, %w: tensor<200x1100xf32>) -> tensor<64x200xf32> {
  %wt = nn.transpose %w perm [1, 0] : tensor<200x1100xf32> -> tensor<1100x200xf32>
  %y = nn.matmul %x, %wt : tensor<64x1100xf32>, tensor<1100x200xf32> -> tensor<64x200xf32>
  return %y : tensor<64x200xf32>
})",
                   {randomMatrix({64, 1100}, 9), randomMatrix({200, 1100}, 10)},
                   /*threads=*/2);
  EXPECT_EQ(cols.matmulFlags["transpose_rhs"], 1);
  ASSERT_EQ(cols.outputs.size(), 1u);
  expectNear(cols.outputs[0], product(randomMatrix({64, 1100}, 9), false,
                                      randomMatrix({200, 1100}, 10), true));
  Exported rows =
      exportAndRun(R"(
func.func @main(%a: tensor<64x600xf32>, %b: tensor<64x64xf32>) -> tensor<600x64xf32> {
  %at = nn.transpose %a perm [1, 0] : tensor<64x600xf32> -> tensor<600x64xf32>
  %y = nn.matmul %at, %b : tensor<600x64xf32>, tensor<64x64xf32> -> tensor<600x64xf32>
  return %y : tensor<600x64xf32>
})",
                   {randomMatrix({64, 600}, 11), randomMatrix({64, 64}, 12)},
                   /*threads=*/2);
  EXPECT_EQ(rows.matmulFlags["transpose_lhs"], 1);
  ASSERT_EQ(rows.outputs.size(), 1u);
  expectNear(rows.outputs[0], product(randomMatrix({64, 600}, 11), true,
                                      randomMatrix({64, 64}, 12), false));
}

/// gelu?(x w + b) in double, from the inputs.
std::vector<float> linear(const distrt::Tensor &x,
                          const distrt::Tensor &w,
                          const std::vector<float> &bias, bool gelu) {
  std::vector<float> y = product(x, false, w, false);
  const size_t n = bias.size();
  for (size_t i = 0; i < y.size(); ++i) {
    double v = double(y[i]) + bias[i % n];
    y[i] = static_cast<float>(
        gelu ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))) : v);
  }
  return y;
}

const char *kLinearGelu = R"(
func.func @main(%x: tensor<40x24xf32>, %w: tensor<24x300xf32>) -> (tensor<40x300xf32>, tensor<40x300xf32>) {
  %b = nn.constant dense<0.25> : tensor<300xf32>
  %m = nn.matmul %x, %w : tensor<40x24xf32>, tensor<24x300xf32> -> tensor<40x300xf32>
  %h = nn.add %b, %m : tensor<300xf32>, tensor<40x300xf32> -> tensor<40x300xf32>
  %g = nn.gelu %h : tensor<40x300xf32>
  return %g, %RESULT2 : tensor<40x300xf32>, tensor<40x300xf32>
})";

std::string withSecondResult(const std::string &v) {
  std::string text = kLinearGelu;
  text.replace(text.find("%RESULT2"), 8, v);
  return text;
}

TEST(MatMulEpilogueExport, BiasAndGeluFoldIntoTheMatmul) {
  // The second result is the GELU again: nothing reads %m or %h but the
  // next op, so one matmul instruction computes gelu(x w + b).
  std::vector<distrt::Tensor> in = {randomMatrix({40, 24}, 21),
                                        randomMatrix({24, 300}, 22)};
  Exported e = exportAndRun(withSecondResult("%g"), in, 2);
  EXPECT_EQ(e.ops, std::vector<std::string>{"matmul"});
  EXPECT_EQ(e.matmulInputs, 3);
  EXPECT_EQ(e.epilogue, "gelu");
  ASSERT_EQ(e.outputs.size(), 2u);
  expectNear(e.outputs[0],
             linear(in[0], in[1], std::vector<float>(300, 0.25f), true));
}

TEST(MatMulEpilogueExport, GeluWhoseInputIsReadElsewhereStays) {
  // %h is a result too (as a training step's backward reads a GELU's
  // input): the bias still folds, the GELU runs on its own.
  std::vector<distrt::Tensor> in = {randomMatrix({40, 24}, 23),
                                        randomMatrix({24, 300}, 24)};
  Exported e = exportAndRun(withSecondResult("%h"), in);
  EXPECT_EQ(e.ops, (std::vector<std::string>{"matmul", "gelu"}));
  EXPECT_EQ(e.matmulInputs, 3);
  EXPECT_EQ(e.epilogue, "");
  ASSERT_EQ(e.outputs.size(), 2u);
  std::vector<float> bias(300, 0.25f);
  expectNear(e.outputs[0], linear(in[0], in[1], bias, true));
  expectNear(e.outputs[1], linear(in[0], in[1], bias, false));
}

TEST(MatMulEpilogueExport, ProductReadElsewhereFoldsNothing) {
  std::vector<distrt::Tensor> in = {randomMatrix({40, 24}, 25),
                                        randomMatrix({24, 300}, 26)};
  Exported e = exportAndRun(withSecondResult("%m"), in);
  EXPECT_EQ(e.ops, (std::vector<std::string>{"matmul", "add", "gelu"}));
  EXPECT_EQ(e.matmulInputs, 2);
  ASSERT_EQ(e.outputs.size(), 2u);
  expectNear(e.outputs[0],
             linear(in[0], in[1], std::vector<float>(300, 0.25f), true));
}

TEST(MatMulEpilogueExport, BiasComputedAfterTheProductIsAnAdd) {
  // The bias is computed after the matmul in program order: the matmul
  // cannot read it, the add stays (the GELU still folds into nothing).
  std::vector<distrt::Tensor> in = {randomMatrix({8, 24}, 27),
                                        randomMatrix({24, 300}, 28),
                                        randomMatrix({1, 300}, 29)};
  Exported e = exportAndRun(R"(
func.func @main(%x: tensor<8x24xf32>, %w: tensor<24x300xf32>, %c: tensor<1x300xf32>) -> tensor<8x300xf32> {
  %m = nn.matmul %x, %w : tensor<8x24xf32>, tensor<24x300xf32> -> tensor<8x300xf32>
  %b = nn.reshape %c : tensor<1x300xf32> -> tensor<300xf32>
  %h = nn.add %m, %b : tensor<8x300xf32>, tensor<300xf32> -> tensor<8x300xf32>
  return %h : tensor<8x300xf32>
})",
                            in);
  EXPECT_EQ(e.ops, (std::vector<std::string>{"matmul", "reshape", "add"}));
  EXPECT_EQ(e.matmulInputs, 2);
  ASSERT_EQ(e.outputs.size(), 1u);
  expectNear(e.outputs[0], linear(in[0], in[1],
                                  std::vector<float>(in[2].data<float>(),
                                                     in[2].data<float>() + 300),
                                  false));
}

const char *kLinearLayerGelu = R"(
func.func @main(%x: tensor<40x24xf32>, %w: tensor<300x24xf32>) -> tensor<40x300xf32> {
  %b = nn.constant dense<0.25> : tensor<300xf32>
  %wt = nn.transpose %w perm [1, 0] : tensor<300x24xf32> -> tensor<24x300xf32>
  %m = nn.matmul %x, %wt : tensor<40x24xf32>, tensor<24x300xf32> -> tensor<40x300xf32>
  %h = nn.add %m, %b : tensor<40x300xf32>, tensor<300xf32> -> tensor<40x300xf32>
  %g = nn.gelu %h : tensor<40x300xf32>
  return %g : tensor<40x300xf32>
})";

/// The stored weight `w` [n, k] as the [k, n] matrix a linear layer reads.
distrt::Tensor transposed(const distrt::Tensor &w) {
  const int64_t n = w.shape()[0], k = w.shape()[1];
  std::vector<float> v(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      v[static_cast<size_t>(j * n + i)] = w.data<float>()[i * k + j];
  return *distrt::Tensor::FromVector<float>({k, n}, v);
}

TEST(FuseForTarget, EachTargetExportsTheFormsItsDescriptionClaims) {
  // The same linear layer for every target: the matmul instruction carries
  // exactly the forms the target claims, and the numbers are the same.
  std::vector<distrt::Tensor> in = {randomMatrix({40, 24}, 31),
                                    randomMatrix({300, 24}, 32)};
  std::vector<float> want = linear(in[0], transposed(in[1]),
                                   std::vector<float>(300, 0.25f), true);
  for (const TargetDescription &target : targetDescriptions()) {
    SCOPED_TRACE(target.name.str());
    Exported e = exportAndRun(kLinearLayerGelu, in, 1, target.name.str());
    std::vector<std::string> ops;
    if (!target.matmulTransposedOperands)
      ops.push_back("transpose");
    ops.push_back("matmul");
    if (!target.matmulBias)
      ops.push_back("add");
    if (!target.matmulBias || !target.matmulGelu)
      ops.push_back("gelu");
    EXPECT_EQ(e.ops, ops);
    EXPECT_EQ(e.matmulFlags.count("transpose_rhs"),
              target.matmulTransposedOperands ? 1u : 0u);
    EXPECT_EQ(e.matmulInputs, target.matmulBias ? 3 : 2);
    EXPECT_EQ(e.epilogue,
              target.matmulBias && target.matmulGelu ? "gelu" : "");
    ASSERT_EQ(e.outputs.size(), 1u);
    expectNear(e.outputs[0], want);
  }
}

TEST(FuseForTarget, NoneFusesNothing) {
  const TargetDescription *none = lookupTargetDescription("none");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->matmulTransposedOperands || none->matmulBias ||
               none->matmulGelu);
}

TEST(FuseForTarget, HostKernelsTakeF64Epilogues) {
  // The cpu target claims bias and GELU epilogues on f64 products too: the
  // host kernel runs them, against the same product in double here.
  const TargetDescription *cpu = lookupTargetDescription("cpu");
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->matmulBias && cpu->matmulGelu);
  mlir::MLIRContext probe;
  ASSERT_TRUE(cpu->epilogueTakes(mlir::Float64Type::get(&probe)));
  std::mt19937 gen(41);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(6 * 5), w(5 * 7);
  for (double &v : x)
    v = u(gen);
  for (double &v : w)
    v = u(gen);
  Exported e = exportAndRun(R"(
func.func @main(%x: tensor<6x5xf64>, %w: tensor<5x7xf64>) -> tensor<6x7xf64> {
  %b = nn.constant dense<-0.5> : tensor<7xf64>
  %m = nn.matmul %x, %w : tensor<6x5xf64>, tensor<5x7xf64> -> tensor<6x7xf64>
  %h = nn.add %m, %b : tensor<6x7xf64>, tensor<7xf64> -> tensor<6x7xf64>
  %g = nn.gelu %h : tensor<6x7xf64>
  return %g : tensor<6x7xf64>
})",
                            {*distrt::Tensor::FromVector<double>({6, 5}, x),
                             *distrt::Tensor::FromVector<double>({5, 7}, w)});
  EXPECT_EQ(e.ops, std::vector<std::string>{"matmul"});
  EXPECT_EQ(e.matmulInputs, 3);
  EXPECT_EQ(e.epilogue, "gelu");
  ASSERT_EQ(e.outputs.size(), 1u);
  ASSERT_EQ(e.outputs[0].num_elements(), 42);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j) {
      double v = -0.5;
      for (int p = 0; p < 5; ++p)
        v += x[i * 5 + p] * w[p * 7 + j];
      double want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(e.outputs[0].data<double>()[i * 7 + j], want, 1e-12);
    }
}

TEST(SoftmaxGradExport, OneInstructionMatchesTheRule) {
  // The rule's four ops become one softmax_grad on cpu (the same values as
  // the four ops on `none`), against y * (dy - sum(dy * y)) in double here.
  const char *text = R"(
func.func @main(%y: tensor<6x40xf32>, %dy: tensor<6x40xf32>) -> tensor<6x40xf32> {
  %p = nn.mul %dy, %y : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %s = nn.reduce_sum %p axes [1] keepdims : tensor<6x40xf32> -> tensor<6x1xf32>
  %d = nn.sub %dy, %s : tensor<6x40xf32>, tensor<6x1xf32> -> tensor<6x40xf32>
  %dx = nn.mul %y, %d : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  return %dx : tensor<6x40xf32>
})";
  distrt::Tensor y = randomMatrix({6, 40}, 51), dy = randomMatrix({6, 40}, 52);
  Exported fused = exportAndRun(text, {y, dy});
  Exported plain = exportAndRun(text, {y, dy}, 1, "none");
  EXPECT_EQ(fused.ops, std::vector<std::string>{"softmax_grad"});
  EXPECT_EQ(plain.ops, (std::vector<std::string>{"mul", "reduce_sum", "sub", "mul"}));
  std::vector<float> want(240);
  for (int r = 0; r < 6; ++r) {
    double s = 0;
    for (int c = 0; c < 40; ++c)
      s += double(dy.data<float>()[r * 40 + c]) * y.data<float>()[r * 40 + c];
    for (int c = 0; c < 40; ++c)
      want[r * 40 + c] = static_cast<float>(y.data<float>()[r * 40 + c] *
                                            (dy.data<float>()[r * 40 + c] - s));
  }
  ASSERT_EQ(fused.outputs.size(), 1u);
  ASSERT_EQ(plain.outputs.size(), 1u);
  expectNear(fused.outputs[0], want);
  expectNear(plain.outputs[0], want);
}

/// Cross-entropy's ops as the training step builds them (TrainingStep.cpp)
/// over logits [6, 40] whose classes are `first`, first + 1, ...; `lt` is
/// the logits' element type (bf16: widened for the loss, the gradient
/// narrowed back, as the bf16 policy writes them).
std::string crossEntropyText(int64_t first, const std::string &lt) {
  std::string ids;
  for (int64_t c = 0; c < 40; ++c)
    ids += (c ? ", " : "") + std::to_string(first + c);
  std::string widen =
      lt == "f32" ? "%l = nn.identity %x : tensor<6x40xf32>"
                  : "%l = nn.cast %x : tensor<6x40x" + lt + "> -> tensor<6x40xf32>";
  std::string narrow = lt == "f32"
                           ? "%gx = nn.identity %g : tensor<6x40xf32>"
                           : "%gx = nn.cast %g : tensor<6x40xf32> -> tensor<6x40x" + lt + ">";
  return R"(
func.func @main(%x: tensor<6x40x)" + lt + R"(>, %r: tensor<6x1xi64>, %f: tensor<6x1xf32>, %w: tensor<6x1xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x40x)" + lt + R"(>) {
  )" + widen + R"(
  %m = nn.reduce_max %l axes [1] keepdims : tensor<6x40xf32> -> tensor<6x1xf32>
  %z = nn.sub %l, %m : tensor<6x40xf32>, tensor<6x1xf32> -> tensor<6x40xf32>
  %e = nn.exp %z : tensor<6x40xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<6x40xf32> -> tensor<6x1xf32>
  %ids = nn.constant dense<[)" + ids + R"(]> : tensor<40xi64>
  %oh = nn.equal %r, %ids : tensor<6x1xi64>, tensor<40xi64> -> tensor<6x40xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<6x40xi1>, tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<6x40xf32> -> tensor<6x1xf32>
  %sc = nn.mul %e, %f : tensor<6x40xf32>, tensor<6x1xf32> -> tensor<6x40xf32>
  %d = nn.sub %sc, %w : tensor<6x40xf32>, tensor<6x1xf32> -> tensor<6x40xf32>
  %g = nn.where %oh, %d, %sc : tensor<6x40xi1>, tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  )" + narrow + R"(
  return %s, %zl, %gx : tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x40x)" + lt + R"(>
})";
}

struct CrossEntropyCase {
  distrt::Tensor logits, labels, scale, weight;
  std::vector<float> sumExp, labelLogit, grad; // computed here, in double
};

/// Random logits and per-row factors; labels in the share, outside it, and
/// ignored (-100). The expected values follow the op's definition.
CrossEntropyCase crossEntropyCase(int64_t first) {
  CrossEntropyCase c;
  c.logits = randomMatrix({6, 40}, 61);
  float *x = c.logits.data<float>();
  for (int i = 0; i < 240; ++i)
    x[i] *= 6.f;
  std::vector<int64_t> labels = {first + 3, first + 39, -100, first + 40,
                                 first - 1, first};
  c.labels = *distrt::Tensor::FromVector<int64_t>({6, 1}, labels);
  distrt::Tensor f = randomMatrix({6, 1}, 62), w = randomMatrix({6, 1}, 63);
  c.scale = f;
  c.weight = w;
  for (int r = 0; r < 6; ++r) {
    double m = x[r * 40];
    for (int j = 0; j < 40; ++j)
      m = std::max(m, double(x[r * 40 + j]));
    double s = 0;
    for (int j = 0; j < 40; ++j)
      s += std::exp(x[r * 40 + j] - m);
    int64_t k = labels[r] - first;
    bool in = k >= 0 && k < 40;
    c.sumExp.push_back(static_cast<float>(s));
    c.labelLogit.push_back(in ? static_cast<float>(x[r * 40 + k] - m) : 0.f);
    for (int j = 0; j < 40; ++j)
      c.grad.push_back(static_cast<float>(
          std::exp(x[r * 40 + j] - m) * f.data<float>()[r] -
          (in && j == k ? w.data<float>()[r] : 0.0)));
  }
  return c;
}

TEST(CrossEntropyExport, TwoInstructionsMatchTheLoss) {
  // The loss's eleven ops over the logits become cross_entropy_sums and
  // cross_entropy_grad on cpu; `none` runs them as written. Both against
  // the definition in double, for the whole vocabulary and for a rank's
  // share of it (classes 20 to 59).
  for (int64_t first : {0, 20}) {
    SCOPED_TRACE("first class " + std::to_string(first));
    CrossEntropyCase c = crossEntropyCase(first);
    std::vector<distrt::Tensor> in = {c.logits, c.labels, c.scale, c.weight};
    std::string text = crossEntropyText(first, "f32");
    Exported fused = exportAndRun(text, in);
    Exported plain = exportAndRun(text, in, 1, "none");
    EXPECT_EQ(fused.ops,
              (std::vector<std::string>{"identity", "reduce_max",
                                        "cross_entropy_sums",
                                        "cross_entropy_grad", "identity"}));
    EXPECT_EQ(std::count(plain.ops.begin(), plain.ops.end(), "where"), 2);
    for (Exported *e : {&fused, &plain}) {
      ASSERT_EQ(e->outputs.size(), 3u);
      expectNear(e->outputs[0], c.sumExp);
      expectNear(e->outputs[1], c.labelLogit);
      expectNear(e->outputs[2], c.grad);
    }
  }
}

TEST(CrossEntropyExport, CudaFormReadsBf16LogitsAsStored) {
  // On cuda the casts around the loss fold in: the instructions read bf16
  // logits and write a bf16 gradient. The host runs that program too
  // (through f32 copies), with the cpu form's values to the last bit.
  CrossEntropyCase c = crossEntropyCase(0);
  std::vector<distrt::bf16_t> stored;
  for (int i = 0; i < 240; ++i)
    stored.push_back(distrt::bf16_t{distrt::FloatToBF16(c.logits.data<float>()[i])});
  distrt::Tensor logits = *distrt::Tensor::FromVector<distrt::bf16_t>({6, 40}, stored);
  std::vector<distrt::Tensor> in = {logits, c.labels, c.scale, c.weight};
  std::string text = crossEntropyText(0, "bf16");
  Exported cuda = exportAndRun(text, in, 1, "cuda");
  Exported cpu = exportAndRun(text, in);
  EXPECT_EQ(cuda.ops,
            (std::vector<std::string>{"reduce_max", "cast",
                                      "cross_entropy_sums",
                                      "cross_entropy_grad"}));
  EXPECT_EQ(cpu.ops,
            (std::vector<std::string>{"cast", "reduce_max",
                                      "cross_entropy_sums",
                                      "cross_entropy_grad", "cast"}));
  ASSERT_EQ(cuda.outputs.size(), 3u);
  ASSERT_EQ(cpu.outputs.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(cuda.outputs[k].Equals(cpu.outputs[k]))
        << "output " << k << ": " << cuda.outputs[k].DebugString() << " vs "
        << cpu.outputs[k].DebugString();
  }
}

TEST(SoftmaxExport, CudaFoldsABf16PolicysCasts) {
  // The bf16 policy's f32 softmax in attention, forward and backward: on
  // cuda the widening casts and the gradient's narrowing cast fold into
  // softmax and softmax_grad. The host runs that program too, with the cpu
  // form's values to the last bit.
  const char *text = R"(
func.func @main(%s: tensor<2x3x8x40xbf16>, %dyb: tensor<2x3x8x40xbf16>) -> (tensor<2x3x8x40xbf16>, tensor<2x3x8x40xbf16>) {
  %x = nn.cast %s : tensor<2x3x8x40xbf16> -> tensor<2x3x8x40xf32>
  %y = nn.softmax %x axis 3 : tensor<2x3x8x40xf32>
  %yb = nn.cast %y : tensor<2x3x8x40xf32> -> tensor<2x3x8x40xbf16>
  %dy = nn.cast %dyb : tensor<2x3x8x40xbf16> -> tensor<2x3x8x40xf32>
  %p = nn.mul %dy, %y : tensor<2x3x8x40xf32>, tensor<2x3x8x40xf32> -> tensor<2x3x8x40xf32>
  %sum = nn.reduce_sum %p axes [3] keepdims : tensor<2x3x8x40xf32> -> tensor<2x3x8x1xf32>
  %d = nn.sub %dy, %sum : tensor<2x3x8x40xf32>, tensor<2x3x8x1xf32> -> tensor<2x3x8x40xf32>
  %dx = nn.mul %y, %d : tensor<2x3x8x40xf32>, tensor<2x3x8x40xf32> -> tensor<2x3x8x40xf32>
  %dxb = nn.cast %dx : tensor<2x3x8x40xf32> -> tensor<2x3x8x40xbf16>
  return %yb, %dxb : tensor<2x3x8x40xbf16>, tensor<2x3x8x40xbf16>
})";
  auto bf16Random = [](uint32_t seed, float scale) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<distrt::bf16_t> v(2 * 3 * 8 * 40);
    for (distrt::bf16_t &x : v)
      x.bits = distrt::FloatToBF16(u(gen));
    return *distrt::Tensor::FromVector<distrt::bf16_t>({2, 3, 8, 40}, v);
  };
  std::vector<distrt::Tensor> in = {bf16Random(91, 6.f), bf16Random(92, 1.f)};
  Exported cuda = exportAndRun(text, in, 1, "cuda");
  Exported cpu = exportAndRun(text, in);
  EXPECT_EQ(cuda.ops, (std::vector<std::string>{"softmax", "cast", "softmax_grad"}));
  EXPECT_EQ(cpu.ops, (std::vector<std::string>{"cast", "softmax", "cast", "cast",
                                               "softmax_grad", "cast"}));
  ASSERT_EQ(cuda.outputs.size(), 2u);
  ASSERT_EQ(cpu.outputs.size(), 2u);
  for (int k = 0; k < 2; ++k)
    EXPECT_TRUE(cuda.outputs[k].Equals(cpu.outputs[k])) << "output " << k;
}

} // namespace

namespace {

/// Attention's scores as GPT-2 exports them, scaled and causally masked,
/// the softmax, and the gradient rule's ops with the mask's where and the
/// scale's product after them; in `t` (f32, or bf16 with the softmax in
/// f32 as a bf16 policy writes it).
std::string attentionText(const std::string &t) {
  bool half = t != "f32";
  std::string s = "tensor<2x3x8x40x" + t + ">", f = "tensor<2x3x8x40xf32>";
  // A bf16 policy's casts into and out of the f32 softmax.
  std::string widen = half ? "%xf = nn.cast %w : " + s + " -> " + f : "";
  std::string widenDy = half ? "%dy = nn.cast %dyt : " + s + " -> " + f : "";
  std::string narrow = half ? "%gt = nn.cast %g : " + f + " -> " + s : "";
  std::string xf = half ? "%xf" : "%w", dy = half ? "%dy" : "%dyt",
              gt = half ? "%gt" : "%g";
  return R"(
func.func @main(%s: )" +
         s + R"(, %m: tensor<1x1x8x40xi1>, %dyt: )" + s + R"() -> ()" + f +
         ", " + s + R"() {
  %c = nn.constant dense<1.250000e-01> : tensor<)" +
         t + R"(>
  %fill = nn.constant dense<)" +
         (half ? "0xFF80" : "0xFF800000") + R"(> : tensor<)" + t + R"(>
  %x = nn.mul %s, %c : )" +
         s + ", tensor<" + t + "> -> " + s + R"(
  %w = nn.where %m, %fill, %x : tensor<1x1x8x40xi1>, tensor<)" +
         t + ">, " + s + " -> " + s + R"(
  )" + widen +
         R"(
  %y = nn.softmax )" +
         xf + " axis 3 : " + f + R"(
  )" + widenDy +
         R"(
  %p = nn.mul )" +
         dy + ", %y : " + f + ", " + f + " -> " + f + R"(
  %sum = nn.reduce_sum %p axes [3] keepdims : )" +
         f + R"( -> tensor<2x3x8x1xf32>
  %d = nn.sub )" +
         dy + ", %sum : " + f + R"(, tensor<2x3x8x1xf32> -> )" + f + R"(
  %g = nn.mul %y, %d : )" +
         f + ", " + f + " -> " + f + R"(
  )" + narrow +
         R"(
  %zero = nn.constant dense<0.000000e+00> : tensor<)" +
         t + R"(>
  %gw = nn.where %m, %zero, )" +
         gt + " : tensor<1x1x8x40xi1>, tensor<" + t + ">, " + s + " -> " + s +
         R"(
  %dx = nn.mul %gw, %c : )" +
         s + ", tensor<" + t + "> -> " + s + R"(
  return %y, %dx : )" +
         f + ", " + s + R"(
})";
}

/// A causal mask [1, 1, 8, 40] (query i sees keys up to 32 + i) and random
/// scores and gradients in `dtype`.
std::vector<distrt::Tensor> attentionInputs(distrt::DType dtype) {
  distrt::Tensor mask;
  EXPECT_TRUE(
      distrt::Tensor::Allocate(distrt::DType::kBool, {1, 1, 8, 40}, &mask)
          .ok());
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 40; ++j)
      mask.data<uint8_t>()[i * 40 + j] = j > 32 + i ? 1 : 0;
  auto random = [&](uint32_t seed, float scale) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(2 * 3 * 8 * 40);
    for (float &x : v)
      x = u(gen);
    if (dtype == distrt::DType::kF32)
      return *distrt::Tensor::FromVector<float>({2, 3, 8, 40}, v);
    std::vector<distrt::bf16_t> b(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      b[i].bits = distrt::FloatToBF16(v[i]);
    return *distrt::Tensor::FromVector<distrt::bf16_t>({2, 3, 8, 40}, b);
  };
  return {random(95, 40.f), mask, random(96, 1.f)};
}

TEST(SoftmaxExport, AttentionsScaleAndMaskFoldIntoTheSoftmax) {
  // f32: one softmax and one softmax_grad instruction on either target,
  // with the values of the ops they stand for to the last bit.
  std::vector<distrt::Tensor> in = attentionInputs(distrt::DType::kF32);
  Exported plain = exportAndRun(attentionText("f32"), in, 1, "none");
  for (const char *target : {"cpu", "cuda"}) {
    SCOPED_TRACE(target);
    Exported fused = exportAndRun(attentionText("f32"), in, 1, target);
    EXPECT_EQ(fused.ops, (std::vector<std::string>{"softmax", "softmax_grad"}));
    ASSERT_EQ(fused.outputs.size(), 2u);
    ASSERT_EQ(plain.outputs.size(), 2u);
    EXPECT_TRUE(fused.outputs[0].Equals(plain.outputs[0]));
    // The gradient's row sum: softmax_grad accumulates in double, the
    // unfused reduce_sum in f32.
    const distrt::Tensor &dx = fused.outputs[1], &want = plain.outputs[1];
    for (int64_t i = 0; i < want.num_elements(); ++i)
      ASSERT_NEAR(dx.data<float>()[i], want.data<float>()[i], 1e-6)
          << "element " << i;
  }
  EXPECT_EQ(std::count(plain.ops.begin(), plain.ops.end(), "where"), 2);
}

TEST(SoftmaxExport, CudaReadsBf16ScoresThroughTheScaleAndMask) {
  // A bf16 policy: on cuda the scale and mask fold with the casts into two
  // instructions; the cpu form keeps the bf16 ops. The host runs the cuda
  // form through f32 copies, whose scaled scores are not rounded to bf16:
  // within a bf16 rounding of the scores (scores of up to 5 after the
  // scale: probabilities within 5 * 2^-8 relative).
  std::vector<distrt::Tensor> in = attentionInputs(distrt::DType::kBF16);
  Exported cuda = exportAndRun(attentionText("bf16"), in, 1, "cuda");
  Exported cpu = exportAndRun(attentionText("bf16"), in, 1, "cpu");
  EXPECT_EQ(cuda.ops, (std::vector<std::string>{"softmax", "softmax_grad"}));
  EXPECT_EQ(std::count(cpu.ops.begin(), cpu.ops.end(), "where"), 2);
  ASSERT_EQ(cuda.outputs.size(), 2u);
  ASSERT_EQ(cpu.outputs.size(), 2u);
  const distrt::Tensor &y = cuda.outputs[0], &want = cpu.outputs[0];
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_NEAR(y.data<float>()[i], want.data<float>()[i],
                0.02 * want.data<float>()[i] + 1e-6)
        << "element " << i;
}

} // namespace

namespace {

TEST(GeluGradExport, OneInstructionMatchesTheRule) {
  // The exact GELU's gradient rule's eleven ops become one gelu_grad on
  // cpu, with the rule's values (the host's erf and exp are vectorised
  // approximations in both).
  const char *text = R"(
func.func @main(%x: tensor<6x40xf32>, %dy: tensor<6x40xf32>) -> tensor<6x40xf32> {
  %c1 = nn.constant dense<0.707106769> : tensor<f32>
  %t = nn.mul %x, %c1 : tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  %e = nn.erf %t : tensor<6x40xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %one, %e : tensor<f32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %h = nn.mul %half, %a : tensor<f32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %c2 = nn.constant dense<0.398942292> : tensor<f32>
  %m = nn.constant dense<-5.000000e-01> : tensor<f32>
  %q = nn.mul %x, %x : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %q2 = nn.mul %q, %m : tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  %ex = nn.exp %q2 : tensor<6x40xf32>
  %p = nn.mul %ex, %c2 : tensor<6x40xf32>, tensor<f32> -> tensor<6x40xf32>
  %xp = nn.mul %x, %p : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %d = nn.add %h, %xp : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  %dx = nn.mul %dy, %d : tensor<6x40xf32>, tensor<6x40xf32> -> tensor<6x40xf32>
  return %dx : tensor<6x40xf32>
})";
  distrt::Tensor x = randomMatrix({6, 40}, 71), dy = randomMatrix({6, 40}, 72);
  for (int64_t i = 0; i < x.num_elements(); ++i)
    x.data<float>()[i] *= 4.f;
  Exported fused = exportAndRun(text, {x, dy});
  Exported plain = exportAndRun(text, {x, dy}, 1, "none");
  EXPECT_EQ(fused.ops, std::vector<std::string>{"gelu_grad"});
  EXPECT_EQ(plain.ops.size(), 11u);
  ASSERT_EQ(fused.outputs.size(), 1u);
  ASSERT_EQ(plain.outputs.size(), 1u);
  const float *got = fused.outputs[0].data<float>(),
              *want = plain.outputs[0].data<float>();
  for (int64_t i = 0; i < 240; ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
        << "element " << i;
}

TEST(GradientWideningExport, UpdateAndNormReadTheBf16Gradient) {
  // A bf16 policy's gradient, widened for the norm and Adam: on cpu no cast
  // is exported and the update is the one of the cast, bit for bit; the
  // norm is sum_squares' (squares summed in double), near the ops'.
  const char *text = R"(
func.func @main(%p: tensor<64x40xf32>, %g: tensor<64x40xbf16>, %m: tensor<64x40xf32>, %v: tensor<64x40xf32>)
    -> (tensor<f32>, tensor<64x40xf32>, tensor<64x40xf32>, tensor<64x40xf32>) {
  %s = nn.constant dense<0.5> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %step = nn.constant dense<0.01> : tensor<f32>
  %w = nn.cast %g : tensor<64x40xbf16> -> tensor<64x40xf32>
  %n = nn.identity %w {nn.gradient_of = "w"} : tensor<64x40xf32>
  %sq = nn.mul %n, %n : tensor<64x40xf32>, tensor<64x40xf32> -> tensor<64x40xf32>
  %norm = nn.reduce_sum %sq axes [0, 1] : tensor<64x40xf32> -> tensor<f32>
  %p1, %m1, %v1 = nn.adam_update %p, %n, %m, %v, %s, %one, %step, %one {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<64x40xf32>, tensor<64x40xf32>, tensor<64x40xf32>, tensor<64x40xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<64x40xf32>, tensor<64x40xf32>, tensor<64x40xf32>)
  return %norm, %p1, %m1, %v1 : tensor<f32>, tensor<64x40xf32>, tensor<64x40xf32>, tensor<64x40xf32>
})";
  distrt::Tensor p = randomMatrix({64, 40}, 81),
                 g32 = randomMatrix({64, 40}, 82);
  distrt::Tensor m = randomMatrix({64, 40}, 83), v = randomMatrix({64, 40}, 84);
  for (int64_t i = 0; i < v.num_elements(); ++i)
    v.data<float>()[i] = std::fabs(v.data<float>()[i]);
  distrt::Tensor g;
  ASSERT_TRUE(
      distrt::Tensor::Allocate(distrt::DType::kBF16, {64, 40}, &g).ok());
  for (int64_t i = 0; i < g.num_elements(); ++i)
    g.data<uint16_t>()[i] = distrt::FloatToBF16(g32.data<float>()[i]);
  Exported fused = exportAndRun(text, {p, g, m, v});
  Exported plain = exportAndRun(text, {p, g, m, v}, 1, "none");
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "cast"), 0);
  EXPECT_EQ(std::count(fused.ops.begin(), fused.ops.end(), "sum_squares"), 1);
  EXPECT_EQ(std::count(plain.ops.begin(), plain.ops.end(), "cast"), 1);
  ASSERT_EQ(fused.outputs.size(), 4u);
  ASSERT_EQ(plain.outputs.size(), 4u);
  for (size_t k = 1; k < 4; ++k)
    EXPECT_TRUE(fused.outputs[k].Equals(plain.outputs[k])) << "output " << k;
  double want = 0;
  for (int64_t i = 0; i < g.num_elements(); ++i) {
    const double x = distrt::BF16ToFloat(g.data<uint16_t>()[i]);
    want += x * x;
  }
  EXPECT_NEAR(fused.outputs[0].data<float>()[0], want, 1e-6 * want);
  EXPECT_NEAR(plain.outputs[0].data<float>()[0], want, 1e-5 * want);
}

} // namespace

//===- MatMulTransposeExportTest.cpp - transposes a matmul reads through
//---===//
//
// A transpose of a matrix whose only reader is a matmul is not exported: the
// matmul reads the stored matrix with `transpose_lhs` / `transpose_rhs`. Each
// case checks the exported instructions and runs the program against a
// product computed here from the untransposed inputs.
//
//===----------------------------------------------------------------------===//
#include "distopt/Export/RankProgramExport.h"
#include "distopt/InitAll.h"

#include "distrt/distrt.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>
#include <random>

using namespace distopt;

namespace {

struct Exported {
  std::vector<std::string> ops;
  std::map<std::string, int64_t> matmulFlags;
  std::vector<distrt::HostTensor> outputs;
};

distrt::HostTensor randomMatrix(const distrt::Shape &shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
  for (float &x : v)
    x = u(gen);
  return *distrt::HostTensor::FromVector<float>(shape, v);
}

Exported exportAndRun(const std::string &text,
                      const std::vector<distrt::HostTensor> &inputs,
                      int threads = 1) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  EXPECT_TRUE(module);
  Exported e;
  if (!module)
    return e;
  auto proto = exportRankProgram(*module, 0, ExportOptions());
  EXPECT_TRUE(succeeded(proto));
  if (failed(proto))
    return e;
  for (const auto &inst : proto->instructions()) {
    e.ops.push_back(inst.op());
    if (inst.op() == "matmul")
      for (const auto &[name, a] : inst.attrs())
        e.matmulFlags[name] = a.i();
  }
  std::shared_ptr<const distrt::Program> program;
  distrt::Status st = distrt::Program::Create(*proto, "<memory>", "", &program);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<distrt::Executor> exec;
  distrt::ExecutorOptions options;
  options.threads = threads;
  st = distrt::Executor::Create(program, nullptr, options, &exec);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!exec)
    return e;
  st = exec->Run(inputs, &e.outputs);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

/// C = op(A) op(B) from the stored matrices.
std::vector<float> product(const distrt::HostTensor &a, bool ta,
                           const distrt::HostTensor &b, bool tb) {
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

void expectNear(const distrt::HostTensor &got, const std::vector<float> &want) {
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
                      distrt::HostTensor t = randomMatrix({15, 20}, 7), r;
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

} // namespace

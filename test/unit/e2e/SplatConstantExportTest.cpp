//===- SplatConstantExportTest.cpp - large splats made where read -*- C++ -*-===//
//
// A splat constant of 64 KiB or more is not stored in the rank program: an
// `expand` of its one element makes it just before its first reader (a run
// value, which that reader may take over). An embedding's gradient, a
// scatter-add into zeros, computes what it did with the zeros stored.
//
//===----------------------------------------------------------------------===//
#include "ExportAndRun.h"

#include <algorithm>

using namespace distopt::testing;

namespace {

/// The gradient of a [rows, 64] f32 embedding table from 6 rows' updates
/// (the gradient of gathering rows `ids`):
/// a scatter-add into a zero constant of the table's shape.
std::string embeddingGradient(int64_t rows) {
  std::string t = "tensor<" + std::to_string(rows) + "x64xf32>";
  return R"(
func.func @main(%ids: tensor<6xi64>, %g: tensor<6x64xf32>, %x: tensor<6x64xf32>) -> ()" + t + R"(, tensor<6x64xf32>) {
  %y = nn.mul %x, %g : tensor<6x64xf32>, tensor<6x64xf32> -> tensor<6x64xf32>
  %zeros = nn.constant dense<0.000000e+00> : )" + t + R"(
  %dw = nn.scatter_add %zeros, %ids, %g axis 0 : ()" + t + R"(, tensor<6xi64>, tensor<6x64xf32>) -> )" + t + R"(
  return %dw, %y : )" + t + R"(, tensor<6x64xf32>
})";
}

TEST(SplatConstantExport, LargeSplatIsAnExpandBeforeItsReader) {
  // Rows 0 and 2 twice: their updates add up.
  std::vector<int64_t> ids = {0, 37, 2, 0, 199, 2};
  std::vector<distrt::Tensor> in = {
      *distrt::Tensor::FromVector<int64_t>({6}, ids),
      randomMatrix({6, 64}, 7), randomMatrix({6, 64}, 8)};
  // 300 x 64 f32: 75 KiB, made by an expand; 200 x 64: 50 KiB, stored.
  Exported large = exportAndRun(embeddingGradient(300), in);
  Exported small = exportAndRun(embeddingGradient(200), in);
  EXPECT_EQ(large.ops,
            (std::vector<std::string>{"mul", "expand", "scatter_add"}));
  EXPECT_EQ(large.constantBytes, 4u) << "only the splat's one element";
  EXPECT_EQ(small.ops, (std::vector<std::string>{"mul", "scatter_add"}));
  EXPECT_EQ(small.constantBytes, 200u * 64 * 4);
  // The sums, against the updates added up here.
  for (const Exported *e : {&large, &small}) {
    ASSERT_EQ(e->outputs.size(), 2u);
    const distrt::Tensor &dw = e->outputs[0];
    int64_t rows = dw.shape()[0];
    std::vector<float> want(static_cast<size_t>(rows * 64), 0.f);
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 64; ++c)
        want[ids[r] * 64 + c] += in[1].data<float>()[r * 64 + c];
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(dw.data<float>()[i], want[i]) << "element " << i;
  }
}

TEST(SplatConstantExport, SplatReadInTwoBlocksOrReturnedIsStored) {
  // Returned as it is: stored (the expand would have no reader to go before).
  Exported returned = exportAndRun(R"(
func.func @main() -> tensor<300x64xf32> {
  %zeros = nn.constant dense<1.500000e+00> : tensor<300x64xf32>
  return %zeros : tensor<300x64xf32>
})",
                                   {});
  EXPECT_TRUE(returned.ops.empty());
  EXPECT_EQ(returned.constantBytes, 300u * 64 * 4);
  ASSERT_EQ(returned.outputs.size(), 1u);
  EXPECT_EQ(returned.outputs[0].data<float>()[300 * 64 - 1], 1.5f);
}

} // namespace

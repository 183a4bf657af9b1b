//===- LoopSumExportTest.cpp - a loop's sums added as they are made -*- C++
//-*-===//
//
// The exporter writes each of a microbatch loop's sums as an `add` of the
// running sum right after the op that makes what it adds (eager
// accumulation: a microbatch's gradients join the sums as the backward
// makes them), and the runtime's sum takes the add's result at once; a
// value made before the loop is added at the body's end.
//
//===----------------------------------------------------------------------===//
#include "ExportAndRun.h"

using namespace distopt::testing;

namespace {

// Per microbatch: a = x * x (made first), c = (x + x) * (x + x) (made
// last), and w itself, made before the loop.
const char *kLoop = R"(
func.func @main(%w: tensor<2x4xf32>, %x0: tensor<2x4xf32>, %x1: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %a, %c, %ws = nn.microbatch_loop (%mb) count 2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> {
    %x = nn.microbatch_select %mb, %x0, %x1 : tensor<2x4xf32>
    %sq = nn.mul %x, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %twice = nn.add %x, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %last = nn.mul %twice, %twice : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    nn.microbatch_yield %sq, %last, %w : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
  return %a, %c, %ws : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
})";

TEST(LoopSumExport, EachSumIsAddedRightAfterItsValue) {
  std::vector<distrt::Tensor> in = {randomMatrix({2, 4}, 1),
                                    randomMatrix({2, 4}, 2),
                                    randomMatrix({2, 4}, 3)};
  Exported e = exportAndRun(kLoop, in);
  EXPECT_EQ(e.ops, (std::vector<std::string>{
                       "microbatch_loop", "microbatch_select", "mul", "add",
                       "add", "mul", "add", "add", "microbatch_yield"}));
  ASSERT_EQ(e.outputs.size(), 3u);
  for (int64_t i = 0; i < 8; ++i) {
    const float x0 = in[1].data<float>()[i], x1 = in[2].data<float>()[i];
    EXPECT_FLOAT_EQ(e.outputs[0].data<float>()[i], x0 * x0 + x1 * x1) << i;
    EXPECT_FLOAT_EQ(e.outputs[1].data<float>()[i], 4 * x0 * x0 + 4 * x1 * x1)
        << i;
    EXPECT_FLOAT_EQ(e.outputs[2].data<float>()[i], 2 * in[0].data<float>()[i])
        << i;
  }
}

} // namespace

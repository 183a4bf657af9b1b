// The CUDA cast kernel (cuda/kernels_cast.cpp) against the host executor for
// every pair of dtypes, on the values where conversions differ (NaN,
// infinities, truncation, the integer limits and one past them, f16
// overflow, rounding): integers and bools byte for byte, floats exactly
// (NaN as any NaN: the device may give its canonical bits). This is where
// the device's own float-to-integer conversion (which saturates, unlike
// x86) would show if a body relied on it. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

TEST(CudaCast, EveryPairMatchesCpu) {
  NEED_GPU();
  for (DType from : AllDTypesForTest()) {
    SCOPED_TRACE(DTypeName(from));
    const Tensor x = CastEdgeValues(from);
    ProgramBuilder b;
    const int in = b.Input("x", from, x.shape());
    for (DType to : AllDTypesForTest()) {
      if (to != from) b.Output(DTypeName(to), b.Apply("cast", {in}, to, x.shape()));
    }
    CompareWithCpu(MakeProgram(b), {x});
  }
}

// Same dtype: the output is the input (no kernel), and a large random cast
// goes through many blocks.
TEST(CudaCast, SameTypeAndLargeInputsMatchCpu) {
  NEED_GPU();
  const Tensor x = RandomOf(DType::kF32, {1 << 18}, 51, 1000.0);
  ProgramBuilder b;
  const int in = b.Input("x", DType::kF32, x.shape());
  b.Output("same", b.Apply("cast", {in}, DType::kF32, x.shape()));
  const int h = b.Apply("cast", {in}, DType::kBF16, x.shape());
  b.Output("bf16", h);
  b.Output("back", b.Apply("cast", {h}, DType::kF32, x.shape()));
  b.Output("i32", b.Apply("cast", {in}, DType::kI32, x.shape()));
  CompareWithCpu(MakeProgram(b), {x});
}

}  // namespace
}  // namespace testing
}  // namespace distrt

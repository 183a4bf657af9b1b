// The CUDA data-movement kernels (cuda/kernels_layout.cpp) against the host
// executor: transpose (the attention layouts, size-1 dims, every element
// size, a rank-8 one, swaps that take the tiled path), expand, slice with
// negative steps, concat with an empty input and a negative axis, pad in
// its three modes, range (and a declared length its scalars do not give,
// reported by the same run); a transpose needing more than 8 dims goes to
// the host. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

TEST(CudaLayout, TransposeMatchesCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{2, 16, 4, 24}, {0, 2, 1, 3}},  // [B, S, H, D] -> [B, H, S, D]: rows widened
      {{2, 4, 16, 24}, {0, 1, 3, 2}},  // K^T
      {{64, 96}, {1, 0}},
      {{3, 1, 5, 1}, {3, 2, 1, 0}},
      {{2, 2, 2, 2, 2, 2, 2, 3}, {7, 0, 2, 4, 6, 1, 3, 5}},  // rank 8
      // the tiled path (cuda/layout.cu): partial tiles, a batch dim, the
      // swapped dims apart, and a transpose of three dims
      {{3, 70, 45}, {0, 2, 1}},
      {{33, 5, 2, 40}, {3, 1, 2, 0}},
      {{17, 64, 3}, {2, 1, 0}},
  };
  uint32_t seed = 60;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kI64, DType::kBool}) {
    ProgramBuilder b;
    std::vector<Tensor> inputs;
    for (const Case& c : cases) {
      Shape out;
      for (int64_t p : c.perm) out.push_back(c.shape[static_cast<size_t>(p)]);
      const int x = b.Input(StrCat("x", seed), dt, c.shape);
      b.Output(StrCat("t", seed), b.Apply("transpose", {x}, dt, out, {{"perm", AttrInts(c.perm)}}));
      inputs.push_back(RandomOf(dt, c.shape, seed++));
    }
    SCOPED_TRACE(DTypeName(dt));
    CompareWithCpu(MakeProgram(b), inputs);
  }
}

// Nine dims that no merging reduces: the device kernel refuses, the host
// runs it.
TEST(CudaLayout, TransposeBeyondEightDimsFallsBackToHost) {
  NEED_GPU();
  const Shape s(9, 2);
  std::vector<int64_t> perm = {8, 7, 6, 5, 4, 3, 2, 1, 0};
  ProgramBuilder b;
  const int x = b.Input("x", DType::kF32, s);
  b.Output("t", b.Apply("transpose", {x}, DType::kF32, s, {{"perm", AttrInts(perm)}}));
  auto program = MakeProgram(b);
  std::unique_ptr<Executor> gpu;
  EXPECT_EQ(GpuExecutor(program, true, &gpu).code(), StatusCode::kUnimplemented);
  Status st = GpuExecutor(program, false, &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(gpu->Placement(), std::vector<std::string>{"cpu"});
  const Tensor in = RandomOf(DType::kF32, s, 61);
  std::vector<Tensor> got, want;
  ASSERT_TRUE(gpu->Run({in}, &got).ok());
  ASSERT_TRUE(RunOnCpu(program, {in}, &want).ok());
  ExpectClose(got[0], want[0], 0, "transpose");
}

TEST(CudaLayout, ExpandSliceConcatPadMatchCpu) {
  NEED_GPU();
  for (DType dt : {DType::kF32, DType::kF16, DType::kI64, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int x = b.Input("x", dt, {4, 1, 6});
    const int y = b.Input("y", dt, {4, 3, 6});
    const int e = b.Input("e", dt, {4, 0, 6});
    b.Output("expand", b.Apply("expand", {x}, dt, {2, 4, 5, 6}));
    b.Output("slice", b.Apply("slice", {y}, dt, {2, 3, 3},
                              {{"starts", AttrInts({3, 2, 1})},
                               {"ends", AttrInts({0, -1, 6})},
                               {"steps", AttrInts({-2, -1, 2})}}));
    b.Output("slice_rows", b.Apply("slice", {y}, dt, {4, 2, 6},
                                   {{"starts", AttrInts({0, 1, 0})},
                                    {"ends", AttrInts({4, 3, 6})}}));
    b.Output("concat", b.Apply("concat", {y, e, x, y}, dt, {4, 7, 6}, {{"axis", AttrInt(-2)}}));
    b.Output("concat0", b.Apply("concat", {y, y}, dt, {8, 3, 6}, {{"axis", AttrInt(0)}}));
    b.Output("pad", b.Apply("pad", {y}, dt, {5, 3, 10},
                            {{"pads", AttrInts({1, 1, 0, 0, -1, 4})}, {"value", AttrFloat(3)}}));
    b.Output("reflect", b.Apply("pad", {y}, dt, {4, 9, 6},
                                {{"pads", AttrInts({0, 4, 0, 0, 2, 0})},
                                 {"mode", AttrString("reflect")}}));
    b.Output("edge", b.Apply("pad", {x}, dt, {6, 3, 7},
                             {{"pads", AttrInts({1, 1, 0, 1, 1, 1})}, {"mode", AttrString("edge")}}));
    b.Output("pad_empty", b.Apply("pad", {e}, dt, {4, 2, 6},
                                  {{"pads", AttrInts({0, 1, 0, 0, 1, 0})}}));
    CompareWithCpu(MakeProgram(b), {RandomOf(dt, {4, 1, 6}, 62), RandomOf(dt, {4, 3, 6}, 63),
                                    Zeros(dt, {4, 0, 6})});
  }
}

TEST(CudaLayout, RangeMatchesCpu) {
  NEED_GPU();
  ProgramBuilder b;
  const int f0 = b.Constant(Tensor::Scalar(0.5f)), f1 = b.Constant(Tensor::Scalar(7.25f)),
            f2 = b.Constant(Tensor::Scalar(0.75f));
  b.Output("f", b.Apply("range", {f0, f1, f2}, DType::kF32, {9}));
  const int i0 = b.Input("start", DType::kI64, {}), i1 = b.Input("limit", DType::kI64, {}),
            i2 = b.Input("delta", DType::kI64, {});
  b.Output("i", b.Apply("range", {i0, i1, i2}, DType::kI64, {5}));
  const int s0 = b.Constant(Tensor::Scalar<int16_t>(100)),
            s1 = b.Constant(Tensor::Scalar<int16_t>(-50)),
            s2 = b.Constant(Tensor::Scalar<int16_t>(-7));
  b.Output("s", b.Apply("range", {s0, s1, s2}, DType::kI16, {22}));
  auto program = MakeProgram(b);
  CompareWithCpu(program, {Tensor::Scalar<int64_t>(10), Tensor::Scalar<int64_t>(-3),
                           Tensor::Scalar<int64_t>(-3)});
  // Scalars that give 6 elements where 5 are declared: the host fails; the
  // device run fails when it next waits for the device.
  const std::vector<Tensor> wrong = {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(6),
                                     Tensor::Scalar<int64_t>(1)};
  std::vector<Tensor> outs;
  EXPECT_FALSE(RunOnCpu(program, wrong, &outs).ok());
  std::unique_ptr<Executor> gpu;
  ASSERT_TRUE(GpuExecutor(program, true, &gpu).ok());
  Status st = gpu->Run(wrong, &outs);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_HAS(st.message(), "range gives 6 elements but its output was declared with 5");
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// The CUDA integer arithmetic, mod and clip kernels (cuda/kernels_arith.cpp)
// against the host executor: wrap-around, INT_MIN / -1, both mod
// conventions, clip bounds and NaN; bf16/f16 mod and clip (no host kernel)
// against the host's f32 result rounded; an integer division by zero
// reported when the run next waits for the device. Skipped without a GPU.
#include <gtest/gtest.h>

#include <limits>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

template <typename T>
void IntOperands(DType dt, Tensor* a, Tensor* b) {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  *a = RandomOf(dt, {4, 6}, 11);
  *b = RandomOf(dt, {6}, 12);
  const T av[] = {lo, hi, -7, 7, lo, hi};
  const T bv[] = {-1, 2, 3, -3, 1, hi};
  for (int i = 0; i < 6; ++i) {
    a->data<T>()[i] = av[i];
    b->data<T>()[i] = bv[i];
  }
}

template <typename T>
void CheckInts(DType dt) {
  SCOPED_TRACE(DTypeName(dt));
  Tensor a, c;
  IntOperands<T>(dt, &a, &c);
  ProgramBuilder b;
  const int x = b.Input("a", dt, {4, 6}), y = b.Input("b", dt, {6});
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "mod"})
    b.Output(op, b.Apply(op, {x, y}, dt, {4, 6}));
  b.Output("fmod", b.Apply("mod", {x, y}, dt, {4, 6}, {{"fmod", AttrInt(1)}}));
  b.Output("neg", b.Apply("neg", {x}, dt, {4, 6}));
  b.Output("abs", b.Apply("abs", {x}, dt, {4, 6}));
  b.Output("clip", b.Apply("clip", {x}, dt, {4, 6}, {{"min", AttrFloat(-50.5)}, {"max", AttrFloat(1e30)}}));
  b.Output("clip_max", b.Apply("clip", {x}, dt, {4, 6}, {{"max", AttrFloat(3)}}));
  CompareWithCpu(MakeProgram(b), {a, c});
}

TEST(CudaArith, IntegerArithmeticMatchesCpu) {
  NEED_GPU();
  CheckInts<int64_t>(DType::kI64);
  CheckInts<int32_t>(DType::kI32);
}

TEST(CudaArith, FloatModAndClipMatchCpu) {
  NEED_GPU();
  for (DType dt : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dt));
    Tensor a = RandomOf(dt, {3, 8}, 13, 10.0), c = RandomOf(dt, {8}, 14, 3.0);
    if (dt == DType::kF32) {
      a.data<float>()[0] = NAN;
      a.data<float>()[1] = INFINITY;
      a.data<float>()[2] = -INFINITY;
    }
    ProgramBuilder b;
    const int x = b.Input("a", dt, {3, 8}), y = b.Input("b", dt, {8});
    b.Output("mod", b.Apply("mod", {x, y}, dt, {3, 8}));
    b.Output("fmod", b.Apply("mod", {x, y}, dt, {3, 8}, {{"fmod", AttrInt(1)}}));
    b.Output("clip", b.Apply("clip", {x}, dt, {3, 8}, {{"min", AttrFloat(-2)}, {"max", AttrFloat(2.5)}}));
    b.Output("clip_min", b.Apply("clip", {x}, dt, {3, 8}, {{"min", AttrFloat(0)}}));
    b.Output("clip_none", b.Apply("clip", {x}, dt, {3, 8}));
    CompareWithCpu(MakeProgram(b), {a, c}, 1e-6);
  }
}

TEST(CudaArith, HalfModAndClipRoundTheF32Result) {
  NEED_GPU();
  for (DType dt : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    const Tensor a = RandomOf(dt, {3, 8}, 15, 10.0), c = RandomOf(dt, {8}, 16, 3.0);
    ProgramBuilder b, f;
    const int x = b.Input("a", dt, {3, 8}), y = b.Input("b", dt, {8});
    const int xf = f.Input("a", DType::kF32, {3, 8}), yf = f.Input("b", DType::kF32, {8});
    b.Output("mod", b.Apply("mod", {x, y}, dt, {3, 8}));
    f.Output("mod", f.Apply("mod", {xf, yf}, DType::kF32, {3, 8}));
    b.Output("clip", b.Apply("clip", {x}, dt, {3, 8}, {{"min", AttrFloat(-2)}, {"max", AttrFloat(2.5)}}));
    f.Output("clip", f.Apply("clip", {xf}, DType::kF32, {3, 8}, {{"min", AttrFloat(-2)}, {"max", AttrFloat(2.5)}}));
    std::vector<Tensor> want, got;
    ASSERT_TRUE(RunOnCpu(MakeProgram(f), {ToF32(a), ToF32(c)}, &want).ok());
    std::unique_ptr<Executor> gpu;
    Status st = GpuExecutor(MakeProgram(b), true, &gpu);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = gpu->Run({a, c}, &got);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // fmodf on the device is exact, as on the host: the results round alike.
    for (size_t i = 0; i < want.size(); ++i) ExpectClose(got[i], FromF32(want[i], dt), 0, StrCat("output ", i));
  }
}

// Division by zero: the host fails at the div; the device writes 0 and
// the run fails when the executor next waits for the device (here, copying
// the output down), with the host's message.
TEST(CudaArith, IntegerDivisionByZeroFailsTheRun) {
  NEED_GPU();
  ProgramBuilder b;
  const int x = b.Input("a", DType::kI32, {4}), y = b.Input("b", DType::kI32, {4});
  b.Output("q", b.Apply("div", {x, y}, DType::kI32, {4}));
  auto program = MakeProgram(b);
  const Tensor a = I32({4}, {7, 8, 9, 10}), c = I32({4}, {2, 0, 3, -1});
  std::vector<Tensor> outs;
  EXPECT_EQ(RunOnCpu(program, {a, c}, &outs).code(), StatusCode::kInvalidArgument);
  std::unique_ptr<Executor> gpu;
  Status st = GpuExecutor(program, true, &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = gpu->Run({a, c}, &outs);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_HAS(st.message(), "integer division by zero");
  // Reported once: the slot is clear again.
  st = gpu->Run({a, I32({4}, {1, 2, 3, 4})}, &outs);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace testing
}  // namespace distrt

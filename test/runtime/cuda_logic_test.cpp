// The CUDA comparison, logic and where kernels (cuda/kernels_logic.cpp)
// against the host executor: broadcasting, NaN, integer and bool operands,
// every branch size of where; bf16/f16 comparisons (no host kernel)
// against the host's f32 comparison of the same values. Skipped without a
// GPU.
#include <gtest/gtest.h>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

const char* const kCompareOps[] = {"equal", "less", "less_equal", "greater", "greater_equal"};

// Operands with ties (rounded values) and a NaN in float ones.
Tensor TiedOperand(DType dt, const Shape& s, uint32_t seed) {
  Tensor t = RandomOf(dt, s, seed, 2.0);
  if (dt == DType::kF32) {
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
    t.data<float>()[1] = NAN;
  } else if (dt == DType::kI64) {
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int64_t>()[i] %= 3;
  } else if (dt == DType::kI32) {
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int32_t>()[i] %= 3;
  }
  return t;
}

TEST(CudaLogic, ComparisonsMatchCpu) {
  NEED_GPU();
  const Shape as = {3, 1, 5}, bs = {4, 1}, out = {3, 4, 5};
  for (DType dt : {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kBool, DType::kU8}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int a = b.Input("a", dt, as), c = b.Input("b", dt, bs);
    for (const char* op : kCompareOps) {
      b.Output(op, b.Apply(op, {a, c}, DType::kBool, out));
      b.Output(std::string(op) + "_same", b.Apply(op, {a, a}, DType::kBool, as));
    }
    CompareWithCpu(MakeProgram(b), {TiedOperand(dt, as, 1), TiedOperand(dt, bs, 2)});
  }
}

TEST(CudaLogic, HalfComparisonsCompareF32Values) {
  NEED_GPU();
  const Shape as = {2, 6}, bs = {6};
  for (DType dt : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    const Tensor af = TiedOperand(DType::kF32, as, 3), bf = TiedOperand(DType::kF32, bs, 4);
    const Tensor a = FromF32(af, dt), c = FromF32(bf, dt);
    ProgramBuilder b, f;
    const int x = b.Input("a", dt, as), y = b.Input("b", dt, bs);
    const int xf = f.Input("a", DType::kF32, as), yf = f.Input("b", DType::kF32, bs);
    for (const char* op : kCompareOps) {
      b.Output(op, b.Apply(op, {x, y}, DType::kBool, as));
      f.Output(op, f.Apply(op, {xf, yf}, DType::kBool, as));
    }
    std::vector<Tensor> want, got;
    ASSERT_TRUE(RunOnCpu(MakeProgram(f), {ToF32(a), ToF32(c)}, &want).ok());
    std::unique_ptr<Executor> gpu;
    Status st = GpuExecutor(MakeProgram(b), true, &gpu);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = gpu->Run({a, c}, &got);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < want.size(); ++i) ExpectClose(got[i], want[i], 0, kCompareOps[i]);
  }
}

TEST(CudaLogic, LogicNotAndWhereMatchCpu) {
  NEED_GPU();
  const Shape cs = {3, 1, 1}, as = {1, 4, 5}, bs = {5}, out = {3, 4, 5};
  ProgramBuilder b;
  const int c = b.Input("c", DType::kBool, cs);
  const int d = b.Input("d", DType::kBool, {4, 1});
  for (const char* op : {"and", "or", "xor"})
    b.Output(op, b.Apply(op, {c, d}, DType::kBool, {3, 4, 1}));
  b.Output("not", b.Apply("not", {c}, DType::kBool, cs));
  std::vector<Tensor> inputs = {RandomOf(DType::kBool, cs, 5), RandomOf(DType::kBool, {4, 1}, 6)};
  // One branch dtype of each size, and the f32 / i64 a training step uses.
  uint32_t seed = 7;
  for (DType dt : {DType::kF32, DType::kI64, DType::kBF16, DType::kF16, DType::kBool,
                   DType::kF64, DType::kI32}) {
    const int x = b.Input(StrCat("x", seed), dt, as), y = b.Input(StrCat("y", seed), dt, bs);
    b.Output(StrCat("where_", DTypeName(dt)), b.Apply("where", {c, x, y}, dt, out));
    inputs.push_back(RandomOf(dt, as, seed++));
    inputs.push_back(RandomOf(dt, bs, seed++));
  }
  CompareWithCpu(MakeProgram(b), inputs);
}

}  // namespace
}  // namespace testing
}  // namespace distrt

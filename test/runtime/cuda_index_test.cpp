// The CUDA gather and scatter_add kernels (cuda/kernels_index.cpp) against
// the host executor: an embedding lookup and its gradient (many duplicate
// token ids, atomics), other axes, i32 indices with negative ones, every
// dtype for gather, bf16/f16 atomics (rounded per addition, in any order:
// compared within a few bf16 ulps), integer atomics exactly, the result
// taking over a dying base, and an out-of-range index: zeros, then the
// host's OutOfRange error from the same run. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

Tensor TokenIds(DType dt, const Shape& s, int64_t vocab, uint32_t seed) {
  Tensor t = RandomOf(DType::kI64, s, seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t v = t.data<int64_t>()[i];
    v = ((v % vocab) + vocab) % vocab;
    if (i % 5 == 0) v -= vocab;  // negative ids count from the end
    t.data<int64_t>()[i] = v;
  }
  if (dt == DType::kI64) return t;
  Tensor i32 = Zeros(DType::kI32, s);
  EXPECT_TRUE(CastBuffer(t.raw(), DType::kI64, i32.raw(), DType::kI32, t.num_elements()).ok());
  return i32;
}

TEST(CudaIndex, EmbeddingGatherAndScatterAddMatchCpu) {
  NEED_GPU();
  const int64_t vocab = 50, d = 64;
  const Shape ids = {4, 33};
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (DType dt : {DType::kF32, DType::kF64}) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", DTypeName(idt)));
      ProgramBuilder b;
      const int table = b.Input("table", dt, {vocab, d});
      const int tok = b.Input("ids", idt, ids);
      const int grad = b.Input("grad", dt, {4, 33, d});
      b.Output("emb", b.Apply("gather", {table, tok}, dt, {4, 33, d}));
      b.Output("dtable", b.Apply("scatter_add", {table, tok, grad}, dt, {vocab, d}));
      // base produced here and dying at the scatter_add: updated in place.
      const int zeros = b.Apply("sub", {table, table}, dt, {vocab, d});
      b.Output("dzero", b.Apply("scatter_add", {zeros, tok, grad}, dt, {vocab, d}));
      CompareWithCpu(MakeProgram(b), {RandomOf(dt, {vocab, d}, 70), TokenIds(idt, ids, vocab, 71),
                                      RandomOf(dt, {4, 33, d}, 72)},
                     1e-5);
    }
  }
}

TEST(CudaIndex, GatherEveryDTypeAndAxisMatchesCpu) {
  NEED_GPU();
  for (DType dt : AllDTypesForTest()) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int x = b.Input("x", dt, {5, 7, 3});
    const int i = b.Input("i", DType::kI32, {2, 4});
    b.Output("axis0", b.Apply("gather", {x, i}, dt, {2, 4, 7, 3}));
    b.Output("axis1", b.Apply("gather", {x, i}, dt, {5, 2, 4, 3}, {{"axis", AttrInt(1)}}));
    b.Output("axis_last", b.Apply("gather", {x, i}, dt, {5, 7, 2, 4}, {{"axis", AttrInt(-1)}}));
    CompareWithCpu(MakeProgram(b), {RandomOf(dt, {5, 7, 3}, 73),
                                    I32({2, 4}, {0, -1, 2, -3, 1, 1, -2, 2})});
  }
}

TEST(CudaIndex, ScatterAddIntegersExactlyAndHalfWithinRounding) {
  NEED_GPU();
  const Shape base = {6, 5}, idx = {40};
  const Tensor rows = TokenIds(DType::kI64, idx, 6, 74), cols = TokenIds(DType::kI64, idx, 5, 75);
  for (DType dt : {DType::kI64, DType::kI32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int x = b.Input("base", dt, base);
    const int r = b.Input("rows", DType::kI64, idx);
    const int c = b.Input("cols", DType::kI64, idx);
    const int u = b.Input("upd", dt, {40, 5});
    b.Output("y", b.Apply("scatter_add", {x, r, u}, dt, base));
    // Along axis 1, with updates gathered from the base.
    const int g = b.Apply("gather", {x, c}, dt, {6, 40}, {{"axis", AttrInt(1)}});
    b.Output("y1", b.Apply("scatter_add", {x, c, g}, dt, base, {{"axis", AttrInt(1)}}));
    // About 7 additions per element, each rounded (bf16: 8 bits, f16: 11)
    // in an order the atomics choose; values within [-1, 1).
    const double tol = dt == DType::kBF16 ? 0.2 : (dt == DType::kF16 ? 0.03 : 0);
    CompareWithCpu(MakeProgram(b),
                   {RandomOf(dt, base, 76, 1.0), rows, cols, RandomOf(dt, {40, 5}, 77, 1.0)}, tol);
  }
}

// The indices (i64 [5]) have scatter_add's output type (i64 [5]) and die
// there: they must not become its buffer (the base is copied into it first).
TEST(CudaIndex, ScatterAddNeverWritesIntoItsIndices) {
  NEED_GPU();
  ProgramBuilder b;
  const int x = b.Input("base", DType::kI64, {5});
  const int i0 = b.Input("ids", DType::kI64, {5});
  const int zero = b.Input("zero", DType::kI64, {5});
  const int i = b.Apply("add", {i0, zero}, DType::kI64, {5});  // dies at the scatter_add
  const int u = b.Input("upd", DType::kI64, {5});
  b.Output("y", b.Apply("scatter_add", {x, i, u}, DType::kI64, {5}));
  CompareWithCpu(MakeProgram(b), {I64({5}, {100, 200, 300, 400, 500}), I64({5}, {4, 0, 4, -1, 2}),
                                  I64({5}, {0, 0, 0, 0, 0}), I64({5}, {1, 2, 3, 4, 5})});
}

TEST(CudaIndex, OutOfRangeIndexFailsTheRun) {
  NEED_GPU();
  ProgramBuilder b;
  const int x = b.Input("x", DType::kF32, {4, 3});
  const int i = b.Input("i", DType::kI64, {3});
  b.Output("g", b.Apply("gather", {x, i}, DType::kF32, {3, 3}));
  auto program = MakeProgram(b);
  const Tensor data = RandomOf(DType::kF32, {4, 3}, 77);
  const Tensor bad = I64({3}, {1, 7, -1});
  std::vector<Tensor> outs;
  EXPECT_EQ(RunOnCpu(program, {data, bad}, &outs).code(), StatusCode::kOutOfRange);
  std::unique_ptr<Executor> gpu;
  ASSERT_TRUE(GpuExecutor(program, true, &gpu).ok());
  Status st = gpu->Run({data, bad}, &outs);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
  EXPECT_HAS(st.message(), "gather index 7 is out of range for an axis of size 4");
  // Reported once: the next run with good indices succeeds.
  st = gpu->Run({data, I64({3}, {0, 1, 2})}, &outs);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace testing
}  // namespace distrt

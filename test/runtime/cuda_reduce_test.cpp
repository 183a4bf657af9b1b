// The CUDA reduction kernels (reduce_sum / mean / max / min / prod over any
// axes, argmax / argmin) through the executor on GPU 0, host fallback off,
// against the host executor: axis sets with negative, non-contiguous and
// size-1 axes, keepdims, empty reductions, NaN, the shapes of a training
// step (vocabulary rows, bias gradients, a whole-tensor norm, which take
// the split plans), f64, and bf16/f16 against the f32 result.
#include "cuda_kernel_check.h"

namespace distrt {
namespace testing {
namespace {

const char* const kReduceOps[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                  "reduce_prod"};

Shape ReducedShape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  const int64_t r = static_cast<int64_t>(in.size());
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    bool reduced = axes.empty();
    for (int64_t a : axes) reduced = reduced || a == i || a + r == i;
    if (!reduced)
      out.push_back(in[static_cast<size_t>(i)]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

// x -> every reduction op over `axes` (and exp(x) -> reduce_sum, so an
// intermediate feeds a reduction).
std::shared_ptr<const Program> ReduceProgram(DType dtype, const Shape& shape,
                                             const std::vector<int64_t>& axes, int keepdims,
                                             const std::vector<const char*>& ops) {
  ProgramBuilder b;
  const int x = b.Input("x", dtype, shape);
  const Shape out = ReducedShape(shape, axes, keepdims != 0);
  for (const char* op : ops) {
    b.Output(op, b.Apply(op, {x}, dtype, out,
                         {{"axes", AttrInts(axes)}, {"keepdims", AttrInt(keepdims)}}));
  }
  return MakeProgram(b);
}

TEST(CudaReduce, ReductionsMatchCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int keepdims;
  };
  const Case cases[] = {
      {{6, 7, 5}, {1}, 1},
      {{6, 7, 5}, {-1}, 0},
      {{6, 7, 5}, {0, 2}, 1},  // two groups: two passes
      {{6, 7, 5}, {}, 0},      // everything
      {{6, 40, 3}, {-2}, 0},
      {{2, 1, 3, 1, 4}, {1, 3}, 0},   // only size-1 axes
      {{8, 16, 5, 5}, {0, 2, 3}, 0},  // a conv bias gradient
      {{3, 0, 4}, {1}, 0},            // reductions over nothing
      {{}, {}, 1},                    // a scalar
      {{33, 64}, {1}, 1},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axes " + ::testing::PrintToString(c.axes));
    std::vector<const char*> ops(std::begin(kReduceOps), std::end(kReduceOps));
    ExpectGpuMatchesCpu(ReduceProgram(DType::kF32, c.shape, c.axes, c.keepdims, ops),
                        {RandomOf(DType::kF32, c.shape, seed++)}, 1e-5);
  }
  // NaN through every op and axis set.
  Tensor x = RandomOf(DType::kF32, {6, 7, 5}, 20);
  x.data<float>()[12] = NAN;
  x.data<float>()[100] = NAN;
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, {2}, {0, 2}, {}}) {
    SCOPED_TRACE("NaN, axes " + ::testing::PrintToString(axes));
    std::vector<const char*> ops(std::begin(kReduceOps), std::end(kReduceOps));
    ExpectGpuMatchesCpu(ReduceProgram(DType::kF32, {6, 7, 5}, axes, 0, ops), {x}, 1e-5);
  }
}

// The shapes of a training step: a loss's rows over a vocabulary, bias
// gradients over B*T rows, a gradient norm over a whole tensor (these take
// the split, two-pass plans).
TEST(CudaReduce, TrainingShapesMatchCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {
      {{4, 50257}, {-1}},
      {{8192, 768}, {0}},
      {{2, 4096, 3}, {0, 1}},
      {{1000, 1000}, {}},
  };
  uint32_t seed = 30;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    ExpectGpuMatchesCpu(ReduceProgram(DType::kF32, c.shape, c.axes, 0,
                                      {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}),
                        {RandomOf(DType::kF32, c.shape, seed++)}, 1e-5);
  }
}

TEST(CudaReduce, F64MatchesCpu) {
  NEED_GPU();
  std::vector<const char*> ops(std::begin(kReduceOps), std::end(kReduceOps));
  ExpectGpuMatchesCpu(ReduceProgram(DType::kF64, {5, 9, 7}, {0, 2}, 1, ops),
                      {RandomOf(DType::kF64, {5, 9, 7}, 40)}, 1e-12);
  ExpectGpuMatchesCpu(ReduceProgram(DType::kF64, {3, 20000}, {1}, 0, {"reduce_sum", "reduce_max"}),
                      {RandomOf(DType::kF64, {3, 20000}, 41)}, 1e-12);
}

// bf16 / f16 on the GPU (accumulating in f32) against the host's f32 result
// of the same values, within the 16-bit rounding.
TEST(CudaReduce, HalfTypesMatchTheF32Result) {
  NEED_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{{64, 300}, {1}}, {{64, 300}, {0}}, {{4, 50257}, {-1}}, {{300, 301}, {}}};
  const std::vector<const char*> ops = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(DTypeName(dt)) + " " + ShapeToString(c.shape));
      Tensor as_f32;
      const Tensor x = RandomOf(dt, c.shape, 50, 1.0f, &as_f32);
      const std::vector<Tensor> want =
          RunOnCpu(ReduceProgram(DType::kF32, c.shape, c.axes, 0, ops), {as_f32});
      const std::vector<Tensor> got = RunOnGpu(ReduceProgram(dt, c.shape, c.axes, 0, ops), {x});
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].dtype(), dt);
        ExpectValuesClose(AsDoubles(got[i]), AsDoubles(want[i]),
                          dt == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024, ops[i]);
      }
    }
  }
}

std::shared_ptr<const Program> ArgProgram(DType dtype, const Shape& shape, int64_t axis,
                                          int keepdims) {
  ProgramBuilder b;
  const int x = b.Input("x", dtype, shape);
  const int64_t r = static_cast<int64_t>(shape.size());
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    if (i != (axis < 0 ? axis + r : axis))
      out.push_back(shape[static_cast<size_t>(i)]);
    else if (keepdims)
      out.push_back(1);
  }
  for (const char* op : {"argmax", "argmin"}) {
    for (int last = 0; last < 2; ++last) {
      b.Output(std::string(op) + std::to_string(last),
               b.Apply(op, {x}, DType::kI64, out,
                       {{"axis", AttrInt(axis)},
                        {"keepdims", AttrInt(keepdims)},
                        {"select_last_index", AttrInt(last)}}));
    }
  }
  return MakeProgram(b);
}

// Values on a coarse grid: many ties, which select_last_index breaks.
Tensor Coarse(DType dtype, const Shape& shape, uint32_t seed) {
  std::vector<float> v = RandomUniform<float>(NumElements(shape), seed);
  for (float& x : v) x = std::round(x * 4.0f) / 4.0f;
  if (dtype == DType::kBF16) {
    std::vector<bf16_t> b(v.size());
    for (size_t i = 0; i < v.size(); ++i) b[i].bits = FloatToBF16(v[i]);
    return Make<bf16_t>(shape, b);
  }
  return Make<float>(shape, v);
}

TEST(CudaReduce, ArgmaxArgminMatchCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    int64_t axis;
    int keepdims;
  };
  const Case cases[] = {
      {{16, 50257}, -1, 0},                     // a warp per row
      {{6, 70}, 1, 1},      {{7, 5, 3}, 1, 0},  // a thread per output
      {{7, 5, 3}, 0, 1},    {{40, 3}, 0, 0},
  };
  uint32_t seed = 60;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axis " + std::to_string(c.axis));
    Tensor x = Coarse(DType::kF32, c.shape, seed++);
    // NaNs (two in one row), a row of -inf.
    float* p = x.data<float>();
    p[1] = NAN;
    p[x.num_elements() / 2] = NAN;
    p[x.num_elements() / 2 + 3] = NAN;
    const int64_t n = c.shape.back();
    if (c.axis == -1 || c.axis + 1 == static_cast<int64_t>(c.shape.size()))
      for (int64_t j = 0; j < n; ++j) p[n + j] = -INFINITY;  // row 1
    ExpectGpuMatchesCpu(ArgProgram(DType::kF32, c.shape, c.axis, c.keepdims), {x}, 0);
  }
  // bf16: the same indices as f32 on the same values.
  const Tensor xb = Coarse(DType::kBF16, {16, 3000}, 70);
  const Tensor xf = Coarse(DType::kF32, {16, 3000}, 70);
  const std::vector<Tensor> want = RunOnCpu(ArgProgram(DType::kF32, {16, 3000}, 1, 0), {xf});
  const std::vector<Tensor> got = RunOnGpu(ArgProgram(DType::kBF16, {16, 3000}, 1, 0), {xb});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].Equals(want[i])) << "output " << i;
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// The CUDA normalisation kernels (softmax, log_softmax, softmax_grad,
// cross_entropy_sums and _grad, layer_norm, batch_norm) through the executor on GPU 0, host
// fallback off, against the host executor: rows of a vocabulary, short rows, an axis that is not
// last, rows of -inf / NaN / +inf, broadcast layer_norm parameters, a
// softmax taking over its dying input's buffer, f64, bf16/f16 against
// the f32 result, and attention's scale and mask fused into softmax and
// softmax_grad (f32; bf16 against the ops they stand for).
#include "cuda_kernel_check.h"

namespace distrt {
namespace testing {
namespace {

// x -> softmax, log_softmax over `axis`, and exp(x) -> softmax (the exp
// dies there: the softmax may write over it).
std::shared_ptr<const Program> SoftmaxProgram(DType dtype, const Shape& shape, int64_t axis) {
  ProgramBuilder b;
  const int x = b.Input("x", dtype, shape);
  b.Output("softmax", b.Apply("softmax", {x}, dtype, shape, {{"axis", AttrInt(axis)}}));
  b.Output("log_softmax", b.Apply("log_softmax", {x}, dtype, shape, {{"axis", AttrInt(axis)}}));
  const int e = b.Apply("neg", {x}, dtype, shape);
  b.Output("softmax_of_neg", b.Apply("softmax", {e}, dtype, shape, {{"axis", AttrInt(axis)}}));
  return MakeProgram(b);
}

TEST(CudaNorm, SoftmaxMatchesCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const Case cases[] = {
      {{8, 50257}, -1},                   // a vocabulary's rows
      {{64, 1000}, 1},   {{100, 8}, -1},  // short rows: a thread each
      {{4, 30, 6}, 1},                    // not the last axis
      {{3, 4, 5, 6}, 0},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " axis " + std::to_string(c.axis));
    Tensor x = RandomOf(DType::kF32, c.shape, seed++, 8.0f);
    if (c.axis == -1 || c.axis == 1) {
      // Rows (last-axis cases): a -inf entry, a row of -inf, a NaN, a +inf.
      const int64_t n = c.shape.back();
      float* p = x.data<float>();
      if (c.shape.size() == 2) {
        p[0 * n + 2] = -INFINITY;
        for (int64_t j = 0; j < n; ++j) p[1 * n + j] = -INFINITY;
        p[2 * n + n - 1] = NAN;
        p[3 * n + 1] = INFINITY;
      }
    }
    ExpectGpuMatchesCpu(SoftmaxProgram(DType::kF32, c.shape, c.axis), {x}, 1e-5);
  }
  ExpectGpuMatchesCpu(SoftmaxProgram(DType::kF64, {16, 300}, -1),
                      {RandomOf(DType::kF64, {16, 300}, 9, 8.0f)}, 1e-12);
}

TEST(CudaNorm, SoftmaxGradMatchesCpu) {
  NEED_GPU();
  // attention's scores (rows of 1024), short rows, an axis that is not last
  const std::pair<Shape, int64_t> cases[] = {
      {{2, 4, 64, 1024}, 3}, {{100, 8}, 1}, {{4, 30, 6}, 1}};
  uint32_t seed = 20;
  for (const auto& [shape, axis] : cases) {
    SCOPED_TRACE(ShapeToString(shape));
    for (DType dt : {DType::kF32, DType::kF64}) {
      ProgramBuilder b;
      const int y = b.Input("y", dt, shape), dy = b.Input("dy", dt, shape);
      b.Output("dx", b.Apply("softmax_grad", {y, dy}, dt, shape, {{"axis", AttrInt(axis)}}));
      ExpectGpuMatchesCpu(MakeProgram(b),
                          {RandomOf(dt, shape, seed, 1.0f), RandomOf(dt, shape, seed + 1, 1.0f)},
                          dt == DType::kF32 ? 1e-5 : 1e-12);
      seed += 2;
    }
  }
}

TEST(CudaNorm, SoftmaxReadsAndWritesHalfAsStored) {
  NEED_GPU();
  // A bf16 policy's f32 softmax with its casts folded in: a bf16 x into an
  // f32 y; an f32 y with a bf16 (f16) dy and dx. The host runs the same
  // instructions through f32 copies.
  const Shape shape = {2, 4, 64, 1024};
  for (DType half : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(half));
    ProgramBuilder b;
    const int x = b.Input("x", half, shape);
    b.Output("y", b.Apply("softmax", {x}, DType::kF32, shape, {{"axis", AttrInt(3)}}));
    ExpectGpuMatchesCpu(MakeProgram(b), {RandomOf(half, shape, 60, 8.0f)}, 1e-5);
    ProgramBuilder g;
    const int y = g.Input("y", DType::kF32, shape), dy = g.Input("dy", half, shape);
    g.Output("dx", g.Apply("softmax_grad", {y, dy}, half, shape, {{"axis", AttrInt(3)}}));
    ExpectGpuMatchesCpu(MakeProgram(g),
                        {RandomOf(DType::kF32, shape, 61, 1.0f), RandomOf(half, shape, 62, 1.0f)},
                        1e-2);
  }
}

// Attention's scores [2, 12, 256, 256] with a causal mask [1, 1, 256, 256]
// and a scale folded into softmax and softmax_grad (dist-fuse-for-target's
// forms), and a mask [30, 6] across a softmax over an axis that is not
// last: the same programs on the host.
TEST(CudaNorm, SoftmaxScaleAndMaskMatchCpu) {
  NEED_GPU();
  struct Case {
    Shape shape, mask_shape;
    int64_t axis;
    double scale, fill;
    bool divide, keeps;
  };
  const Case cases[] = {{{2, 12, 256, 256}, {1, 1, 256, 256}, 3, 0.125, -INFINITY, false, false},
                        {{4, 30, 6}, {30, 6}, 1, 3.0, -1e4, true, true}};
  uint32_t seed = 70;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    Tensor mask;
    ASSERT_TRUE(Tensor::Allocate(DType::kBool, c.mask_shape, &mask).ok());
    const int64_t last = c.mask_shape.back();
    for (int64_t i = 0; i < mask.num_elements(); ++i)
      mask.data<uint8_t>()[i] = (i % last) > (i / last) % last ? 1 : 0;  // causal
    ProgramBuilder b;
    const int x = b.Input("x", DType::kF32, c.shape);
    const int m = b.Input("mask", DType::kBool, c.mask_shape);
    const int dy = b.Input("dy", DType::kF32, c.shape);
    const int y = b.Apply("softmax", {x, m}, DType::kF32, c.shape,
                          {{"axis", AttrInt(c.axis)},
                           {"scale", AttrFloat(c.scale)},
                           {"divide", AttrInt(c.divide)},
                           {"fill", AttrFloat(c.fill)},
                           {"mask_keeps", AttrInt(c.keeps)}});
    b.Output("y", y);
    b.Output("dx", b.Apply("softmax_grad", {y, dy, m}, DType::kF32, c.shape,
                           {{"axis", AttrInt(c.axis)},
                            {"scale", AttrFloat(c.scale)},
                            {"divide", AttrInt(c.divide)},
                            {"mask_keeps", AttrInt(c.keeps)}}));
    ExpectGpuMatchesCpu(MakeProgram(b),
                        {RandomOf(DType::kF32, c.shape, seed, 30.0f), mask,
                         RandomOf(DType::kF32, c.shape, seed + 1, 1.0f)},
                        1e-5);
    seed += 2;
  }
}

TEST(CudaNorm, Bf16ScoresThroughTheScaleAndMaskMatchTheOps) {
  NEED_GPU();
  // The bf16 policy's fused forms on the device (bf16 scores read as
  // stored, scaled and rounded to bf16, masked, the softmax in f32; the
  // gradient read from bf16 and written to bf16 through the mask and the
  // scale) against the ops they stand for on the host.
  const Shape shape = {2, 12, 256, 256}, mshape = {1, 1, 256, 256}, scalar = {};
  Tensor mask;
  ASSERT_TRUE(Tensor::Allocate(DType::kBool, mshape, &mask).ok());
  for (int64_t i = 0; i < 256 * 256; ++i) mask.data<uint8_t>()[i] = (i % 256) > (i / 256) ? 1 : 0;
  const DType bf = DType::kBF16, f = DType::kF32;
  ProgramBuilder fused;
  {
    const int x = fused.Input("x", bf, shape), m = fused.Input("mask", DType::kBool, mshape);
    const int dy = fused.Input("dy", bf, shape);
    const int y = fused.Apply(
        "softmax", {x, m}, f, shape,
        {{"axis", AttrInt(3)}, {"scale", AttrFloat(0.125)}, {"fill", AttrFloat(-INFINITY)}});
    fused.Output("y", y);
    fused.Output("dx", fused.Apply("softmax_grad", {y, dy, m}, bf, shape,
                                   {{"axis", AttrInt(3)}, {"scale", AttrFloat(0.125)}}));
  }
  ProgramBuilder ops;
  {
    const int x = ops.Input("x", bf, shape), m = ops.Input("mask", DType::kBool, mshape);
    const int dy = ops.Input("dy", bf, shape);
    const int c = ops.Input("scale", bf, scalar), fill = ops.Input("fill", bf, scalar);
    const int zero = ops.Input("zero", bf, scalar);
    const int s = ops.Apply("mul", {x, c}, bf, shape);
    const int w = ops.Apply("where", {m, fill, s}, bf, shape);
    const int y =
        ops.Apply("softmax", {ops.Apply("cast", {w}, f, shape)}, f, shape, {{"axis", AttrInt(3)}});
    ops.Output("y", y);
    const int g = ops.Apply("softmax_grad", {y, ops.Apply("cast", {dy}, f, shape)}, f, shape,
                            {{"axis", AttrInt(3)}});
    const int gw = ops.Apply("where", {m, zero, ops.Apply("cast", {g}, bf, shape)}, bf, shape);
    ops.Output("dx", ops.Apply("mul", {gw, c}, bf, shape));
  }
  auto bf16Scalar = [](float v) {
    Tensor t;
    EXPECT_TRUE(Tensor::Allocate(DType::kBF16, {}, &t).ok());
    t.data<bf16_t>()[0].bits = FloatToBF16(v);
    return t;
  };
  const Tensor x = RandomOf(bf, shape, 80, 30.0f), dy = RandomOf(bf, shape, 81, 1.0f);
  const std::vector<Tensor> got = RunOnGpu(MakeProgram(fused), {x, mask, dy});
  const std::vector<Tensor> want = RunOnCpu(
      MakeProgram(ops), {x, mask, dy, bf16Scalar(0.125f), bf16Scalar(-INFINITY), bf16Scalar(0.0f)});
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(want.size(), 2u);
  ExpectValuesClose(AsDoubles(got[0]), AsDoubles(want[0]), 1e-5, "y");
  ExpectValuesClose(AsDoubles(got[1]), AsDoubles(want[1]), 1e-2, "dx");
}

// cross_entropy_sums and cross_entropy_grad over logits [rows, n] whose
// classes start at 5, stored as `logits` (f32, f64, or bf16/f16 read as
// stored) with the gradient stored as `grad`; the row max from the logits.
std::shared_ptr<const Program> CrossEntropyProgram(DType logits, DType compute, DType grad,
                                                   const Shape& shape) {
  ProgramBuilder b;
  Shape row = shape;
  row.back() = 1;
  const int x = b.Input("x", logits, shape);
  const int labels = b.Input("labels", DType::kI64, row);
  const int scale = b.Input("scale", compute, row), weight = b.Input("weight", compute, row);
  int max = b.Apply("reduce_max", {x}, logits, row,
                    {{"axes", AttrInts({static_cast<int64_t>(shape.size()) - 1})},
                     {"keepdims", AttrInt(1)}});
  if (logits != compute) max = b.Apply("cast", {max}, compute, row);
  const int sum_exp = b.Value(compute, row), label_logit = b.Value(compute, row);
  b.Op("cross_entropy_sums", {x, max, labels}, {sum_exp, label_logit},
       {{"first_class", AttrInt(5)}});
  b.Output("sum_exp", sum_exp);
  b.Output("label_logit", label_logit);
  b.Output("grad", b.Apply("cross_entropy_grad", {x, max, scale, weight, labels}, grad, shape,
                           {{"first_class", AttrInt(5)}}));
  return MakeProgram(b);
}

TEST(CudaNorm, CrossEntropyMatchesCpu) {
  NEED_GPU();
  struct Case {
    Shape shape;
    DType logits, compute, grad;
    double tol;
  };
  // GPT-2's vocabulary; short rows; f64; bf16 and f16 logits with a 16-bit
  // or f32 gradient (the host runs those through f32 copies).
  const Case cases[] = {{{16, 50257}, DType::kF32, DType::kF32, DType::kF32, 1e-5},
                        {{3, 4, 7}, DType::kF32, DType::kF32, DType::kF32, 1e-5},
                        {{8, 300}, DType::kF64, DType::kF64, DType::kF64, 1e-12},
                        {{8, 3000}, DType::kBF16, DType::kF32, DType::kBF16, 1e-2},
                        {{8, 3000}, DType::kF16, DType::kF32, DType::kF32, 1e-5}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " " + DTypeName(c.logits) + " -> " + DTypeName(c.grad));
    Shape row = c.shape;
    row.back() = 1;
    const int64_t rows = NumElements(row), n = c.shape.back();
    // Labels in the share (first, last), outside it (before, past) and ignored.
    std::vector<int64_t> labels(static_cast<size_t>(rows));
    const int64_t pick[] = {5, 5 + n - 1, 4, 5 + n, -100, 5 + n / 2};
    for (int64_t r = 0; r < rows; ++r) labels[r] = pick[r % 6];
    ExpectGpuMatchesCpu(CrossEntropyProgram(c.logits, c.compute, c.grad, c.shape),
                        {RandomOf(c.logits, c.shape, seed, 8.0f), Make<int64_t>(row, labels),
                         RandomOf(c.compute, row, seed + 1), RandomOf(c.compute, row, seed + 2)},
                        c.tol);
    seed += 3;
  }
}

std::shared_ptr<const Program> LayerNormProgram(DType dtype, const Shape& x_shape, int64_t axis,
                                                const Shape& scale, const Shape& bias) {
  ProgramBuilder b;
  std::vector<int> in = {b.Input("x", dtype, x_shape), b.Input("scale", dtype, scale)};
  if (!bias.empty()) in.push_back(b.Input("bias", dtype, bias));
  b.Output("y", b.Apply("layer_norm", in, dtype, x_shape,
                        {{"axis", AttrInt(axis)}, {"epsilon", AttrFloat(1e-5)}}));
  return MakeProgram(b);
}

TEST(CudaNorm, LayerNormMatchesCpu) {
  NEED_GPU();
  struct Case {
    Shape x;
    int64_t axis;
    Shape scale, bias;
  };
  const Case cases[] = {
      {{64, 768}, -1, {768}, {768}},
      {{8, 3072}, 1, {3072}, {}},
      {{4, 6, 64}, 1, {64}, {6, 1}},  // parameters broadcast over [6, 64]
      {{5, 7}, -1, {7}, {7}},
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.x) + " axis " + std::to_string(c.axis));
    std::vector<Tensor> in = {RandomOf(DType::kF32, c.x, seed, 3.0f),
                              RandomOf(DType::kF32, c.scale, seed + 1)};
    if (!c.bias.empty()) in.push_back(RandomOf(DType::kF32, c.bias, seed + 2));
    seed += 3;
    ExpectGpuMatchesCpu(LayerNormProgram(DType::kF32, c.x, c.axis, c.scale, c.bias), in, 1e-5);
  }
  ExpectGpuMatchesCpu(LayerNormProgram(DType::kF64, {16, 96}, -1, {96}, {96}),
                      {RandomOf(DType::kF64, {16, 96}, 20, 3.0f), RandomOf(DType::kF64, {96}, 21),
                       RandomOf(DType::kF64, {96}, 22)},
                      1e-12);
}

TEST(CudaNorm, BatchNormMatchesCpu) {
  NEED_GPU();
  for (const Shape& s : {Shape{2, 3, 8, 8}, Shape{16, 3}}) {
    SCOPED_TRACE(ShapeToString(s));
    ProgramBuilder b;
    std::vector<int> in = {b.Input("x", DType::kF32, s)};
    for (const char* p : {"scale", "bias", "mean", "var"})
      in.push_back(b.Input(p, DType::kF32, {3}));
    b.Output("y", b.Apply("batch_norm", in, DType::kF32, s, {{"epsilon", AttrFloat(1e-3)}}));
    Tensor var = RandomOf(DType::kF32, {3}, 33);
    for (int k = 0; k < 3; ++k) var.data<float>()[k] = std::fabs(var.data<float>()[k]) + 0.1f;
    ExpectGpuMatchesCpu(MakeProgram(b),
                        {RandomOf(DType::kF32, s, 30), RandomOf(DType::kF32, {3}, 31),
                         RandomOf(DType::kF32, {3}, 32), RandomOf(DType::kF32, {3}, 34), var},
                        1e-5);
  }
}

// bf16 / f16 on the GPU (computing in f32) against the host's f32 result of
// the same values, within the 16-bit rounding.
TEST(CudaNorm, HalfTypesMatchTheF32Result) {
  NEED_GPU();
  for (DType dt : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    const double tol = dt == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
    const Shape s = {32, 1000};
    Tensor xf;
    const Tensor x = RandomOf(dt, s, 40, 4.0f, &xf);
    std::vector<Tensor> want = RunOnCpu(SoftmaxProgram(DType::kF32, s, -1), {xf});
    std::vector<Tensor> got = RunOnGpu(SoftmaxProgram(dt, s, -1), {x});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ExpectValuesClose(AsDoubles(got[i]), AsDoubles(want[i]), tol, "softmax output");
    Tensor sf, bf;
    const Tensor scale = RandomOf(dt, {1000}, 41, 1.0f, &sf),
                 bias = RandomOf(dt, {1000}, 42, 1.0f, &bf);
    want = RunOnCpu(LayerNormProgram(DType::kF32, s, -1, {1000}, {1000}), {xf, sf, bf});
    got = RunOnGpu(LayerNormProgram(dt, s, -1, {1000}, {1000}), {x, scale, bias});
    ASSERT_EQ(got.size(), 1u);
    ExpectValuesClose(AsDoubles(got[0]), AsDoubles(want[0]), 2 * tol, "layer_norm");
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

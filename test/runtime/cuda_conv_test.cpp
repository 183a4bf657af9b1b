// The CUDA convolution and pooling kernels (conv, conv_grad_input,
// conv_grad_weight, max_pool, avg_pool, max_pool_grad, avg_pool_grad,
// global_max_pool, global_avg_pool) through the executor on GPU 0, host
// fallback off, against the host executor: 1-D, 2-D and 3-D, strides, pads,
// dilations, groups, ceil_mode, count_include_pad, a weight gradient long
// enough to be summed in chunks, NaN and infinities in pools, empty
// batches, f64, and bf16/f16 against the f32 result.
#include <map>

#include "conv_util.h"
#include "cuda_kernel_check.h"

namespace distrt {
namespace testing {
namespace {

// One instruction with a list of attributes known only at run time.
int ApplyWith(ProgramBuilder& b, const std::string& op, const std::vector<int>& in, DType dtype,
              const Shape& shape, const std::map<std::string, proto::Attribute>& attrs) {
  const int y = b.Value(dtype, shape);
  proto::Instruction& inst = b.Op(op, in, {y});
  for (const auto& kv : attrs) (*inst.mutable_attrs())[kv.first] = kv.second;
  return y;
}

// Output extents by the host's rules.
Shape SpatialOut(const std::map<std::string, proto::Attribute>& attrs, const Shape& x,
                 const std::vector<int64_t>& kernel, bool ceil_mode) {
  proto::Instruction inst;
  for (const auto& kv : attrs) (*inst.mutable_attrs())[kv.first] = kv.second;
  Spatial sp;
  Status st = ReadSpatial(AttrReader(inst), x, kernel, ceil_mode, &sp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  Shape out;
  for (int j = 3 - sp.rank; j < 3; ++j) out.push_back(sp.out[j]);
  return out;
}

// ---- conv -------------------------------------------------------------------------

struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool bias;
};

const ConvCase kConvCases[] = {
    {"2d pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {"stride 2, asymmetric pads, dilation", {1, 2, 9, 8}, {3, 2, 3, 2}, {2, 3}, {0, 1, 2, 0},
     {2, 1}, 1, false},
    {"groups", {2, 6, 5, 5}, {4, 3, 3, 3}, {1, 2}, {1, 0, 1, 2}, {1, 1}, 2, true},
    {"depthwise", {2, 8, 12, 12}, {8, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8, true},
    {"1d", {2, 3, 11}, {5, 3, 4}, {3}, {2, 1}, {2}, 1, true},
    {"3d", {1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {2, 1, 1}, {1, 0, 1, 1, 0, 0}, {1, 2, 1}, 1, true},
    {"pads wider than the kernel", {1, 2, 3, 3}, {2, 2, 1, 1}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 1,
     true},
    // A CNN layer; its weight gradient sums 16 * 32 * 32 positions in chunks.
    {"cnn layer", {16, 8, 32, 32}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
};

std::map<std::string, proto::Attribute> ConvAttrs(const ConvCase& c) {
  return {{"strides", AttrInts(c.strides)},
          {"pads", AttrInts(c.pads)},
          {"dilations", AttrInts(c.dilations)},
          {"group", AttrInt(c.group)},
          {"kernel_shape", AttrInts(std::vector<int64_t>(c.w.begin() + 2, c.w.end()))}};
}

Shape ConvOut(const ConvCase& c) {
  Shape y = {c.x[0], c.w[0]};
  for (int64_t o : SpatialOut(ConvAttrs(c), c.x, {c.w.begin() + 2, c.w.end()}, false))
    y.push_back(o);
  return y;
}

// conv (with its bias, if any), conv_grad_input and conv_grad_weight.
std::shared_ptr<const Program> ConvProgram(const ConvCase& c, DType dt) {
  const auto attrs = ConvAttrs(c);
  const Shape ys = ConvOut(c);
  ProgramBuilder b;
  const int x = b.Input("x", dt, c.x), w = b.Input("w", dt, c.w), dy = b.Input("dy", dt, ys);
  std::vector<int> in = {x, w};
  if (c.bias) in.push_back(b.Input("b", dt, {c.w[0]}));
  b.Output("y", ApplyWith(b, "conv", in, dt, ys, attrs));
  b.Output("dx", ApplyWith(b, "conv_grad_input", {dy, w}, dt, c.x, attrs));
  b.Output("dw", ApplyWith(b, "conv_grad_weight", {x, dy}, dt, c.w, attrs));
  return MakeProgram(b);
}

// The inputs in the program's order (x, w, dy, bias), and their f32 values.
std::vector<Tensor> ConvInputs(const ConvCase& c, DType dt, uint32_t seed,
                               std::vector<Tensor>* as_f32 = nullptr) {
  const Shape shapes[] = {c.x, c.w, ConvOut(c), {c.w[0]}};
  std::vector<Tensor> in;
  for (int i = 0; i < (c.bias ? 4 : 3); ++i) {
    Tensor f;
    in.push_back(RandomOf(dt, shapes[i], seed + static_cast<uint32_t>(i), 1.0f, &f));
    if (as_f32) as_f32->push_back(f);
  }
  return in;
}

TEST(CudaConv, ConvAndGradientsMatchCpu) {
  NEED_GPU();
  uint32_t seed = 1;
  for (const ConvCase& c : kConvCases) {
    SCOPED_TRACE(c.name);
    ExpectGpuMatchesCpu(ConvProgram(c, DType::kF32), ConvInputs(c, DType::kF32, seed), 1e-4);
    ExpectGpuMatchesCpu(ConvProgram(c, DType::kF64), ConvInputs(c, DType::kF64, seed), 1e-11);
    seed += 10;
  }
}

// bf16 / f16 programs on the GPU (computing in f32) against the host's f32
// program on the same values, within the 16-bit rounding.
TEST(CudaConv, HalfTypesMatchTheF32Result) {
  NEED_GPU();
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const double tol = dt == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
    uint32_t seed = 50;
    for (const ConvCase& c : kConvCases) {
      SCOPED_TRACE(std::string(c.name) + " " + DTypeName(dt));
      std::vector<Tensor> as_f32;
      const std::vector<Tensor> in = ConvInputs(c, dt, seed, &as_f32);
      const std::vector<Tensor> want = RunOnCpu(ConvProgram(c, DType::kF32), as_f32);
      const std::vector<Tensor> got = RunOnGpu(ConvProgram(c, dt), in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ExpectValuesClose(AsDoubles(got[i]), AsDoubles(want[i]), tol, "output " + std::to_string(i));
      seed += 10;
    }
  }
}

// ---- pools --------------------------------------------------------------------------

struct PoolCase {
  const char* name;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode;
};

const PoolCase kPoolCases[] = {
    {"2x2 stride 2", {4, 8, 16, 16}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0},
    {"3x3 stride 2 pad 1 ceil", {2, 3, 8, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
    {"asymmetric pads, dilation", {2, 2, 7, 8}, {2, 3}, {1, 2}, {1, 0, 0, 2}, {2, 2}, 0},
    {"1d ceil", {3, 2, 10}, {3}, {2}, {1, 1}, {1}, 1},
    {"3d", {1, 2, 5, 4, 6}, {2, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 1}, 1},
    {"pads wider than the window", {1, 2, 3, 4}, {1, 2}, {1, 1}, {2, 1, 2, 1}, {1, 1}, 0},
    {"empty batch", {0, 2, 6, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0},
};

// max_pool, avg_pool (count_include_pad as given), their gradients, and the
// global pools of x.
std::shared_ptr<const Program> PoolProgram(const PoolCase& c, DType dt, bool include_pad) {
  const std::map<std::string, proto::Attribute> attrs = {
      {"kernel", AttrInts(c.kernel)},     {"strides", AttrInts(c.strides)},
      {"pads", AttrInts(c.pads)},         {"dilations", AttrInts(c.dilations)},
      {"ceil_mode", AttrInt(c.ceil_mode)}, {"count_include_pad", AttrInt(include_pad ? 1 : 0)}};
  Shape ys = {c.x[0], c.x[1]};
  for (int64_t o : SpatialOut(attrs, c.x, c.kernel, c.ceil_mode != 0)) ys.push_back(o);
  Shape gs = c.x;
  for (size_t i = 2; i < gs.size(); ++i) gs[i] = 1;
  ProgramBuilder b;
  const int x = b.Input("x", dt, c.x), dy = b.Input("dy", dt, ys);
  b.Output("max", ApplyWith(b, "max_pool", {x}, dt, ys, attrs));
  b.Output("avg", ApplyWith(b, "avg_pool", {x}, dt, ys, attrs));
  b.Output("max_grad", ApplyWith(b, "max_pool_grad", {x, dy}, dt, c.x, attrs));
  b.Output("avg_grad", ApplyWith(b, "avg_pool_grad", {x, dy}, dt, c.x, attrs));
  b.Output("global_max", b.Apply("global_max_pool", {x}, dt, gs));
  b.Output("global_avg", b.Apply("global_avg_pool", {x}, dt, gs));
  return MakeProgram(b);
}

Shape PoolOut(const PoolCase& c) {
  Shape ys = {c.x[0], c.x[1]};
  for (int64_t o : SpatialOut({{"kernel", AttrInts(c.kernel)},
                               {"strides", AttrInts(c.strides)},
                               {"pads", AttrInts(c.pads)},
                               {"dilations", AttrInts(c.dilations)}},
                              c.x, c.kernel, c.ceil_mode != 0))
    ys.push_back(o);
  return ys;
}

// Values with ties (multiples of 1/2), and in the first plane a NaN, +inf
// and -inf.
Tensor PoolInput(const PoolCase& c, DType dt, uint32_t seed, bool specials) {
  Tensor x = RandomOf(dt, c.x, seed, 2.0f);
  if (dt != DType::kF32 && dt != DType::kF64) return x;
  const int64_t plane = c.x[0] == 0 ? 0 : NumElements(c.x) / (c.x[0] * c.x[1]);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    double v = dt == DType::kF32 ? x.data<float>()[i] : x.data<double>()[i];
    v = std::round(v * 2) / 2;
    if (specials && plane >= 5 && i == 1) v = NAN;
    if (specials && plane >= 5 && i == 3) v = INFINITY;
    if (specials && plane >= 5 && i == plane - 1) v = -INFINITY;
    if (dt == DType::kF32)
      x.data<float>()[i] = static_cast<float>(v);
    else
      x.data<double>()[i] = v;
  }
  return x;
}

TEST(CudaPool, PoolsAndGradientsMatchCpu) {
  NEED_GPU();
  uint32_t seed = 100;
  for (const PoolCase& c : kPoolCases) {
    for (const bool include_pad : {false, true}) {
      for (const bool specials : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + (include_pad ? ", count_include_pad" : "") +
                     (specials ? ", NaN and inf" : ""));
        for (DType dt : {DType::kF32, DType::kF64}) {
          // Everything but the global average is the host's bit for bit;
          // that one sums in another order.
          ExpectGpuMatchesCpu(PoolProgram(c, dt, include_pad),
                              {PoolInput(c, dt, seed, specials),
                               RandomOf(dt, PoolOut(c), seed + 1)},
                              dt == DType::kF32 ? 1e-6 : 1e-14);
        }
        seed += 2;
      }
    }
  }
}

TEST(CudaPool, HalfTypesMatchTheF32Result) {
  NEED_GPU();
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const double tol = dt == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
    uint32_t seed = 300;
    for (const PoolCase& c : kPoolCases) {
      SCOPED_TRACE(std::string(c.name) + " " + DTypeName(dt));
      Tensor xf, dyf;
      const Tensor x = RandomOf(dt, c.x, seed, 2.0f, &xf);
      const Tensor dy = RandomOf(dt, PoolOut(c), seed + 1, 1.0f, &dyf);
      const std::vector<Tensor> want = RunOnCpu(PoolProgram(c, DType::kF32, true), {xf, dyf});
      const std::vector<Tensor> got = RunOnGpu(PoolProgram(c, dt, true), {x, dy});
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ExpectValuesClose(AsDoubles(got[i]), AsDoubles(want[i]), tol, "output " + std::to_string(i));
      seed += 2;
    }
  }
}

// Global pools over long planes (a warp's lanes share each) and 1-D inputs.
TEST(CudaPool, GlobalPoolsOverLongPlanesMatchCpu) {
  NEED_GPU();
  for (const Shape& s : {Shape{4, 64, 56, 56}, Shape{2, 3, 5000}, Shape{3, 5, 1, 1}}) {
    SCOPED_TRACE(ShapeToString(s));
    Shape gs = s;
    for (size_t i = 2; i < gs.size(); ++i) gs[i] = 1;
    ProgramBuilder b;
    const int x = b.Input("x", DType::kF32, s);
    b.Output("max", b.Apply("global_max_pool", {x}, DType::kF32, gs));
    b.Output("avg", b.Apply("global_avg_pool", {x}, DType::kF32, gs));
    ExpectGpuMatchesCpu(MakeProgram(b), {RandomOf(DType::kF32, s, 400, 3.0f)}, 1e-6);
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

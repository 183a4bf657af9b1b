// bf16 and f16 instructions on the host: every kernel family against its
// f32 kernel on the same (16-bit-rounded) inputs, rounded to the storage
// dtype. The host runs 16-bit floats in f32 (via_f32.h) or by element bytes
// (data movement), so the results must match bit for bit; the rounding used
// for the expectation is the scalar one of dtype.h, not the executor's loop.
// Then whole programs: a small transformer-like chain in bf16 against f32,
// packed bf16 weights, an in-place bf16 optimizer update, the memory plan.
#include <cstring>
#include <utility>

#include "distrt/program_builder.h"
#include "test_util.h"
#include "via_f32.h"

namespace distrt {
namespace testing {
namespace {

using AttrList = std::vector<std::pair<std::string, proto::Attribute>>;

uint16_t Round16(float x, DType dt) { return dt == DType::kBF16 ? FloatToBF16(x) : FloatToHalf(x); }
float Widen16(uint16_t b, DType dt) { return dt == DType::kBF16 ? BF16ToFloat(b) : HalfToFloat(b); }

// `values` rounded to bf16/f16 (or kept as f32/f64/ints when dt is not a
// 16-bit float).
Tensor Half(DType dt, const Shape& shape, const std::vector<float>& values) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(dt, shape, &t).ok());
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<uint16_t>()[i] = Round16(values[i], dt);
  return t;
}

std::vector<float> Uniform(int64_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::vector<float> v = RandomUniform<float>(n, seed);
  for (float& x : v) x = lo + (x + 1) * 0.5f * (hi - lo);
  return v;
}

Tensor RandomHalf(DType dt, const Shape& shape, uint32_t seed, float lo = -2, float hi = 2) {
  return Half(dt, shape, Uniform(NumElements(shape), seed, lo, hi));
}

// An f32 copy of a bf16/f16 tensor (exact); other tensors unchanged.
Tensor Widened(const Tensor& t) {
  if (!IsHalfFloat(t.dtype())) return t;
  Tensor w;
  EXPECT_TRUE(Tensor::Allocate(DType::kF32, t.shape(), &w).ok());
  for (int64_t i = 0; i < t.num_elements(); ++i)
    w.data<float>()[i] = Widen16(t.data<uint16_t>()[i], t.dtype());
  return w;
}

Status Run(const std::string& op, const std::vector<Tensor>& inputs,
           const std::vector<TensorType>& out_types, const AttrList& attrs,
           std::vector<Tensor>* outputs, const ExecutorOptions& options = ExecutorOptions(),
           int64_t* via_f32 = nullptr) {
  ProgramBuilder b;
  std::vector<int> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(b.Input("in" + std::to_string(i), inputs[i].dtype(), inputs[i].shape()));
  for (size_t i = 0; i < out_types.size(); ++i) {
    outs.push_back(b.Value(out_types[i].dtype, out_types[i].shape));
    b.Output("out" + std::to_string(i), outs.back());
  }
  proto::Instruction& inst = b.Op(op, ins, outs);
  for (const auto& [name, value] : attrs) (*inst.mutable_attrs())[name] = value;
  std::shared_ptr<const Program> prog;
  DISTRT_RETURN_IF_ERROR(Program::Create(b.Build(), "<test>", ".", &prog));
  std::unique_ptr<Executor> exec;
  DISTRT_RETURN_IF_ERROR(Executor::Create(prog, nullptr, options, &exec));
  if (via_f32 != nullptr) *via_f32 = exec->stats().instructions_via_f32;
  return exec->Run(inputs, outputs);
}

// Runs `op` on `inputs` (some bf16/f16) with the declared `outs`, and the
// same op on their f32 copies with f32 in place of every 16-bit dtype;
// expects each 16-bit output to be the f32 result rounded (within `ulps`
// units in the last place), every other output to be equal bytes.
void ExpectAsF32(const std::string& op, const std::vector<Tensor>& inputs,
                 const std::vector<TensorType>& outs, const AttrList& attrs = {}, int ulps = 0,
                 const ExecutorOptions& options = ExecutorOptions()) {
  SCOPED_TRACE(op);
  std::vector<Tensor> got, want;
  Status st = Run(op, inputs, outs, attrs, &got, options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<Tensor> wide_inputs;
  std::vector<TensorType> wide_outs;
  for (const Tensor& t : inputs) wide_inputs.push_back(Widened(t));
  for (const TensorType& t : outs) wide_outs.push_back(WidenedType(t));
  st = Run(op, wide_inputs, wide_outs, attrs, &want);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(got.size(), outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    ASSERT_EQ(got[k].type(), outs[k]) << "output " << k;
    if (!IsHalfFloat(outs[k].dtype)) {
      EXPECT_TRUE(got[k].Equals(want[k])) << "output " << k;
      continue;
    }
    const DType dt = outs[k].dtype;
    for (int64_t i = 0; i < got[k].num_elements(); ++i) {
      const float w = want[k].data<float>()[i];
      const uint16_t g = got[k].data<uint16_t>()[i];
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(Widen16(g, dt))) << "output " << k << " element " << i;
        continue;
      }
      const int diff = std::abs(static_cast<int>(g) - static_cast<int>(Round16(w, dt)));
      EXPECT_LE(diff, ulps) << "output " << k << " element " << i << ": got "
                            << Widen16(g, dt) << ", f32 kernel gives " << w;
    }
  }
}

class HalfTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dt() const { return GetParam(); }
  TensorType T(const Shape& s) const { return {dt(), s}; }
};

TEST_P(HalfTest, Unary) {
  const Tensor x = RandomHalf(dt(), {3, 37}, 1, -4, 4);
  const Tensor pos = RandomHalf(dt(), {3, 37}, 2, 0.01f, 8);
  for (const char* op : {"neg", "abs", "exp", "tanh", "sigmoid", "erf", "relu", "sin", "cos",
                         "floor", "ceil", "round", "sign", "gelu"})
    ExpectAsF32(op, {x}, {T({3, 37})});
  for (const char* op : {"log", "sqrt", "reciprocal"}) ExpectAsF32(op, {pos}, {T({3, 37})});
  ExpectAsF32("gelu", {x}, {T({3, 37})}, {{"approximate", AttrString("tanh")}});
  ExpectAsF32("leaky_relu", {x}, {T({3, 37})}, {{"alpha", AttrFloat(0.1)}});
  ExpectAsF32("clip", {x}, {T({3, 37})}, {{"min", AttrFloat(-1)}, {"max", AttrFloat(0.5)}});
}

TEST_P(HalfTest, BinaryBroadcastAndComparisons) {
  const Tensor a = RandomHalf(dt(), {4, 1, 9}, 3), b = RandomHalf(dt(), {5, 9}, 4, 0.5f, 3);
  for (const char* op : {"add", "sub", "mul", "div", "max", "min"})
    ExpectAsF32(op, {a, b}, {T({4, 5, 9})});
  ExpectAsF32("pow", {b, a}, {T({4, 5, 9})});  // positive bases
  for (const char* op : {"equal", "less", "less_equal", "greater", "greater_equal"})
    ExpectAsF32(op, {a, b}, {{DType::kBool, {4, 5, 9}}});
  Tensor c = Bool({5, 9}, std::vector<int>(45, 0));
  for (int i = 0; i < 45; i += 3) c.data<uint8_t>()[i] = 1;
  ExpectAsF32("where", {c, a, b}, {T({4, 5, 9})});
}

TEST_P(HalfTest, MixedWithF32) {
  // A 16-bit operand beside an f32 one (a norm kept in f32): computed in
  // f32, stored as declared.
  const Tensor x = RandomHalf(dt(), {6, 16}, 5);
  const Tensor g = F32({16}, Uniform(16, 6)), bias = F32({16}, Uniform(16, 7));
  ExpectAsF32("layer_norm", {x, g, bias}, {T({6, 16})}, {{"axis", AttrInt(-1)}});
  ExpectAsF32("layer_norm", {x, g, bias}, {{DType::kF32, {6, 16}}}, {{"axis", AttrInt(-1)}});
  ExpectAsF32("add", {x, F32({16}, Uniform(16, 8))}, {{DType::kF32, {6, 16}}});
}

TEST_P(HalfTest, Reductions) {
  // Long rows: a 16-bit accumulator would lose the small terms.
  const Tensor x = RandomHalf(dt(), {3, 4, 300}, 9, 0, 1);
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    ExpectAsF32(op, {x}, {T({3, 4, 1})}, {{"axes", AttrInts({2})}});
    ExpectAsF32(op, {x}, {T({4})}, {{"axes", AttrInts({0, 2})}, {"keepdims", AttrInt(0)}});
  }
  ExpectAsF32("reduce_prod", {RandomHalf(dt(), {2, 8}, 10, 0.5f, 1.5f)}, {T({2, 1})},
              {{"axes", AttrInts({1})}});
  ExpectAsF32("argmax", {x}, {{DType::kI64, {3, 4, 1}}}, {{"axis", AttrInt(2)}});
  ExpectAsF32("argmin", {x}, {{DType::kI64, {3, 1, 300}}}, {{"axis", AttrInt(1)}});
}

TEST_P(HalfTest, Normalisations) {
  const Tensor x = RandomHalf(dt(), {2, 3, 50}, 11, -6, 6);
  ExpectAsF32("softmax", {x}, {T({2, 3, 50})}, {{"axis", AttrInt(-1)}});
  ExpectAsF32("log_softmax", {x}, {T({2, 3, 50})}, {{"axis", AttrInt(1)}});
  ExpectAsF32("layer_norm", {x, RandomHalf(dt(), {50}, 12), RandomHalf(dt(), {50}, 13)},
              {T({2, 3, 50})}, {{"axis", AttrInt(-1)}, {"epsilon", AttrFloat(1e-5)}});
  ExpectAsF32("batch_norm",
              {x, RandomHalf(dt(), {3}, 14), RandomHalf(dt(), {3}, 15), RandomHalf(dt(), {3}, 16),
               RandomHalf(dt(), {3}, 17, 0.5f, 2)},
              {T({2, 3, 50})});
}

TEST_P(HalfTest, Matmul) {
  const Tensor a = RandomHalf(dt(), {2, 7, 40}, 18), b = RandomHalf(dt(), {40, 24}, 19);
  ExpectAsF32("matmul", {a, b}, {T({2, 7, 24})});
  ExpectAsF32("matmul", {a, RandomHalf(dt(), {24, 40}, 20)}, {T({2, 7, 24})},
              {{"transpose_rhs", AttrInt(1)}});
  // Bias and the GELU epilogue (f32-only in the f32 kernel) come along.
  ExpectAsF32("matmul", {a, b, RandomHalf(dt(), {24}, 21)}, {T({2, 7, 24})},
              {{"epilogue", AttrString("gelu")}});
}

TEST_P(HalfTest, ConvAndPools) {
  const Tensor x = RandomHalf(dt(), {1, 3, 9, 9}, 22), w = RandomHalf(dt(), {4, 3, 3, 3}, 23);
  ExpectAsF32("conv", {x, w, RandomHalf(dt(), {4}, 24)}, {T({1, 4, 9, 9})},
              {{"pads", AttrInts({1, 1, 1, 1})}});
  ExpectAsF32("max_pool", {x}, {T({1, 3, 4, 4})},
              {{"kernel", AttrInts({2, 2})}, {"strides", AttrInts({2, 2})}});
  ExpectAsF32("avg_pool", {x}, {T({1, 3, 4, 4})},
              {{"kernel", AttrInts({3, 3})}, {"strides", AttrInts({2, 2})}});
  ExpectAsF32("global_avg_pool", {x}, {T({1, 3, 1, 1})});
}

TEST_P(HalfTest, DataMovementByBytes) {
  const Tensor x = RandomHalf(dt(), {2, 3, 5}, 25);
  ExpectAsF32("transpose", {x}, {T({5, 2, 3})}, {{"perm", AttrInts({2, 0, 1})}});
  ExpectAsF32("reshape", {x}, {T({6, 5})});
  ExpectAsF32("identity", {x}, {T({2, 3, 5})});
  ExpectAsF32("expand", {RandomHalf(dt(), {3, 1}, 26)}, {T({2, 3, 4})});
  ExpectAsF32("concat", {x, RandomHalf(dt(), {2, 1, 5}, 27)}, {T({2, 4, 5})},
              {{"axis", AttrInt(1)}});
  ExpectAsF32("slice", {x}, {T({2, 2, 3})},
              {{"starts", AttrInts({0, 1, 1})}, {"ends", AttrInts({2, 3, 4})}});
  ExpectAsF32("pad", {x}, {T({2, 3, 8})},
              {{"pads", AttrInts({0, 0, 1, 0, 0, 2})}, {"value", AttrFloat(0.3)}});
  ExpectAsF32("gather", {x, I64({4}, {2, 0, -1, 1})}, {T({2, 4, 5})}, {{"axis", AttrInt(1)}});
  // (scatter_add adds 16-bit rows itself; portable_index_test checks it.)
  // A cast is its own conversion, to and from 16 bits.
  ExpectAsF32("cast", {x}, {{DType::kF32, {2, 3, 5}}});
  ExpectAsF32("cast", {F32({4}, {1.00390625f, -3.3f, 1e30f, 65504.f})}, {T({4})});
}

TEST_P(HalfTest, Optimizers) {
  // A 16-bit parameter with f32 moments: the moments stay f32.
  const Tensor p = RandomHalf(dt(), {33}, 29), g = RandomHalf(dt(), {33}, 30);
  const Tensor m = F32({33}, Uniform(33, 31, -0.1f, 0.1f)), v = F32({33}, Uniform(33, 32, 0, 0.1f));
  auto scalar = [](float x) { return F32({}, {x}); };
  ExpectAsF32("adam_update",
              {p, g, m, v, scalar(1), scalar(0.999f), scalar(1e-2f), scalar(0.1f)},
              {T({33}), {DType::kF32, {33}}, {DType::kF32, {33}}},
              {{"beta1", AttrFloat(0.9)},
               {"beta2", AttrFloat(0.999)},
               {"eps", AttrFloat(1e-8)},
               {"weight_decay", AttrFloat(0)}});
  ExpectAsF32("sgd_update", {p, g, RandomHalf(dt(), {33}, 33), scalar(1), scalar(0.05f)},
              {T({33}), T({33})},
              {{"momentum", AttrFloat(0.9)}, {"weight_decay", AttrFloat(0.01)},
               {"nesterov", AttrInt(0)}});
}

// A 16-bit gradient of an f32 parameter (a bf16 policy's, its cast folded
// by dist-fuse-for-target): the optimizer updates and sum_squares read it
// as stored, without the executor's f32 copy, and give the bits of their
// run on its f32 cast. 5000 elements: two whole f16 widening blocks and a tail.
TEST_P(HalfTest, OptimizersReadANarrowGradient) {
  const int64_t n = 5000;
  const Tensor p = F32({n}, Uniform(n, 41)), g = RandomHalf(dt(), {n}, 42);
  const Tensor m = F32({n}, Uniform(n, 43, -0.1f, 0.1f)), v = F32({n}, Uniform(n, 44, 0, 0.1f));
  auto scalar = [](float x) { return F32({}, {x}); };
  const TensorType f32{DType::kF32, {n}};
  for (const char* op : {"adam_update", "sgd_update", "sum_squares"}) {
    VerifyContext vc;
    proto::Instruction inst;
    vc.inst = &inst;
    if (std::string(op) == "sum_squares") {
      vc.inputs = {g.type()};
      vc.outputs = {{DType::kF32, {}}};
    } else {
      vc.inputs = {p.type(), g.type(), m.type()};
      vc.outputs = {f32, f32};
    }
    EXPECT_FALSE(RunsViaF32(*KernelRegistry::Get().Find(op), vc)) << op;
  }
  ExpectAsF32("adam_update",
              {p, g, m, v, scalar(0.37f), scalar(0.999f), scalar(1e-2f), scalar(0.1f)},
              {f32, f32, f32},
              {{"beta1", AttrFloat(0.9)},
               {"beta2", AttrFloat(0.999)},
               {"eps", AttrFloat(1e-8)},
               {"weight_decay", AttrFloat(0.01)}});
  ExpectAsF32(
      "sgd_update", {p, g, m, scalar(0.5f), scalar(0.05f)}, {f32, f32},
      {{"momentum", AttrFloat(0.9)}, {"weight_decay", AttrFloat(0.01)}, {"nesterov", AttrInt(1)}});
  ExpectAsF32("sum_squares", {RandomHalf(dt(), {3, 65536 + 7}, 45)}, {{DType::kF32, {}}});
}

// Adam's fourth output, a compute copy kept as state: the new f32
// parameter rounded to 16 bits by the kernel itself (no f32 copies), bit
// for bit the cast of its first output, which is the three-output run's.
// 5000 elements on 2 threads: whole rounding blocks and a tail; a bf16 and
// an f32 gradient.
TEST_P(HalfTest, AdamWritesTheParameterCopy) {
  const int64_t n = 5000;
  const Tensor p = F32({n}, Uniform(n, 51));
  const Tensor m = F32({n}, Uniform(n, 53, -0.1f, 0.1f)), v = F32({n}, Uniform(n, 54, 0, 0.1f));
  auto scalar = [](float x) { return F32({}, {x}); };
  const TensorType f32{DType::kF32, {n}};
  const AttrList attrs = {{"beta1", AttrFloat(0.9)},
                          {"beta2", AttrFloat(0.999)},
                          {"eps", AttrFloat(1e-8)},
                          {"weight_decay", AttrFloat(0.01)}};
  for (const Tensor& g : {RandomHalf(DType::kBF16, {n}, 52), F32({n}, Uniform(n, 55))}) {
    SCOPED_TRACE(DTypeName(g.dtype()));
    const std::vector<Tensor> in = {
        p, g, m, v, scalar(0.37f), scalar(0.999f), scalar(1e-2f), scalar(0.1f)};
    VerifyContext vc;
    proto::Instruction inst;
    vc.inst = &inst;
    for (const Tensor& t : in) vc.inputs.push_back(t.type());
    vc.outputs = {f32, f32, f32, T({n})};
    EXPECT_FALSE(RunsViaF32(*KernelRegistry::Get().Find("adam_update"), vc));
    std::vector<Tensor> three, four;
    ASSERT_TRUE(distrt::testing::Run("adam_update", in, {f32, f32, f32}, attrs, &three).ok());
    Status st = distrt::testing::Run("adam_update", in, {f32, f32, f32, T({n})}, attrs, &four);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (int k = 0; k < 3; ++k)
      ASSERT_EQ(0, std::memcmp(three[k].raw(), four[k].raw(), three[k].byte_size())) << k;
    for (int64_t i = 0; i < n; ++i) {
      const float x = four[0].data<float>()[i];
      const uint16_t want = dt() == DType::kBF16 ? FloatToBF16(x) : FloatToHalf(x);
      ASSERT_EQ(four[3].data<uint16_t>()[i], want) << i;
    }
  }
  // Any other fourth output is refused at load.
  std::vector<Tensor> out;
  Status st = distrt::testing::Run("adam_update",
                                   {p, p, m, v, scalar(1), scalar(1), scalar(1e-2f), scalar(0.1f)},
                                   {f32, f32, f32, {DType::kF32, {n}}}, attrs, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("or, for an f32 parameter, its bf16 or f16 copy"), std::string::npos)
      << st.ToString();
}

TEST_P(HalfTest, NaNAndInfinitySurvive) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Half(dt(), {6}, {nan, inf, -inf, 0.f, -0.f, 1.f});
  ExpectAsF32("exp", {x}, {T({6})});
  ExpectAsF32("max", {x, Half(dt(), {6}, {1, nan, 2, nan, 3, 4})}, {T({6})});
  ExpectAsF32("softmax", {x}, {T({6})}, {{"axis", AttrInt(0)}});
}

// The kernels with a 16-bit path of their own (binary arithmetic,
// where, the unary ops, gelu and its gradient through via_f32.h's
// MapWidenedBlocks,
// reductions over leading axes with widened rows) on sizes that
// span several widened blocks and thread chunks, and on every broadcast
// pattern: the bits of the f32 kernel, rounded once.
TEST_P(HalfTest, OwnSixteenBitPathsOnThreads) {
  const int64_t n = 3 * kWidenedBlock + 5;
  const Tensor a = RandomHalf(dt(), {3, n}, 21), b = RandomHalf(dt(), {3, n}, 22, 0.5f, 3);
  const Tensor scalar = RandomHalf(dt(), {1}, 23, 0.5f, 3), row = RandomHalf(dt(), {1, n}, 24);
  const Tensor column = RandomHalf(dt(), {3, 1}, 25, 0.5f, 3);
  // One row longer than two thread chunks: split within the row.
  const Tensor long_a = RandomHalf(dt(), {70001}, 26), long_b = RandomHalf(dt(), {70001}, 27);
  Tensor c = Bool({3, n}, std::vector<int>(static_cast<size_t>(3 * n), 0));
  for (int64_t i = 0; i < 3 * n; i += 7) c.data<uint8_t>()[i] = 1;
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    ExecutorOptions options;
    options.threads = threads;
    for (const char* op : {"add", "sub", "mul", "div"}) {
      ExpectAsF32(op, {a, b}, {T({3, n})}, {}, 0, options);
      ExpectAsF32(op, {a, scalar}, {T({3, n})}, {}, 0, options);
      ExpectAsF32(op, {scalar, b}, {T({3, n})}, {}, 0, options);
      ExpectAsF32(op, {row, column}, {T({3, n})}, {}, 0, options);
      ExpectAsF32(op, {column, scalar}, {T({3, 1})}, {}, 0, options);
      ExpectAsF32(op, {long_a, long_b}, {T({70001})}, {}, 0, options);
    }
    ExpectAsF32("where", {c, a, b}, {T({3, n})}, {}, 0, options);
    ExpectAsF32("where", {c, row, scalar}, {T({3, n})}, {}, 0, options);
    ExpectAsF32("gelu", {long_a}, {T({70001})}, {}, 0, options);
    ExpectAsF32("gelu", {a}, {T({3, n})}, {{"approximate", AttrString("tanh")}}, 0, options);
    ExpectAsF32("gelu_grad", {long_a, long_b}, {T({70001})}, {}, 0, options);
    for (const char* op : {"exp", "sigmoid", "tanh", "neg", "relu"})
      ExpectAsF32(op, {long_a}, {T({70001})}, {}, 0, options);
    // Reductions over axes with axes after them: columns in blocks of 1024,
    // (outer x blocks) split over the threads.
    const Tensor r = RandomHalf(dt(), {2, 5, 2500}, 28, 0, 1);
    const Tensor many = RandomHalf(dt(), {40, 2, 1100}, 30, -1, 1);
    for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
      ExpectAsF32(op, {many}, {T({40, 1, 1100})}, {{"axes", AttrInts({1})}}, 0, options);
      ExpectAsF32(op, {r}, {T({2500})}, {{"axes", AttrInts({0, 1})}, {"keepdims", AttrInt(0)}}, 0,
                  options);
    }
    ExpectAsF32("reduce_prod", {RandomHalf(dt(), {3, 4, 1100}, 29, 0.5f, 1.5f)}, {T({1, 4, 1100})},
                {{"axes", AttrInts({0})}}, 0, options);
  }
}

// Which kernels still widen whole tensors (the executor's count): none of
// the above; leaky_relu and max still go through f32 copies.
TEST_P(HalfTest, KernelsWithOwnPathsMakeNoF32Copies) {
  const Tensor a = RandomHalf(dt(), {4, 8}, 31), b = RandomHalf(dt(), {4, 8}, 32);
  const Tensor c = Bool({4, 8}, std::vector<int>(32, 1));
  auto via_f32 = [&](const std::string& op, const std::vector<Tensor>& in,
                     const Shape& out_shape = {4, 8}, const AttrList& attrs = {}) {
    std::vector<Tensor> out;
    int64_t count = -1;
    Status st = testing::Run(op, in, {T(out_shape)}, attrs, &out, ExecutorOptions(), &count);
    EXPECT_TRUE(st.ok()) << op << ": " << st.ToString();
    return count;
  };
  EXPECT_EQ(via_f32("where", {c, a, b}), 0);
  EXPECT_EQ(via_f32("gelu", {a}), 0);
  EXPECT_EQ(via_f32("gelu_grad", {a, b}), 0);
  for (const char* op : {"exp", "sigmoid", "sqrt", "neg", "round"})
    EXPECT_EQ(via_f32(op, {a}), 0) << op;
  EXPECT_EQ(via_f32("leaky_relu", {a}), 1);
  for (const char* op : {"add", "sub", "mul", "div"}) EXPECT_EQ(via_f32(op, {a, b}), 0) << op;
  EXPECT_EQ(via_f32("max", {a, b}), 1);  // no 16-bit path of its own
  // Columns: its own path; rows: through f32.
  EXPECT_EQ(via_f32("reduce_sum", {a}, {1, 8}, {{"axes", AttrInts({0})}}), 0);
  EXPECT_EQ(via_f32("reduce_sum", {a}, {4, 1}, {{"axes", AttrInts({1})}}), 1);
}

// Special values through the 16-bit paths: infinities and NaNs from
// arithmetic, and `where` moving a signalling NaN's bytes untouched.
TEST_P(HalfTest, SpecialValuesThroughOwnPaths) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Half(dt(), {6}, {nan, inf, -inf, 0.f, -0.f, 1.f});
  const Tensor y = Half(dt(), {6}, {1.f, inf, 2.f, 0.f, 3.f, 0.f});
  for (const char* op : {"add", "sub", "mul", "div"}) ExpectAsF32(op, {x, y}, {T({6})});
  ExpectAsF32("gelu", {x}, {T({6})});
  ExpectAsF32("gelu_grad", {x, y}, {T({6})});
  Tensor signalling = Half(dt(), {2}, {1.f, 2.f});
  const uint16_t snan = dt() == DType::kBF16 ? 0x7f81 : 0x7c01;
  signalling.data<uint16_t>()[0] = snan;
  std::vector<Tensor> out;
  ASSERT_TRUE(testing::Run("where", {Bool({2}, {1, 0}), signalling, Half(dt(), {2}, {5.f, 6.f})},
                           {T({2})}, {}, &out)
                  .ok());
  EXPECT_EQ(out[0].data<uint16_t>()[0], snan);
  EXPECT_EQ(out[0].data<uint16_t>()[1], Round16(6.f, dt()));
}

TEST_P(HalfTest, EmptyTensors) {
  ExpectAsF32("exp", {Half(dt(), {0, 3}, {})}, {T({0, 3})});
  ExpectAsF32("reduce_sum", {Half(dt(), {0, 3}, {})}, {T({1, 3})}, {{"axes", AttrInts({0})}});
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HalfTest, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return DTypeName(i.param);
                         });

// The conversion loops agree with the scalar conversions of dtype.h on
// every bf16 and f16 bit pattern (widening), and on f32 values around every
// rounding boundary, subnormals, infinities and NaNs (narrowing).
TEST(HalfConversions, MatchScalarConversions) {
  for (DType dt : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dt));
    std::vector<uint16_t> all(65536);
    for (int i = 0; i < 65536; ++i) all[static_cast<size_t>(i)] = static_cast<uint16_t>(i);
    std::vector<float> wide(all.size());
    WidenToF32(all.data(), dt, wide.data(), static_cast<int64_t>(all.size()), nullptr);
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = Widen16(all[i], dt);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(wide[i])) << i;
      } else {
        ASSERT_EQ(std::memcmp(&wide[i], &want, 4), 0) << i;
      }
    }
    std::vector<float> xs;
    for (uint32_t hi = 0; hi < 65536; hi += 7)
      for (uint32_t lo : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1000u, 0xe000u}) {
        const uint32_t bits = (hi << 16) | lo;
        float f;
        std::memcpy(&f, &bits, 4);
        xs.push_back(f);
      }
    std::vector<uint16_t> narrow(xs.size());
    NarrowFromF32(xs.data(), narrow.data(), dt, static_cast<int64_t>(xs.size()), nullptr);
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::isnan(xs[i])) {
        ASSERT_TRUE(std::isnan(Widen16(narrow[i], dt))) << i;
      } else {
        ASSERT_EQ(narrow[i], Round16(xs[i], dt)) << "f32 " << xs[i];
      }
    }
  }
}

// ---- whole programs -----------------------------------------------------------

// A small transformer-like chain: h = gelu(x W1 + b1), layer norm,
// logits = h W2, probabilities, and a cross-entropy-like loss
// -mean(sum(onehot * log_softmax(logits))). Weights are constants of
// `dt`; the bf16 program against the f32 one on the same rounded values.
struct Chain {
  std::shared_ptr<const Program> program;
  Tensor x, onehot;
};

Chain MakeChain(DType dt, int64_t rows, int64_t d, int64_t hidden, int64_t classes) {
  Chain c;
  ProgramBuilder b;
  auto constant = [&](const Shape& s, uint32_t seed, float scale) {
    Tensor t = RandomHalf(DType::kBF16, s, seed, -scale, scale);  // bf16 values in either dtype
    return b.Constant(dt == DType::kBF16 ? t : Widened(t));
  };
  const int x = b.Input("x", dt, {rows, d});
  const int onehot = b.Input("onehot", dt, {rows, classes});
  const int w1 = constant({d, hidden}, 40, 0.3f), b1 = constant({hidden}, 41, 0.1f);
  const int g = constant({hidden}, 42, 1.0f), beta = constant({hidden}, 43, 0.2f);
  const int w2 = constant({hidden, classes}, 44, 0.3f);
  const int h = b.Apply("matmul", {x, w1, b1}, dt, {rows, hidden},
                        {{"epilogue", AttrString("gelu")}});
  const int n = b.Apply("layer_norm", {h, g, beta}, dt, {rows, hidden}, {{"axis", AttrInt(-1)}});
  const int logits = b.Apply("matmul", {n, w2}, dt, {rows, classes});
  const int probs = b.Apply("softmax", {logits}, dt, {rows, classes}, {{"axis", AttrInt(-1)}});
  const int logp = b.Apply("log_softmax", {logits}, dt, {rows, classes}, {{"axis", AttrInt(-1)}});
  const int picked = b.Apply("mul", {onehot, logp}, dt, {rows, classes});
  const int per_row = b.Apply("reduce_sum", {picked}, dt, {rows},
                              {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}});
  const int mean = b.Apply("reduce_mean", {per_row}, dt, {}, {{"keepdims", AttrInt(0)}});
  const int loss = b.Apply("neg", {mean}, dt, {});
  b.Output("probs", probs);
  b.Output("loss", loss);
  EXPECT_TRUE(Program::Create(b.Build(), "chain", ".", &c.program).ok());
  c.x = RandomHalf(DType::kBF16, {rows, d}, 45, -2, 2);
  std::vector<float> hot(static_cast<size_t>(rows * classes), 0);
  for (int64_t r = 0; r < rows; ++r) hot[static_cast<size_t>(r * classes + (r * 7) % classes)] = 1;
  c.onehot = Half(DType::kBF16, {rows, classes}, hot);
  if (dt != DType::kBF16) {
    c.x = Widened(c.x);
    c.onehot = Widened(c.onehot);
  }
  return c;
}

std::vector<float> AsFloats(const Tensor& t) {
  if (t.dtype() == DType::kF32) return Vec<float>(t);
  return Vec<float>(Widened(t));
}

void ExpectChainTracksF32(int64_t rows, int64_t d, int64_t hidden, int64_t classes,
                          const ExecutorOptions& options) {
  std::vector<Tensor> half_out, f32_out;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    Chain c = MakeChain(dt, rows, d, hidden, classes);
    ASSERT_TRUE(c.program);
    std::unique_ptr<Executor> e;
    Status st = Executor::Create(c.program, nullptr, options, &e);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = e->Run({c.x, c.onehot}, dt == DType::kBF16 ? &half_out : &f32_out);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  ASSERT_EQ(half_out[0].dtype(), DType::kBF16);
  const std::vector<float> p16 = AsFloats(half_out[0]), p32 = AsFloats(f32_out[0]);
  // bf16 keeps 8 significant bits: each stored intermediate is off by up
  // to 2^-9 relative; a few layers of them stay within a few percent.
  for (size_t i = 0; i < p16.size(); ++i) ASSERT_NEAR(p16[i], p32[i], 0.02f + 0.03f * p32[i]) << i;
  const float l16 = AsFloats(half_out[1])[0], l32 = AsFloats(f32_out[1])[0];
  EXPECT_NEAR(l16, l32, 0.03f * std::abs(l32)) << "loss";
  EXPECT_GT(l32, 0.1f);  // a real loss, not a trivially equal zero
}

TEST(HalfProgram, ChainTracksF32) { ExpectChainTracksF32(8, 16, 32, 10, ExecutorOptions()); }

// Larger, on threads (and big enough for the packed GEMM of constant
// weights where oneDNN finds it worthwhile).
TEST(HalfProgram, LargerChainOnThreadsTracksF32) {
  ExecutorOptions options;
  options.threads = 2;
  ExpectChainTracksF32(64, 256, 512, 300, options);
}

// A constant bf16 weight of a matmul is widened once at load (and packed
// where oneDNN packs), then its bytes are freed: the executor holds what the
// f32 program holds (the packed copy, or the f32 weight), and each product
// is the f32 one rounded. On a CPU with bf16 instructions only when its
// products are widened (DISTRT_BF16_GEMM=f32): else they run in bf16.
TEST(HalfProgram, ConstantBF16WeightIsWidenedOnce) {
  setenv("DISTRT_BF16_GEMM", "f32", 1);
  struct Unset {
    ~Unset() { unsetenv("DISTRT_BF16_GEMM"); }
  } unset;
  TempDir dir;
  const int64_t rows = 64, k = 256, n = 512;
  const Tensor w16 = RandomHalf(DType::kBF16, {k, n}, 70, -0.5f, 0.5f);
  const Tensor w32 = Widened(w16);
  WriteFile(dir.File("w16.bin"), w16.raw(), w16.byte_size());
  WriteFile(dir.File("w32.bin"), w32.raw(), w32.byte_size());
  const Tensor x16 = RandomHalf(DType::kBF16, {rows, k}, 71);
  std::vector<Tensor> out[2];
  int64_t weight_bytes[2];
  for (DType dt : {DType::kBF16, DType::kF32}) {
    const bool half = dt == DType::kBF16;
    ProgramBuilder b;
    const int x = b.Input("x", dt, {rows, k});
    const int w = b.Weight("w", half ? "w16.bin" : "w32.bin", 0, dt, dt, {k, n}, {0, 0}, {k, n});
    b.Output("y", b.Apply("matmul", {x, w}, dt, {rows, n}));
    std::shared_ptr<const Program> p;
    ASSERT_TRUE(Program::Create(b.Build(), "packed", dir.path(), &p).ok());
    ExecutorOptions options;
    options.threads = 2;
    std::unique_ptr<Executor> e;
    Status st = Executor::Create(p, nullptr, options, &e);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (int run = 0; run < 2; ++run) {  // the second run finds the weight's bytes gone
      st = e->Run({half ? x16 : Widened(x16)}, &out[half]);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    weight_bytes[half] = e->stats().weight_bytes;
  }
  EXPECT_EQ(weight_bytes[1], weight_bytes[0]);
  for (int64_t i = 0; i < rows * n; ++i)
    ASSERT_EQ(out[1][0].data<uint16_t>()[i], FloatToBF16(out[0][0].data<float>()[i])) << i;
}

// What a kernel's prepare made from a 16-bit constant: prepare sees its f32
// copy; once prepare said it will not read the constant again and its bytes
// are gone, a run hands the kernel an f32 tensor of the constant's shape
// without bytes, and the state. (A kernel fake enough to see all of it.)
struct SumState : KernelState {
  float sum = 0;
};
Status PrepareSum(PrepareContext& ctx) {
  const Tensor* c = ctx.constant_inputs[1];
  if (c == nullptr || c->dtype() != DType::kF32) return InternalError("no f32 constant");
  auto state = std::make_shared<SumState>();
  for (int64_t i = 0; i < c->num_elements(); ++i) state->sum += c->data<float>()[i];
  ctx.prepared = state;
  ctx.data_unneeded[1] = true;
  return OkStatus();
}
Status RunAddSum(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &c = ctx.input(1);
  if (x.dtype() != DType::kF32 || c.dtype() != DType::kF32 || c.shape() != Shape{4})
    return InternalError("inputs not widened");
  if (c.raw() != nullptr) return InternalError("the freed constant was converted");
  const float sum = static_cast<SumState*>(ctx.prepared)->sum;
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  for (int64_t i = 0; i < x.num_elements(); ++i) y->data<float>()[i] = x.data<float>()[i] + sum;
  return OkStatus();
}

TEST(HalfViaF32, PreparedConstantIsNotReadAgain) {
  KernelDef def{"add_sum", 2, 2, 1, RunAddSum};
  def.prepare = PrepareSum;
  const Tensor c = Half(DType::kBF16, {4}, {0.5f, 1.5f, 2.0f, -1.0f});
  const Tensor x = Half(DType::kBF16, {3}, {1, 2, 3});
  proto::Instruction inst;
  VerifyContext vc;
  vc.inst = &inst;
  vc.inputs = {x.type(), c.type()};
  vc.outputs = {x.type()};
  ASSERT_TRUE(RunsViaF32(def, vc));
  KernelStates states;
  PrepareContext prep;
  prep.inst = &inst;
  prep.inputs = {x.type(), c.type()};
  prep.constant_inputs = {nullptr, &c};
  prep.states = &states;
  prep.data_unneeded.assign(2, false);
  Status st = PrepareViaF32(def, prep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(prep.data_unneeded, (std::vector<bool>{false, true}));
  c.buffer()->ReleaseData();  // what the executor does with it
  KernelContext ctx;
  ctx.inst = &inst;
  ctx.inputs = {&x, &c};
  ctx.output_types = {x.type()};
  std::vector<Tensor> out(1);
  ctx.outputs = &out;
  ctx.prepared = prep.prepared.get();
  st = RunViaF32(def, ctx);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out[0].type(), x.type());
  EXPECT_EQ(AsFloats(out[0]), (std::vector<float>{4, 5, 6}));
}

// A kernel whose prepare keeps nothing still reads the constant every run:
// its f32 copy is kept from the load, and the 16-bit bytes may go.
Status PrepareNothing(PrepareContext&) { return OkStatus(); }
Status RunAddAll(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &c = ctx.input(1);
  if (x.dtype() != DType::kF32 || c.dtype() != DType::kF32 || c.raw() == nullptr)
    return InternalError("inputs not widened");
  float sum = 0;
  for (int64_t i = 0; i < c.num_elements(); ++i) sum += c.data<float>()[i];
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  for (int64_t i = 0; i < x.num_elements(); ++i) y->data<float>()[i] = x.data<float>()[i] + sum;
  return OkStatus();
}

TEST(HalfViaF32, ConstantReadEveryRunIsWidenedOnce) {
  KernelDef def{"add_all", 2, 2, 1, RunAddAll};
  def.prepare = PrepareNothing;
  const Tensor c = Half(DType::kBF16, {4}, {0.5f, 1.5f, 2.0f, -1.0f});
  const Tensor x = Half(DType::kBF16, {3}, {1, 2, 3});
  proto::Instruction inst;
  KernelStates states;
  PrepareContext prep;
  prep.inst = &inst;
  prep.inputs = {x.type(), c.type()};
  prep.constant_inputs = {nullptr, &c};
  prep.states = &states;
  prep.data_unneeded.assign(2, false);
  ASSERT_TRUE(PrepareViaF32(def, prep).ok());
  EXPECT_EQ(prep.data_unneeded, (std::vector<bool>{false, true}));
  ASSERT_NE(prep.prepared, nullptr);
  c.buffer()->ReleaseData();
  KernelContext ctx;
  ctx.inst = &inst;
  ctx.inputs = {&x, &c};
  ctx.output_types = {x.type()};
  std::vector<Tensor> out(1);
  ctx.outputs = &out;
  ctx.prepared = prep.prepared.get();
  Status st = RunViaF32(def, ctx);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(AsFloats(out[0]), (std::vector<float>{4, 5, 6}));
}

// The plan counts the f32 copies a 16-bit instruction run through f32
// holds; the same program in f32 has none.
TEST(HalfProgram, PlannedPeakCountsTheF32Copies) {
  int64_t peak[2];
  for (DType dt : {DType::kBF16, DType::kF32}) {
    ProgramBuilder b;
    const int x = b.Input("x", dt, {1000});
    // leaky_relu: a kernel without a 16-bit path of its own.
    const int y = b.Apply("leaky_relu", {x}, dt, {1000});
    b.Output("y", y);
    std::shared_ptr<const Program> p;
    ASSERT_TRUE(Program::Create(b.Build(), "leaky_relu", ".", &p).ok());
    std::unique_ptr<Executor> e;
    ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
    peak[dt == DType::kF32] = e->stats().planned_peak_bytes;
  }
  EXPECT_EQ(peak[1], 8000);                // input and result
  EXPECT_EQ(peak[0], 4000 + 8000);         // the same in bf16, plus two f32 copies
}

// A bf16 parameter updated in place by SGD over several runs: each step is
// the f32 step on the rounded parameter, rounded back.
TEST(HalfProgram, InPlaceUpdateOfBF16Parameter) {
  TempDir dir;
  std::vector<uint16_t> p0(16);
  const std::vector<float> init = Uniform(16, 50);
  for (size_t i = 0; i < 16; ++i) p0[i] = FloatToBF16(init[i]);
  WriteFile(dir.File("p.bin"), p0.data(), p0.size() * 2);
  ProgramBuilder b;
  const int g = b.Input("g", DType::kBF16, {16});
  const int p = b.Weight("p", "p.bin", 0, DType::kBF16, DType::kBF16, {16}, {0}, {16});
  const int buf = b.ZerosWeight("buf", DType::kBF16, {16}, {0}, {16});
  const int one = b.Constant(F32({}, {1})), lr = b.Constant(F32({}, {0.25f}));
  const int p1 = b.Value(DType::kBF16, {16}), buf1 = b.Value(DType::kBF16, {16});
  b.Op("sgd_update", {p, g, buf, one, lr}, {p1, buf1},
       {{"momentum", AttrFloat(0)}, {"weight_decay", AttrFloat(0)}, {"nesterov", AttrInt(0)}});
  b.SetUpdate(p, p1);
  b.SetUpdate(buf, buf1);
  b.Output("p1", p1);
  std::shared_ptr<const Program> prog;
  Status st = Program::Create(b.Build(), "sgd", dir.path(), &prog);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(prog, nullptr, ExecutorOptions(), &e).ok());
  std::vector<uint16_t> want = p0;
  for (uint32_t step = 0; step < 3; ++step) {
    const Tensor grad = RandomHalf(DType::kBF16, {16}, 60 + step);
    std::vector<Tensor> out;
    st = e->Run({grad}, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < 16; ++i) {
      const float gi = BF16ToFloat(grad.data<uint16_t>()[i]);
      want[i] = FloatToBF16(BF16ToFloat(want[i]) - 0.25f * gi);
    }
    for (size_t i = 0; i < 16; ++i) ASSERT_EQ(out[0].data<uint16_t>()[i], want[i]) << step << " " << i;
  }
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  for (const PersistentTensor& s : state) {
    if (s.weight->name() == "p") {
      EXPECT_EQ(std::memcmp(s.value.raw(), want.data(), 32), 0);
    }
  }
}

// bf16 weights stored in bf16 load as bf16 when the program wants bf16
// (and widen when it wants f32, as before); f32 weights of a bf16 value are
// rounded at load.
TEST(HalfProgram, WeightsLoadInTheirDType) {
  TempDir dir;
  const std::vector<uint16_t> w = {FloatToBF16(1.5f), FloatToBF16(-2.25f), FloatToBF16(3.0f)};
  WriteFile(dir.File("w.bin"), w.data(), 6);
  for (DType want : {DType::kBF16, DType::kF32}) {
    ProgramBuilder b;
    const int v = b.Weight("w", "w.bin", 0, DType::kBF16, want, {3}, {0}, {3});
    const int y = b.Apply("identity", {v}, want, {3});
    b.Output("y", y);
    std::shared_ptr<const Program> p;
    ASSERT_TRUE(Program::Create(b.Build(), "w", dir.path(), &p).ok());
    std::unique_ptr<Executor> e;
    ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
    std::vector<Tensor> out;
    ASSERT_TRUE(e->Run({}, &out).ok());
    ASSERT_EQ(out[0].dtype(), want);
    EXPECT_EQ(AsFloats(out[0]), (std::vector<float>{1.5f, -2.25f, 3.0f}));
    EXPECT_EQ(e->stats().weight_bytes, want == DType::kBF16 ? 6 : 12);
  }
  const std::vector<float> w32 = {1.00390625f, -2.5f, 1e-3f};  // 1 + 2^-8 rounds to 1 (even)
  WriteFile(dir.File("w32.bin"), w32.data(), 12);
  ProgramBuilder b;
  const int v = b.Weight("w", "w32.bin", 0, DType::kF32, DType::kBF16, {3}, {0}, {3});
  b.Output("y", b.Apply("identity", {v}, DType::kBF16, {3}));
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), "w", dir.path(), &p);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({}, &out).ok());
  ASSERT_EQ(out[0].dtype(), DType::kBF16);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[0].data<uint16_t>()[i], FloatToBF16(w32[i])) << i;
  EXPECT_EQ(out[0].data<uint16_t>()[0], FloatToBF16(1.0f));
}

// A 16-bit instruction whose f32 form is wrong is refused at load, naming
// the instruction, as the f32 one would be.
TEST(HalfProgram, VerifiesAsF32) {
  ProgramBuilder b;
  const int x = b.Input("x", DType::kBF16, {2, 3});
  const int y = b.Apply("softmax", {x}, DType::kBF16, {3, 2});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), "bad", ".", &p);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "softmax");
}

}  // namespace
}  // namespace testing
}  // namespace distrt

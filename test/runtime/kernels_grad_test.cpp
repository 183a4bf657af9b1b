// The gradient kernels training needs: scatter_add (gather's gradient),
// conv_grad_input / conv_grad_weight and max_pool_grad / avg_pool_grad,
// each against a brute-force reference written here, and the conv and pool
// gradients also against central finite differences of the forward
// kernels in f64 (so they really are the gradients of what distrt runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

std::vector<double> RandomValues(int64_t n, uint32_t seed) {
  return RandomUniform<double>(n, seed);
}

// A tensor of dtype `dt` (f32 or f64) holding `v`.
Tensor FloatTensor(DType dt, const Shape& shape, const std::vector<double>& v) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(dt, shape, &t).ok());
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::kF32) t.data<float>()[i] = static_cast<float>(v[i]);
    if (dt == DType::kF64) t.data<double>()[i] = v[i];
  }
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    v.push_back(t.dtype() == DType::kF32 ? static_cast<double>(t.data<float>()[i])
                                         : t.data<double>()[i]);
  }
  return v;
}

// Rounds each value to the dtype, so references start from the same inputs.
std::vector<double> Rounded(DType dt, std::vector<double> v) {
  if (dt == DType::kF32) {
    for (double& x : v) x = static_cast<float>(x);
  }
  return v;
}

void ExpectNear(const Tensor& got, const Shape& shape, const std::vector<double>& want,
                double tol) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.shape(), shape);
  std::vector<double> g = Values(got);
  ASSERT_EQ(g.size(), want.size());
  double scale = 1.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * scale) << "element " << i;
  }
}

using AttrList = std::vector<std::pair<std::string, proto::Attribute>>;

// A one-instruction program on an executor with `threads`, kept for repeated
// runs (finite differences run the forward kernels hundreds of times).
class OneOp {
 public:
  OneOp(const std::string& op, const std::vector<TensorType>& ins, const TensorType& out,
        const AttrList& attrs, int threads = 1) {
    ProgramBuilder b;
    std::vector<int> ids;
    for (size_t i = 0; i < ins.size(); ++i) {
      ids.push_back(b.Input(StrCat("in", i), ins[i].dtype, ins[i].shape));
    }
    const int y = b.Apply(op, ids, out.dtype, out.shape);
    auto* a = b.proto().mutable_instructions(b.proto().instructions_size() - 1)->mutable_attrs();
    for (const auto& kv : attrs) (*a)[kv.first] = kv.second;
    b.Output("out", y);
    std::shared_ptr<const Program> p;
    status_ = Program::Create(b.Build(), "<test>", ".", &p);
    if (!status_.ok()) return;
    ExecutorOptions o;
    o.threads = threads;
    status_ = Executor::Create(p, nullptr, o, &exec_);
  }
  const Status& status() const { return status_; }
  Status Run(const std::vector<Tensor>& ins, Tensor* out) {
    DISTRT_RETURN_IF_ERROR(status_);
    std::vector<Tensor> outs;
    DISTRT_RETURN_IF_ERROR(exec_->Run(ins, &outs));
    *out = outs[0];
    return OkStatus();
  }
  Tensor Run(const std::vector<Tensor>& ins) {
    Tensor out;
    Status st = Run(ins, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

 private:
  Status status_;
  std::unique_ptr<Executor> exec_;
};

// ---- scatter_add -----------------------------------------------------------------

// out = base; out[pre, idx[j], post] += upd[pre, j, post], j in order.
template <typename T>
std::vector<T> RefScatterAdd(const std::vector<T>& base, const Shape& bshape,
                             const std::vector<int64_t>& idx, const std::vector<T>& upd, int axis) {
  int64_t pre = 1, post = 1;
  for (int i = 0; i < axis; ++i) pre *= bshape[i];
  for (size_t i = static_cast<size_t>(axis) + 1; i < bshape.size(); ++i) post *= bshape[i];
  const int64_t dim = bshape[static_cast<size_t>(axis)], n = static_cast<int64_t>(idx.size());
  std::vector<T> out = base;
  for (int64_t a = 0; a < pre; ++a)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t d = idx[j] < 0 ? idx[j] + dim : idx[j];
      for (int64_t c = 0; c < post; ++c) {
        out[(a * dim + d) * post + c] += upd[(a * n + j) * post + c];
      }
    }
  return out;
}

template <typename T>
void CheckScatterAdd(const Shape& bshape, const Shape& ishape, const std::vector<int64_t>& idx,
                     int axis, DType index_dtype, int threads, uint32_t seed) {
  SCOPED_TRACE(StrCat("base ", ShapeToString(bshape), " indices ", ShapeToString(ishape), " axis ",
                      axis, " threads ", threads));
  const DType dt = DTypeOf<T>::value;
  Shape ushape(bshape.begin(), bshape.begin() + axis);
  ushape.insert(ushape.end(), ishape.begin(), ishape.end());
  ushape.insert(ushape.end(), bshape.begin() + axis + 1, bshape.end());
  const std::vector<double> bv = Rounded(dt, RandomValues(NumElements(bshape), seed));
  const std::vector<double> uv = Rounded(dt, RandomValues(NumElements(ushape), seed + 1));
  Tensor ids;
  if (index_dtype == DType::kI64) {
    ids = I64(ishape, idx);
  } else {
    ids = I32(ishape, std::vector<int32_t>(idx.begin(), idx.end()));
  }
  OneOp op("scatter_add", {{dt, bshape}, {index_dtype, ishape}, {dt, ushape}}, {dt, bshape},
           {{"axis", AttrInt(axis)}}, threads);
  ASSERT_TRUE(op.status().ok()) << op.status().ToString();
  Tensor got = op.Run({FloatTensor(dt, bshape, bv), ids, FloatTensor(dt, ushape, uv)});
  // Same additions in the same order: bitwise equal.
  const std::vector<T> want = RefScatterAdd<T>(std::vector<T>(bv.begin(), bv.end()), bshape, idx,
                                               std::vector<T>(uv.begin(), uv.end()), axis);
  EXPECT_EQ(got.ToVector<T>(), want);
}

TEST(ScatterAdd, NegativeAndRepeatedIndicesEveryAxis) {
  for (int threads : {1, 3}) {
    // An embedding table: [V, D] with [B, T] ids, some repeated, some negative.
    CheckScatterAdd<float>({5, 3}, {2, 3}, {0, -1, 2, 0, 4, -5}, 0, DType::kI64, threads, 1);
    CheckScatterAdd<double>({5, 3}, {2, 3}, {0, -1, 2, 0, 4, -5}, 0, DType::kI32, threads, 2);
    // A middle axis, i32 indices.
    CheckScatterAdd<double>({2, 4, 3}, {5}, {1, -1, 1, 3, 0}, 1, DType::kI32, threads, 3);
    CheckScatterAdd<float>({2, 4, 3}, {5}, {1, -1, 1, 3, 0}, 1, DType::kI64, threads, 4);
    // The last axis (rows of one element) and a scalar index.
    CheckScatterAdd<float>({3, 4}, {2, 2}, {3, 3, -4, 1}, 1, DType::kI64, threads, 5);
    CheckScatterAdd<double>({4, 2}, {}, {-2}, 0, DType::kI64, threads, 6);
    // No indices at all: a copy of base.
    CheckScatterAdd<float>({4, 2}, {0}, {}, 0, DType::kI64, threads, 7);
  }
}

TEST(ScatterAdd, LargeTablesSplitColumnsOrRowsAcrossThreads) {
  std::mt19937 gen(11);
  // Wide rows (D = 256 >= 64 per thread): column blocks; many repeats.
  std::vector<int64_t> ids;
  for (int i = 0; i < 4 * 32; ++i) ids.push_back(static_cast<int64_t>(gen() % 50) - 25);
  for (int threads : {1, 4}) {
    CheckScatterAdd<float>({50, 256}, {4, 32}, ids, 0, DType::kI64, threads, 12);
    CheckScatterAdd<double>({50, 256}, {4, 32}, ids, 0, DType::kI32, threads, 13);
  }
  // Narrow rows: the positions are grouped by destination row.
  std::vector<int64_t> many;
  for (int i = 0; i < 20000; ++i) many.push_back(static_cast<int64_t>(gen() % 1000));
  for (int threads : {1, 4}) {
    CheckScatterAdd<float>({1000}, {20000}, many, 0, DType::kI64, threads, 14);
    CheckScatterAdd<double>({2, 1000, 3}, {20000}, many, 1, DType::kI64, threads, 15);
  }
}

TEST(ScatterAdd, IntegerAndHalfTypes) {
  Tensor base = I32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor upd = I32({2, 2}, {10, 20, 100, 200});
  Tensor out = Run1("scatter_add", {base, I64({2}, {2, 2}), upd}, {DType::kI32, {3, 2}},
                        {{"axis", AttrInt(0)}});
  EXPECT_EQ(Vec<int32_t>(out), (std::vector<int32_t>{1, 2, 3, 4, 115, 226}));
  // bf16: each addition rounds to bf16.
  Tensor hb, hu;
  ASSERT_TRUE(Tensor::Allocate(DType::kBF16, {2}, &hb).ok());
  ASSERT_TRUE(Tensor::Allocate(DType::kBF16, {3}, &hu).ok());
  const float bvals[] = {1.0f, -2.0f}, uvals[] = {0.5f, 0.25f, 3.0f};
  for (int i = 0; i < 2; ++i) hb.data<bf16_t>()[i].bits = FloatToBF16(bvals[i]);
  for (int i = 0; i < 3; ++i) hu.data<bf16_t>()[i].bits = FloatToBF16(uvals[i]);
  Tensor hout = Run1("scatter_add", {hb, I64({3}, {0, 0, 1}), hu}, {DType::kBF16, {2}});
  ASSERT_TRUE(hout.defined());
  EXPECT_EQ(BF16ToFloat(hout.data<bf16_t>()[0].bits), 1.75f);
  EXPECT_EQ(BF16ToFloat(hout.data<bf16_t>()[1].bits), 1.0f);
}

TEST(ScatterAdd, OutOfRangeIndexAndBadShapesAreErrors) {
  std::vector<Tensor> out;
  Status st = RunOp("scatter_add", {Iota({5, 2}), I64({3}, {0, 5, 1}), Iota({3, 2})},
                    {{DType::kF32, {5, 2}}}, {{"axis", AttrInt(0)}}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_HAS(st.message(),
             "scatter_add index 5 (at position 1) is out of range for an axis of "
             "size 5");
  st = RunOp("scatter_add", {Iota({5, 2}), I32({1}, {-6}), Iota({1, 2})}, {{DType::kF32, {5, 2}}},
             {}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_HAS(st.message(), "scatter_add index -6");
  // Updates must have gather's shape; the result is base's type.
  st = RunOp("scatter_add", {Iota({5, 2}), I64({3}, {0, 1, 2}), Iota({3, 3})},
             {{DType::kF32, {5, 2}}}, {}, &out);
  EXPECT_HAS(st.message(), "scatter_add updates are f32[3, 3], expected f32[3, 2]");
  st = RunOp("scatter_add", {Iota({5, 2}), I64({3}, {0, 1, 2}), Iota({3, 2})},
             {{DType::kF32, {3, 2}}}, {}, &out);
  EXPECT_FALSE(st.ok());
  st = RunOp("scatter_add", {Iota({5, 2}), Iota({3}), Iota({3, 2})}, {{DType::kF32, {5, 2}}}, {},
             &out);
  EXPECT_HAS(st.message(), "indices must be i64 or i32");
}

// Runs y = scatter_add(base, idx, upd) where base is neg(a) (a temporary
// dying there) or a itself (the caller's, never overwritten) and upd is
// always neg(c); returns y and the run's peak of live bytes.
void RunScatterAddChain(bool base_is_temporary, Tensor* y, int64_t* peak) {
  const Shape shape = {256, 4};
  ProgramBuilder b;
  const int a = b.Input("a", DType::kF32, shape);
  const int c = b.Input("c", DType::kF32, shape);
  const int idx = b.Input("idx", DType::kI64, {256});
  const int base = base_is_temporary ? b.Apply("neg", {a}, DType::kF32, shape) : a;
  const int upd = b.Apply("neg", {c}, DType::kF32, shape);
  b.Output("y", b.Apply("scatter_add", {base, idx, upd}, DType::kF32, shape));
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "<test>", ".", &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 256; ++i) ids.push_back((i * 7) % 5);  // rows 0..4, repeated
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({Iota(shape), Iota(shape, 0.5f, 1.0f), I64({256}, ids)}, &out).ok());
  *y = out[0];
  *peak = e->stats().peak_live_bytes;
}

TEST(ScatterAdd, TakesOverADyingBaseButNeverTheUpdates) {
  const Shape shape = {256, 4};
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 256; ++i) ids.push_back((i * 7) % 5);
  std::vector<float> a = Vec<float>(Iota(shape)), c = Vec<float>(Iota(shape, 0.5f, 1.0f));
  std::vector<float> neg_a, neg_c;
  for (float v : a) neg_a.push_back(-v);
  for (float v : c) neg_c.push_back(-v);
  const int64_t bytes = 256 * 4 * 4;
  Tensor y;
  int64_t peak = 0;
  // base dies here: the result takes its buffer (two live buffers, not three).
  RunScatterAddChain(true, &y, &peak);
  EXPECT_EQ(Vec<float>(y), RefScatterAdd<float>(neg_a, shape, ids, neg_c, 0));
  EXPECT_LT(peak, 3 * bytes);
  // base is the caller's and the updates die here, with the result's type:
  // they must not become the result while they are read.
  RunScatterAddChain(false, &y, &peak);
  EXPECT_EQ(Vec<float>(y), RefScatterAdd<float>(a, shape, ids, neg_c, 0));
}

// ---- conv gradients ---------------------------------------------------------------

struct ConvCfg {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

// Geometry of a conv padded to 3 spatial dims (leading 1s), computed here
// from the ONNX definition.
struct Geo {
  int r = 0;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, o[3] = {1, 1, 1};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return o[0] * o[1] * o[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

Geo ConvGeo(const ConvCfg& c) {
  Geo g;
  g.r = static_cast<int>(c.x.size()) - 2;
  for (int i = 0; i < g.r; ++i) {
    const int j = 3 - g.r + i;
    g.in[j] = c.x[2 + i];
    g.k[j] = c.w[2 + i];
    g.s[j] = c.strides[i];
    g.d[j] = c.dilations[i];
    g.pb[j] = c.pads[i];
    g.pe[j] = c.pads[i + g.r];
    g.o[j] = (g.in[j] + g.pb[j] + g.pe[j] - (g.k[j] - 1) * g.d[j] - 1) / g.s[j] + 1;
  }
  return g;
}

Shape ConvOutShape(const ConvCfg& c) {
  const Geo g = ConvGeo(c);
  Shape y = {c.x[0], c.w[0]};
  for (int i = 0; i < g.r; ++i) y.push_back(g.o[3 - g.r + i]);
  return y;
}

AttrList ConvAttrs(const ConvCfg& c) {
  return {{"strides", AttrInts(c.strides)},
          {"pads", AttrInts(c.pads)},
          {"dilations", AttrInts(c.dilations)},
          {"group", AttrInt(c.group)}};
}

// Calls fn(x index, w index, y index) for every product the forward conv
// sums: y[n, m, o] += x[n, ch, i] * w[m, ci, k].
template <typename Fn>
void ForEachConvTerm(const ConvCfg& c, Fn&& fn) {
  const Geo g = ConvGeo(c);
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], cg = C / c.group, mg = M / c.group;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o0 = 0; o0 < g.o[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.o[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.o[2]; ++o2) {
            const int64_t yi = (((n * M + m) * g.o[0] + o0) * g.o[1] + o1) * g.o[2] + o2;
            const int64_t grp = m / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                    const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1] || i2 < 0 ||
                        i2 >= g.in[2])
                      continue;
                    const int64_t ch = grp * cg + ci;
                    const int64_t xi =
                        (((n * C + ch) * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2;
                    const int64_t wi = (((m * cg + ci) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2;
                    fn(xi, wi, yi);
                  }
          }
}

void CheckConvGrads(const ConvCfg& c, DType dt, int threads, uint32_t seed) {
  SCOPED_TRACE(StrCat("x ", ShapeToString(c.x), " w ", ShapeToString(c.w), " strides ",
                      ShapeToString(c.strides), " pads ", ShapeToString(c.pads), " dilations ",
                      ShapeToString(c.dilations), " group ", c.group, " ", DTypeName(dt),
                      " threads ", threads));
  const Shape y = ConvOutShape(c);
  const std::vector<double> xv = Rounded(dt, RandomValues(NumElements(c.x), seed));
  const std::vector<double> wv = Rounded(dt, RandomValues(NumElements(c.w), seed + 1));
  const std::vector<double> dyv = Rounded(dt, RandomValues(NumElements(y), seed + 2));
  std::vector<double> dx(xv.size(), 0.0), dw(wv.size(), 0.0);
  ForEachConvTerm(c, [&](int64_t xi, int64_t wi, int64_t yi) {
    dx[xi] += dyv[yi] * wv[wi];
    dw[wi] += dyv[yi] * xv[xi];
  });
  const double tol = dt == DType::kF32 ? 2e-5 : 1e-12;
  OneOp gi("conv_grad_input", {{dt, y}, {dt, c.w}}, {dt, c.x}, ConvAttrs(c), threads);
  ASSERT_TRUE(gi.status().ok()) << gi.status().ToString();
  ExpectNear(gi.Run({FloatTensor(dt, y, dyv), FloatTensor(dt, c.w, wv)}), c.x, dx, tol);
  OneOp gw("conv_grad_weight", {{dt, c.x}, {dt, y}}, {dt, c.w}, ConvAttrs(c), threads);
  ASSERT_TRUE(gw.status().ok()) << gw.status().ToString();
  ExpectNear(gw.Run({FloatTensor(dt, c.x, xv), FloatTensor(dt, y, dyv)}), c.w, dw, tol);
}

const std::vector<ConvCfg>& ConvConfigs() {
  static const std::vector<ConvCfg> cfgs = {
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1},  // strides, pads, dilations
      {{1, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{1, 4, 5, 5}, {6, 2, 3, 3}, {1, 2}, {0, 1, 1, 0}, {1, 1}, 2},  // groups
      {{2, 3, 4, 4}, {3, 1, 2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 1}, 3},  // depthwise
      {{2, 5, 3, 4}, {7, 5, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},  // 1x1: no columns
      {{2, 4, 3, 4}, {4, 2, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2},  // 1x1 with groups
      {{1, 2, 6, 6}, {3, 2, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},  // last row/col unread
      {{2, 3, 9}, {4, 3, 3}, {2}, {1, 2}, {2}, 1},                    // 1-D
      {{1, 2, 4, 3, 5}, {2, 2, 2, 2, 3}, {1, 1, 2}, {0, 1, 1, 1, 0, 1}, {1, 1, 1}, 1},  // 3-D
      // One image, many channels: split over input / output channels.
      {{1, 8, 6, 6}, {32, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{1, 8, 5, 5}, {32, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      // More images than threads: per-thread weight gradients, summed.
      {{6, 3, 5, 5}, {4, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
  };
  return cfgs;
}

TEST(ConvGrad, InputAndWeightMatchBruteForce) {
  uint32_t seed = 100;
  for (const ConvCfg& c : ConvConfigs()) {
    for (DType dt : {DType::kF32, DType::kF64}) {
      for (int threads : {1, 4}) CheckConvGrads(c, dt, threads, seed);
    }
    seed += 10;
  }
}

// dL/dx and dL/dw of L = sum(dy * conv(x, w)) by central differences of the
// conv kernel, in f64.
void CheckConvFiniteDifferences(const ConvCfg& c, uint32_t seed) {
  SCOPED_TRACE(StrCat("x ", ShapeToString(c.x), " w ", ShapeToString(c.w), " group ", c.group));
  const DType dt = DType::kF64;
  const Shape y = ConvOutShape(c);
  std::vector<double> xv = RandomValues(NumElements(c.x), seed);
  std::vector<double> wv = RandomValues(NumElements(c.w), seed + 1);
  const std::vector<double> dyv = RandomValues(NumElements(y), seed + 2);
  OneOp fwd("conv", {{dt, c.x}, {dt, c.w}}, {dt, y}, ConvAttrs(c));
  ASSERT_TRUE(fwd.status().ok()) << fwd.status().ToString();
  auto loss = [&]() {
    std::vector<double> yv = Values(fwd.Run({FloatTensor(dt, c.x, xv), FloatTensor(dt, c.w, wv)}));
    double l = 0;
    for (size_t i = 0; i < yv.size(); ++i) l += dyv[i] * yv[i];
    return l;
  };
  const double h = 1e-3;
  auto fd = [&](std::vector<double>& v) {
    std::vector<double> g(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double keep = v[i];
      v[i] = keep + h;
      const double up = loss();
      v[i] = keep - h;
      const double down = loss();
      v[i] = keep;
      g[i] = (up - down) / (2 * h);
    }
    return g;
  };
  const std::vector<double> dx = fd(xv), dw = fd(wv);
  OneOp gi("conv_grad_input", {{dt, y}, {dt, c.w}}, {dt, c.x}, ConvAttrs(c));
  ExpectNear(gi.Run({FloatTensor(dt, y, dyv), FloatTensor(dt, c.w, wv)}), c.x, dx, 1e-8);
  OneOp gw("conv_grad_weight", {{dt, c.x}, {dt, y}}, {dt, c.w}, ConvAttrs(c));
  ExpectNear(gw.Run({FloatTensor(dt, c.x, xv), FloatTensor(dt, y, dyv)}), c.w, dw, 1e-8);
}

TEST(ConvGrad, AreTheGradientsOfConvByFiniteDifferences) {
  CheckConvFiniteDifferences({{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 1}, 200);
  CheckConvFiniteDifferences({{1, 4, 5, 5}, {6, 2, 3, 3}, {2, 2}, {1, 1, 1, 0}, {1, 1}, 2}, 210);
  CheckConvFiniteDifferences({{2, 3, 9}, {3, 1, 3}, {2}, {1, 2}, {2}, 3}, 220);
  CheckConvFiniteDifferences(
      {{1, 2, 4, 3, 5}, {2, 2, 2, 2, 3}, {1, 1, 2}, {0, 1, 1, 1, 0, 1}, {1, 1, 1}, 1}, 230);
  CheckConvFiniteDifferences({{2, 4, 3, 3}, {2, 4, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1}, 240);
}

TEST(ConvGrad, ShapeErrors) {
  std::vector<Tensor> out;
  // result_grad of the wrong spatial size for this input.
  Status st = RunOp("conv_grad_input", {Iota({1, 2, 3, 3}), Iota({2, 3, 2, 2})},
                    {{DType::kF32, {1, 3, 5, 5}}}, {}, &out);
  EXPECT_HAS(st.message(),
             "conv_grad_input: result_grad is f32[1, 2, 3, 3], but conv of "
             "f32[1, 3, 5, 5] and weight f32[2, 3, 2, 2] gives f32[1, 2, 4, 4]");
  st = RunOp("conv_grad_weight", {Iota({1, 3, 5, 5}), Iota({1, 2, 4, 4})},
             {{DType::kF32, {2, 2, 2, 2}}}, {}, &out);
  EXPECT_HAS(st.message(), "do not agree");
  st = RunOp("conv_grad_weight", {Iota({1, 3, 5, 5}), Iota({1, 2, 4, 4})},
             {{DType::kF32, {2, 3, 2, 2}}}, {{"group", AttrInt(2)}}, &out);
  EXPECT_HAS(st.message(), "group 2");
}

TEST(ConvGrad, EmptyBatchGivesZeroWeightGradient) {
  Tensor dw = Run1("conv_grad_weight", {F32({0, 2, 3, 3}, {}), F32({0, 1, 2, 2}, {})},
                       {DType::kF32, {1, 2, 2, 2}});
  ExpectF32(dw, {1, 2, 2, 2}, std::vector<float>(8, 0.0f));
}

// ---- pool gradients -----------------------------------------------------------------

struct PoolCfg {
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode = 0, count_include_pad = 0;
};

AttrList PoolAttrs(const PoolCfg& c) {
  return {{"kernel", AttrInts(c.kernel)},      {"strides", AttrInts(c.strides)},
          {"pads", AttrInts(c.pads)},          {"dilations", AttrInts(c.dilations)},
          {"ceil_mode", AttrInt(c.ceil_mode)}, {"count_include_pad", AttrInt(c.count_include_pad)}};
}

// The output extent of one dim (ONNX, with PyTorch's rule that a ceil-mode
// window starting in the end padding is dropped).
int64_t PoolExtent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                   bool ceil_mode) {
  const double span = static_cast<double>(in + pb + pe - ((k - 1) * d + 1)) / s;
  int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) --o;
  return o;
}

Shape PoolOutShape(const PoolCfg& c) {
  Shape y = {c.x[0], c.x[1]};
  const size_t r = c.x.size() - 2;
  for (size_t i = 0; i < r; ++i) {
    y.push_back(PoolExtent(c.x[2 + i], c.kernel[i], c.strides[i], c.dilations[i], c.pads[i],
                           c.pads[i + r], c.ceil_mode != 0));
  }
  return y;
}

// Calls fn(output index, list of (x index) inside the window, divisor) for
// every window of every plane, the list in scan order.
template <typename Fn>
void ForEachWindow(const PoolCfg& c, Fn&& fn) {
  const Shape y = PoolOutShape(c);
  const int r = static_cast<int>(c.x.size()) - 2;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  for (int i = 0; i < r; ++i) {
    const int j = 3 - r + i;
    in[j] = c.x[2 + i];
    out[j] = y[2 + i];
    k[j] = c.kernel[i];
    s[j] = c.strides[i];
    d[j] = c.dilations[i];
    pb[j] = c.pads[i];
    pe[j] = c.pads[i + r];
  }
  const int64_t planes = c.x[0] * c.x[1], isz = in[0] * in[1] * in[2];
  int64_t yi = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t e = 0; e < out[2]; ++e, ++yi) {
          std::vector<int64_t> inside;
          int64_t padded = 0;
          for (int64_t ka = 0; ka < k[0]; ++ka)
            for (int64_t kb = 0; kb < k[1]; ++kb)
              for (int64_t ke = 0; ke < k[2]; ++ke) {
                const int64_t ia = a * s[0] - pb[0] + ka * d[0];
                const int64_t ib = b * s[1] - pb[1] + kb * d[1];
                const int64_t ie = e * s[2] - pb[2] + ke * d[2];
                if (ia >= -pb[0] && ia < in[0] + pe[0] && ib >= -pb[1] && ib < in[1] + pe[1] &&
                    ie >= -pb[2] && ie < in[2] + pe[2])
                  ++padded;
                if (ia < 0 || ia >= in[0] || ib < 0 || ib >= in[1] || ie < 0 || ie >= in[2])
                  continue;
                inside.push_back(p * isz + (ia * in[1] + ib) * in[2] + ie);
              }
          const int64_t div = c.count_include_pad ? padded : static_cast<int64_t>(inside.size());
          fn(yi, inside, div);
        }
}

void CheckPoolGrads(const PoolCfg& c, DType dt, int threads, uint32_t seed) {
  SCOPED_TRACE(StrCat("x ", ShapeToString(c.x), " kernel ", ShapeToString(c.kernel), " strides ",
                      ShapeToString(c.strides), " pads ", ShapeToString(c.pads), " dilations ",
                      ShapeToString(c.dilations), " ceil ", c.ceil_mode, " include_pad ",
                      c.count_include_pad, " ", DTypeName(dt), " threads ", threads));
  const Shape y = PoolOutShape(c);
  const std::vector<double> xv = Rounded(dt, RandomValues(NumElements(c.x), seed));
  const std::vector<double> dyv = Rounded(dt, RandomValues(NumElements(y), seed + 1));
  std::vector<double> dmax(xv.size(), 0.0), davg(xv.size(), 0.0);
  ForEachWindow(c, [&](int64_t yi, const std::vector<int64_t>& inside, int64_t div) {
    if (inside.empty()) return;
    int64_t best = inside[0];
    for (int64_t i : inside) {
      if (xv[i] > xv[best]) best = i;  // the first maximum
    }
    dmax[best] += dyv[yi];
    for (int64_t i : inside) davg[i] += dyv[yi] / static_cast<double>(div);
  });
  const double tol = dt == DType::kF32 ? 1e-6 : 1e-14;
  for (const char* op : {"max_pool_grad", "avg_pool_grad"}) {
    SCOPED_TRACE(op);
    OneOp g(op, {{dt, c.x}, {dt, y}}, {dt, c.x}, PoolAttrs(c), threads);
    ASSERT_TRUE(g.status().ok()) << g.status().ToString();
    ExpectNear(g.Run({FloatTensor(dt, c.x, xv), FloatTensor(dt, y, dyv)}), c.x,
               std::string(op) == "max_pool_grad" ? dmax : davg, tol);
  }
}

const std::vector<PoolCfg>& PoolConfigs() {
  static const std::vector<PoolCfg> cfgs = {
      {{2, 3, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {{1, 2, 5, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},  // overlapping windows
      {{1, 2, 5, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0, 1},
      {{1, 1, 4, 4}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, 0},  // ceil: partial windows
      {{2, 2, 5}, {2}, {2}, {1, 1}, {1}, 1, 0},                    // ceil drops a window
      {{2, 2, 6}, {3}, {2}, {1, 1}, {1}, 1, 1},                    // ceil + include_pad
      {{1, 2, 7, 5}, {2, 3}, {2, 1}, {1, 0, 1, 2}, {2, 1}, 1, 1},  // dilations
      {{1, 2, 3, 4, 5}, {2, 2, 3}, {1, 2, 2}, {0, 1, 1, 1, 0, 1}, {1, 1, 1}, 1, 0},  // 3-D
      {{3, 5, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1},                    // many planes
  };
  return cfgs;
}

TEST(PoolGrad, MaxAndAvgMatchBruteForce) {
  uint32_t seed = 300;
  for (const PoolCfg& c : PoolConfigs()) {
    for (DType dt : {DType::kF32, DType::kF64}) {
      for (int threads : {1, 4}) CheckPoolGrads(c, dt, threads, seed);
    }
    seed += 10;
  }
}

// Central differences of max_pool / avg_pool in f64. For max_pool the
// inputs are a shuffled grid spaced far wider than the step, so no step
// changes a window's maximum.
TEST(PoolGrad, AreTheGradientsOfPoolingByFiniteDifferences) {
  const DType dt = DType::kF64;
  uint32_t seed = 400;
  for (const PoolCfg& c : PoolConfigs()) {
    SCOPED_TRACE(StrCat("x ", ShapeToString(c.x), " kernel ", ShapeToString(c.kernel)));
    const Shape y = PoolOutShape(c);
    const int64_t n = NumElements(c.x);
    std::vector<double> xv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xv[i] = 0.01 * static_cast<double>(i) - 1.0;
    std::shuffle(xv.begin(), xv.end(), std::mt19937(seed));
    const std::vector<double> dyv = RandomValues(NumElements(y), seed + 1);
    for (const char* op : {"max_pool", "avg_pool"}) {
      SCOPED_TRACE(op);
      OneOp fwd(op, {{dt, c.x}}, {dt, y}, PoolAttrs(c));
      ASSERT_TRUE(fwd.status().ok()) << fwd.status().ToString();
      auto loss = [&]() {
        std::vector<double> yv = Values(fwd.Run({FloatTensor(dt, c.x, xv)}));
        double l = 0;
        for (size_t i = 0; i < yv.size(); ++i) l += dyv[i] * yv[i];
        return l;
      };
      const double h = 1e-4;
      std::vector<double> want(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        const double keep = xv[i];
        xv[i] = keep + h;
        const double up = loss();
        xv[i] = keep - h;
        const double down = loss();
        xv[i] = keep;
        want[i] = (up - down) / (2 * h);
      }
      OneOp g(StrCat(op, "_grad"), {{dt, c.x}, {dt, y}}, {dt, c.x}, PoolAttrs(c));
      ASSERT_TRUE(g.status().ok()) << g.status().ToString();
      ExpectNear(g.Run({FloatTensor(dt, c.x, xv), FloatTensor(dt, y, dyv)}), c.x, want, 1e-9);
    }
    seed += 10;
  }
}

TEST(PoolGrad, TiesGoToTheFirstMaximumAndNaNWins) {
  // Windows {0, 1} and {1, 2} of equal values: each gradient goes to the
  // window's first element.
  const Attrs attrs = {{"kernel", AttrInts({2})}};
  Tensor g = Run1("max_pool_grad", {F32({1, 1, 3}, {1, 1, 1}), F32({1, 1, 2}, {10, 20})},
                      {DType::kF32, {1, 1, 3}}, attrs);
  ExpectF32(g, {1, 1, 3}, {10, 20, 0});
  // A NaN is the maximum of its windows (the forward propagates it).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  g = Run1("max_pool_grad", {F32({1, 1, 3}, {5, nan, 7}), F32({1, 1, 2}, {10, 20})},
           {DType::kF32, {1, 1, 3}}, attrs);
  ExpectF32(g, {1, 1, 3}, {0, 30, 0});
  // Every value -inf: the first element inside the window.
  const float inf = std::numeric_limits<float>::infinity();
  g = Run1("max_pool_grad", {F32({1, 1, 2}, {-inf, -inf}), F32({1, 1, 2}, {1, 2})},
           {DType::kF32, {1, 1, 2}}, {{"kernel", AttrInts({2})}, {"pads", AttrInts({1, 0})}});
  ExpectF32(g, {1, 1, 2}, {3, 0});
}

TEST(PoolGrad, ShapeErrors) {
  std::vector<Tensor> out;
  Status st = RunOp("avg_pool_grad", {Iota({1, 1, 4, 4}), Iota({1, 1, 3, 3})},
                    {{DType::kF32, {1, 1, 4, 4}}},
                    {{"kernel", AttrInts({2, 2})}, {"strides", AttrInts({2, 2})}}, &out);
  EXPECT_HAS(st.message(),
             "result_grad is f32[1, 1, 3, 3], but pooling f32[1, 1, 4, 4] gives "
             "f32[1, 1, 2, 2]");
  st = RunOp("max_pool_grad", {Iota({1, 1, 4, 4}), Iota({1, 1, 2, 2})},
             {{DType::kF32, {1, 1, 2, 2}}},
             {{"kernel", AttrInts({2, 2})}, {"strides", AttrInts({2, 2})}}, &out);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace distrt

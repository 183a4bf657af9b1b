// The f32 GEMM paths of the matmul kernel against a double-precision
// reference: oneDNN with weights packed once (row and column splits, a
// transposed weight, widths that are not whole blocks), oneDNN and OpenBLAS
// on plain operands, and repacking after a weight changes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "gemm_onednn.h"
#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

std::vector<float> Random(int64_t n, uint32_t seed) { return RandomUniform<float>(n, seed); }

// op(A) [m x k] * op(B) [k x n] in double; A stored [m x k] or, when ta,
// [k x m]; B stored [k x n] or, when tb, [n x k].
std::vector<float> Reference(const std::vector<float>& a, bool ta, const std::vector<float>& b,
                             bool tb, int64_t m, int64_t k, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? a[p * m + i] : a[i * k + p]) * double(tb ? b[j * k + p] : b[p * n + j]);
      c[static_cast<size_t>(i * n + j)] = static_cast<float>(s);
    }
  return c;
}

void ExpectClose(const Tensor& t, const std::vector<float>& want, int64_t k) {
  ASSERT_EQ(t.num_elements(), static_cast<int64_t>(want.size()));
  const float* got = t.data<float>();
  // Rounding of k products and sums of terms below 1 each.
  const float tol = 2e-6f * static_cast<float>(k);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

struct WeightCase {
  int64_t rows, k, n;
  bool tb;
  int threads;
  bool pack = true;  // ExecutorOptions::pack_weights
  // kBF16: a bf16 weight read from the file's f32 values (rounded at load,
  // as `dist-run --precision bf16` loads them) times bf16 activations.
  DType dtype = DType::kF32;
};

Tensor BF16(const Shape& shape, const std::vector<float>& v);
std::vector<float> Widened(const Tensor& t);
void ExpectBF16Close(const Tensor& got, const std::vector<float>& want);

// x [rows x k] times a weight stored in a file (as [k x n], or [n x k]
// read transposed): the packed path, checked over three runs.
void CheckPackedWeight(const WeightCase& c) {
  SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.k << "x" << c.n << " tb=" << c.tb
                                    << " threads=" << c.threads << " " << DTypeName(c.dtype));
  TempDir dir;
  const std::vector<float> w = Random(c.k * c.n, 7);
  WriteFile(dir.File("w.bin"), w.data(), w.size() * sizeof(float));
  const Shape stored = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
  ProgramBuilder b;
  int x = b.Input("x", c.dtype, {c.rows, c.k});
  int wv = b.Weight("w", "w.bin", 0, DType::kF32, c.dtype, stored, {0, 0}, stored);
  int y = b.Apply("matmul", {x, wv}, c.dtype, {c.rows, c.n},
                  {{"transpose_rhs", AttrInt(c.tb ? 1 : 0)}});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "gemm", dir.path(), &p).ok());
  ExecutorOptions options;
  options.threads = c.threads;
  options.pack_weights = c.pack;
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, options, &e).ok());
  const bool bf16 = c.dtype == DType::kBF16;
  const int64_t plain_bytes = c.k * c.n * static_cast<int64_t>(DTypeSize(c.dtype));
  for (uint32_t run = 0; run < 3; ++run) {
    const std::vector<float> xs = Random(c.rows * c.k, 100 + run);
    std::vector<Tensor> out;
    Status st = e->Run({bf16 ? BF16({c.rows, c.k}, xs) : F32({c.rows, c.k}, xs)}, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (bf16) {
      // The product of the bf16 operands, in bf16 (not through f32).
      EXPECT_EQ(e->stats().instructions_via_f32, 0);
      ExpectBF16Close(out[0], Reference(Widened(BF16({c.rows, c.k}, xs)), false,
                                        Widened(BF16(stored, w)), c.tb, c.rows, c.k, c.n));
    } else {
      ExpectClose(out[0], Reference(xs, false, w, c.tb, c.rows, c.k, c.n), c.k);
    }
  }
  // With oneDNN the executor holds only the packed copy (at least as large
  // as the weight, blocks padded): the weight's own bytes were freed at
  // load, as nothing but the packed matmul reads them.
  const char* env = std::getenv("DISTRT_PACK_WEIGHTS");
  if (c.pack && !(env && std::string(env) == "0") && PackedWeights::Worthwhile(c.k, c.n, c.dtype)) {
    EXPECT_GE(e->stats().weight_bytes, plain_bytes);
    EXPECT_LT(e->stats().weight_bytes, 2 * plain_bytes);
  } else {
    EXPECT_EQ(e->stats().weight_bytes, plain_bytes);
  }
}

TEST(Gemm, PackedWeightRowSplit) { CheckPackedWeight({130, 96, 240, false, 2}); }
TEST(Gemm, PackedWeightOneThread) { CheckPackedWeight({64, 300, 256, false, 1}); }
TEST(Gemm, PackedWeightTransposed) { CheckPackedWeight({70, 128, 190, true, 3}); }
// Few rows: threads take column slabs of their own.
TEST(Gemm, PackedWeightColumnSlabs) { CheckPackedWeight({3, 512, 1000, false, 4}); }
TEST(Gemm, PackedWeightOneRowTransposed) { CheckPackedWeight({1, 1024, 1100, true, 2}); }
// Packing off: the same products, no second copy.
TEST(Gemm, PackingOffByOption) { CheckPackedWeight({130, 96, 240, false, 2, false}); }
TEST(Gemm, PackingOffByEnvironment) {
  setenv("DISTRT_PACK_WEIGHTS", "0", 1);
  CheckPackedWeight({130, 96, 240, false, 2});
  unsetenv("DISTRT_PACK_WEIGHTS");
}

// A weight something else reads too (here an add) keeps its bytes next to
// the packed copy, and both readers see it.
TEST(Gemm, WeightReadElsewhereKeepsItsBytes) {
  const int64_t m = 64, k = 128, n = 256;
  TempDir dir;
  const std::vector<float> w = Random(k * n, 61);
  WriteFile(dir.File("w.bin"), w.data(), w.size() * sizeof(float));
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {m, k});
  int wv = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {k, n}, {0, 0}, {k, n});
  b.Output("y", b.Apply("matmul", {x, wv}, DType::kF32, {m, n}));
  b.Output("w2", b.Apply("add", {wv, wv}, DType::kF32, {k, n}));
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "gemm", dir.path(), &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  const int64_t plain_bytes = k * n * static_cast<int64_t>(sizeof(float));
  // Packed where oneDNN has a blocked kernel for the shape on this CPU
  // (brgemm: AVX-512 and newer; not on AVX2-only machines).
  if (PackedWeights::Worthwhile(k, n)) EXPECT_GE(e->stats().weight_bytes, 2 * plain_bytes);
  const std::vector<float> xs = Random(m * k, 62);
  std::vector<Tensor> out;
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE(e->Run({F32({m, k}, xs)}, &out).ok());
    ExpectClose(out[0], Reference(xs, false, w, false, m, k, n), k);
    for (int64_t i = 0; i < k * n; ++i) ASSERT_EQ(out[1].data<float>()[i], w[i] + w[i]);
  }
}

// Two matmuls reading one weight (the microbatches of a pipeline, a tied
// layer) share one packed copy of it.
TEST(Gemm, MatmulsOfOneWeightShareItsPackedCopy) {
  const int64_t m = 64, k = 128, n = 256;
  TempDir dir;
  const std::vector<float> w = Random(k * n, 41);
  WriteFile(dir.File("w.bin"), w.data(), w.size() * sizeof(float));
  auto weight_bytes = [&](int matmuls, std::vector<Tensor>* out,
                          const std::vector<Tensor>& in) {
    ProgramBuilder b;
    int wv = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {k, n}, {0, 0}, {k, n});
    for (int i = 0; i < matmuls; ++i) {
      int x = b.Input("x" + std::to_string(i), DType::kF32, {m, k});
      b.Output("y" + std::to_string(i), b.Apply("matmul", {x, wv}, DType::kF32, {m, n}));
    }
    std::shared_ptr<const Program> p;
    EXPECT_TRUE(Program::Create(b.Build(), "gemm", dir.path(), &p).ok());
    std::unique_ptr<Executor> e;
    EXPECT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
    Status st = e->Run(in, out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return e->stats().weight_bytes;
  };
  const std::vector<float> x0 = Random(m * k, 42), x1 = Random(m * k, 43);
  std::vector<Tensor> one, two;
  const int64_t single = weight_bytes(1, &one, {F32({m, k}, x0)});
  EXPECT_EQ(weight_bytes(2, &two, {F32({m, k}, x0), F32({m, k}, x1)}), single);
  ASSERT_EQ(two.size(), 2u);
  ExpectClose(two[0], Reference(x0, false, w, false, m, k, n), k);
  ExpectClose(two[1], Reference(x1, false, w, false, m, k, n), k);
}

// A weight of the training state that this program reads but does not
// update (zeros at first, written by WritePersistent as a checkpoint resume
// would) is packed, and packed again once it is written.
TEST(Gemm, WrittenStateIsPackedAgain) {
  const int64_t m = 64, k = 128, n = 256;
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {m, k});
  int wv = b.ZerosWeight("w", DType::kF32, {k, n}, {0, 0}, {k, n});
  b.Output("y", b.Apply("matmul", {x, wv}, DType::kF32, {m, n}));
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "gemm", ".", &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  const std::vector<float> xs = Random(m * k, 51);
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({F32({m, k}, xs)}, &out).ok());
  ExpectClose(out[0], std::vector<float>(static_cast<size_t>(m * n), 0.0f), k);
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  ASSERT_EQ(state.size(), 1u);
  const std::vector<float> w = Random(k * n, 52);
  state[0].value = F32({k, n}, w);
  ASSERT_TRUE(e->WritePersistent(state).ok());
  ASSERT_TRUE(e->Run({F32({m, k}, xs)}, &out).ok());
  ExpectClose(out[0], Reference(xs, false, w, false, m, k, n), k);
}

// A weight updated by the program (a training step) is not packed: each run
// multiplies by the weight as it is then.
TEST(Gemm, UpdatedWeightUsesItsCurrentValue) {
  const int64_t m = 40, k = 64, n = 96;
  TempDir dir;
  std::vector<float> w = Random(k * n, 3);
  WriteFile(dir.File("w.bin"), w.data(), w.size() * sizeof(float));
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {m, k});
  int wv = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {k, n}, {0, 0}, {k, n});
  int y = b.Apply("matmul", {x, wv}, DType::kF32, {m, n});
  int w2 = b.Apply("mul", {wv, b.Constant(F32({}, {0.5f}))}, DType::kF32, {k, n});
  b.SetUpdate(wv, w2);  // w <- w / 2 after every run
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "gemm", dir.path(), &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  const std::vector<float> xs = Random(m * k, 11);
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out;
    ASSERT_TRUE(e->Run({F32({m, k}, xs)}, &out).ok());
    ExpectClose(out[0], Reference(xs, false, w, false, m, k, n), k);
    for (float& v : w) v *= 0.5f;
  }
}

// One matmul of bf16 operands as a program (the executor decides whether it
// runs in bf16 or through f32); `via_f32`: its instructions run through f32.
Tensor RunBF16Matmul(const Tensor& a, const Tensor& b, const Shape& out, Attrs attrs,
                     int64_t* via_f32) {
  ProgramBuilder pb;
  int x = pb.Input("a", DType::kBF16, a.shape()), w = pb.Input("b", DType::kBF16, b.shape());
  pb.Output("c", pb.Apply("matmul", {x, w}, DType::kBF16, out, attrs));
  std::shared_ptr<const Program> program;
  Status st = Program::Create(pb.Build(), "bf16", ".", &program);
  EXPECT_TRUE(st.ok()) << st.ToString();
  ExecutorOptions options;
  options.threads = 2;
  std::unique_ptr<Executor> e;
  st = Executor::Create(program, nullptr, options, &e);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<Tensor> outs;
  st = e->Run({a, b}, &outs);
  EXPECT_TRUE(st.ok()) << st.ToString();
  *via_f32 = e->stats().instructions_via_f32;
  return outs.empty() ? Tensor() : outs[0];
}

Tensor BF16(const Shape& shape, const std::vector<float>& v) {
  Tensor t;
  EXPECT_TRUE(Tensor::Allocate(DType::kBF16, shape, &t).ok());
  for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = FloatToBF16(v[i]);
  return t;
}

std::vector<float> Widened(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = BF16ToFloat(t.data<uint16_t>()[i]);
  return v;
}

// Within one bf16 rounding of the exact product of the bf16 operands.
void ExpectBF16Close(const Tensor& got, const std::vector<float>& want) {
  ASSERT_EQ(got.dtype(), DType::kBF16);
  const std::vector<float> g = Widened(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], want[i], std::fabs(want[i]) / 128 + 1e-3) << "element " << i;
}

// A bf16 weight where the CPU runs bf16 products in bf16: packed once at
// load into oneDNN's bf16 layout where its kernel pays for it, the weight's
// own bytes freed, as for f32 weights.
TEST(Gemm, BF16WeightIsPackedOnce) {
  if (!OneDnnBF16Gemms()) GTEST_SKIP() << "this CPU runs bf16 products through f32";
  for (const WeightCase& c :
       {WeightCase{130, 96, 240, false, 2}, WeightCase{70, 128, 190, true, 3},
        WeightCase{3, 512, 1000, false, 4}, WeightCase{64, 300, 256, false, 1}}) {
    WeightCase bf16 = c;
    bf16.dtype = DType::kBF16;
    CheckPackedWeight(bf16);
  }
}

// bf16 products run in bf16 through oneDNN where it can (asked here with
// DISTRT_BF16_GEMM=onednn): the tall products of linear layers with either
// operand transposed, and batched ones with a broadcast batch. Each result
// is the product of the bf16 operands, rounded once to bf16.
TEST(Gemm, BF16ProductsRunInBF16) {
  setenv("DISTRT_BF16_GEMM", "onednn", 1);
  if (!OneDnnBF16Gemms()) {
    unsetenv("DISTRT_BF16_GEMM");
    GTEST_SKIP() << "oneDNN makes no bf16 matmul on this CPU (oneDNN 2.6 needs AVX-512)";
  }
  int64_t via_f32 = -1;
  // One call, then products whose rows the 2 threads split into a call
  // each: few rows against many columns, and many rows.
  const std::pair<int64_t, int64_t> sizes[] = {{37, 160}, {37, 1000}, {300, 160}};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [m, n] : sizes) {
        const int64_t k = 72;
        SCOPED_TRACE(::testing::Message()
                     << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n);
        const Tensor a = BF16(ta ? Shape{k, m} : Shape{m, k}, Random(m * k, 41));
        const Tensor b = BF16(tb ? Shape{n, k} : Shape{k, n}, Random(k * n, 42));
        Tensor c = RunBF16Matmul(a, b, {m, n},
                                 {{"transpose_lhs", AttrInt(ta)}, {"transpose_rhs", AttrInt(tb)}},
                                 &via_f32);
        EXPECT_EQ(via_f32, 0);
        ExpectBF16Close(c, Reference(Widened(a), ta, Widened(b), tb, m, k, n));
      }
  // [2, 3, 16, 8] x [3, 8, 12]: the rhs broadcast over the first batch dim.
  const Tensor a = BF16({2, 3, 16, 8}, Random(2 * 3 * 16 * 8, 43));
  const Tensor b = BF16({3, 8, 12}, Random(3 * 8 * 12, 44));
  Tensor c = RunBF16Matmul(a, b, {2, 3, 16, 12}, {}, &via_f32);
  EXPECT_EQ(via_f32, 0);
  const std::vector<float> wa = Widened(a), wb = Widened(b);
  std::vector<float> want;
  for (int64_t i = 0; i < 6; ++i) {
    std::vector<float> pa(wa.begin() + i * 128, wa.begin() + (i + 1) * 128);
    std::vector<float> pb(wb.begin() + (i % 3) * 96, wb.begin() + (i % 3 + 1) * 96);
    std::vector<float> pc = Reference(pa, false, pb, false, 16, 8, 12);
    want.insert(want.end(), pc.begin(), pc.end());
  }
  ExpectBF16Close(c, want);
  unsetenv("DISTRT_BF16_GEMM");
}

// DISTRT_BF16_GEMM=f32 widens them whatever the CPU, as a CPU without bf16
// instructions does.
TEST(Gemm, BF16ProductsThroughF32WhenAsked) {
  setenv("DISTRT_BF16_GEMM", "f32", 1);
  const int64_t m = 9, k = 40, n = 24;
  const Tensor a = BF16({m, k}, Random(m * k, 45)), b = BF16({k, n}, Random(k * n, 46));
  int64_t via_f32 = -1;
  Tensor c = RunBF16Matmul(a, b, {m, n}, {}, &via_f32);
  EXPECT_EQ(via_f32, 1);
  ExpectBF16Close(c, Reference(Widened(a), false, Widened(b), false, m, k, n));
  unsetenv("DISTRT_BF16_GEMM");
}

// Plain operands, with either transposed (as the gradients of a training
// step read them), through whichever library the dispatch picks.
TEST(Gemm, PlainOperandsWithTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {1, 37, 128}) {
        const int64_t k = 72, n = 160;
        SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " m=" << m);
        const std::vector<float> a = Random(m * k, 21), bw = Random(k * n, 22);
        const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
        Tensor out = Run1("matmul", {F32(sa, a), F32(sb, bw)}, {DType::kF32, {m, n}},
                              {{"transpose_lhs", AttrInt(ta)}, {"transpose_rhs", AttrInt(tb)}});
        ExpectClose(out, Reference(a, ta, bw, tb, m, k, n), k);
      }
}

// A weight gradient X^T dY (the lhs transposed) large enough that the
// threads split its rows: each share is copied into a dense transposed
// block, so it runs the kernel of the one-thread product. Where oneDNN's
// brgemm runs the product (f32 on AVX-512, bf16 where oneDNN runs bf16
// products), the result at 2 and 3 threads is the one-thread result bit
// for bit; everywhere it is close to the double-precision product.
TEST(Gemm, TransposedLhsSplitOverThreadsAsOnOne) {
  const int64_t m = 1000, k = 128, n = 300;  // a share of 500 or 334 rows
  const std::vector<float> a = Random(k * m, 51), b = Random(k * n, 52);
  const Attrs ta = {{"transpose_lhs", AttrInt(1)}};
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    if (dtype == DType::kBF16 && !OneDnnBF16Gemms()) continue;  // through f32: as above
    const Tensor x = dtype == DType::kF32 ? F32({k, m}, a) : BF16({k, m}, a);
    const Tensor dy = dtype == DType::kF32 ? F32({k, n}, b) : BF16({k, n}, b);
    const Tensor one = Run1("matmul", {x, dy}, {dtype, {m, n}}, ta, 1);
    if (dtype == DType::kF32)
      ExpectClose(one, Reference(a, true, b, false, m, k, n), k);
    else
      ExpectBF16Close(one, Reference(Widened(x), true, Widened(dy), false, m, k, n));
    const bool brgemm = dtype == DType::kBF16 || !OneDnnGemmName().empty();
    for (int threads : {2, 3}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads");
      const Tensor split = Run1("matmul", {x, dy}, {dtype, {m, n}}, ta, threads);
      if (dtype == DType::kF32)
        ExpectClose(split, Reference(a, true, b, false, m, k, n), k);
      else
        ExpectBF16Close(split, Reference(Widened(x), true, Widened(dy), false, m, k, n));
      if (brgemm)
        EXPECT_EQ(std::memcmp(split.raw(), one.raw(),
                              static_cast<size_t>(one.num_elements()) * DTypeSize(dtype)),
                  0);
    }
  }
}

// Products split over 2, 3 and 4 threads have the one-thread bits where
// oneDNN's blocked kernel runs them (f32 on AVX-512, bf16 where oneDNN runs
// bf16 products): rows split in blocks of 16 or more, a transposed lhs
// copied in blocks of equal rows, and few rows split by columns, each
// block on dense copies and on the library the whole product goes to.
// Before, a product of fewer rows than 32 per thread went to OpenBLAS in
// blocks of columns (and to oneDNN whole on one thread): the cases of 1, 5
// and 37 rows differed in f32. Elsewhere (f32 on OpenBLAS) the results
// only have to be close: OpenBLAS rounds a block otherwise than the whole
// product.
TEST(Gemm, SameBitsOnAnyThreadCount) {
  struct Case {
    int64_t m, k, n;
  };
  const Case cases[] = {{1, 768, 3072}, {5, 3072, 768},  {37, 768, 3072},
                        {64, 128, 768}, {300, 768, 768}, {1024, 3072, 96}};
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    if (dtype == DType::kBF16 && !OneDnnBF16Gemms()) continue;  // through f32
    const bool brgemm = dtype == DType::kBF16 || !OneDnnGemmName().empty();
    for (const Case& c : cases)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " " << c.m << "x" << c.k << "x"
                                            << c.n << " ta=" << ta << " tb=" << tb);
          const std::vector<float> av = Random(c.m * c.k, 61), bv = Random(c.k * c.n, 62);
          const Shape sa = ta ? Shape{c.k, c.m} : Shape{c.m, c.k};
          const Shape sb = tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
          const Tensor x = dtype == DType::kF32 ? F32(sa, av) : BF16(sa, av);
          const Tensor w = dtype == DType::kF32 ? F32(sb, bv) : BF16(sb, bv);
          const Attrs attrs = {{"transpose_lhs", AttrInt(ta)}, {"transpose_rhs", AttrInt(tb)}};
          const std::vector<float> want =
              dtype == DType::kF32 ? Reference(av, ta, bv, tb, c.m, c.k, c.n)
                                   : Reference(Widened(x), ta, Widened(w), tb, c.m, c.k, c.n);
          auto expect_close = [&](const Tensor& got) {
            if (dtype == DType::kF32)
              ExpectClose(got, want, c.k);
            else
              ExpectBF16Close(got, want);
          };
          const Tensor one = Run1("matmul", {x, w}, {dtype, {c.m, c.n}}, attrs, 1);
          expect_close(one);
          for (int threads : {2, 3, 4}) {
            SCOPED_TRACE(::testing::Message() << threads << " threads");
            const Tensor split = Run1("matmul", {x, w}, {dtype, {c.m, c.n}}, attrs, threads);
            if (brgemm)
              ASSERT_EQ(std::memcmp(split.raw(), one.raw(),
                                    static_cast<size_t>(one.num_elements()) * DTypeSize(dtype)),
                        0);
            else
              expect_close(split);
          }
        }
  }
}

// A constant weight packed once, times a few rows (each thread its own
// column slab) or more (each thread its rows): the same bits on 1 to 4
// threads where the weight is packed; close to the product elsewhere.
TEST(Gemm, PackedWeightSameBitsOnAnyThreadCount) {
  const int64_t k = 768, n = 3072;
  TempDir dir;
  const std::vector<float> w = Random(k * n, 71);
  WriteFile(dir.File("w.bin"), w.data(), w.size() * sizeof(float));
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    if (dtype == DType::kBF16 && !OneDnnBF16Gemms()) continue;  // through f32
    const bool packed = PackedWeights::Worthwhile(k, n, dtype);
    for (int64_t rows : {1, 3, 40, 100})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " rows=" << rows << " tb=" << tb);
        const Shape stored = tb ? Shape{n, k} : Shape{k, n};
        ProgramBuilder b;
        int x = b.Input("x", dtype, {rows, k});
        int wv = b.Weight("w", "w.bin", 0, DType::kF32, dtype, stored, {0, 0}, stored);
        b.Output("y", b.Apply("matmul", {x, wv}, dtype, {rows, n},
                              {{"transpose_rhs", AttrInt(tb ? 1 : 0)}}));
        std::shared_ptr<const Program> p;
        ASSERT_TRUE(Program::Create(b.Build(), "gemm", dir.path(), &p).ok());
        const std::vector<float> xs = Random(rows * k, 72);
        const Tensor input = dtype == DType::kBF16 ? BF16({rows, k}, xs) : F32({rows, k}, xs);
        const std::vector<float> want =
            dtype == DType::kBF16
                ? Reference(Widened(input), false, Widened(BF16(stored, w)), tb, rows, k, n)
                : Reference(xs, false, w, tb, rows, k, n);
        auto expect_close = [&](const Tensor& got) {
          if (dtype == DType::kF32)
            ExpectClose(got, want, k);
          else
            ExpectBF16Close(got, want);
        };
        Tensor one;
        for (int threads : {1, 2, 3, 4}) {
          SCOPED_TRACE(::testing::Message() << threads << " threads");
          ExecutorOptions options;
          options.threads = threads;
          std::unique_ptr<Executor> e;
          ASSERT_TRUE(Executor::Create(p, nullptr, options, &e).ok());
          std::vector<Tensor> out;
          Status st = e->Run({input}, &out);
          ASSERT_TRUE(st.ok()) << st.ToString();
          if (threads == 1) {
            one = out[0];
            expect_close(one);
          } else if (packed) {
            ASSERT_EQ(std::memcmp(out[0].raw(), one.raw(),
                                  static_cast<size_t>(one.num_elements()) * DTypeSize(dtype)),
                      0);
          } else {
            expect_close(out[0]);
          }
        }
      }
  }
}

// A bias (third input) and the GELU epilogue, and what is refused.
TEST(Gemm, BiasAndGeluEpilogue) {
  const int64_t m = 5, k = 7, n = 9;
  const std::vector<float> a = Random(m * k, 31), w = Random(k * n, 32), b = Random(n, 33);
  Tensor out = Run1("matmul", {F32({m, k}, a), F32({k, n}, w), F32({n}, b)},
                        {DType::kF32, {m, n}}, {{"epilogue", AttrString("gelu")}});
  std::vector<float> want = Reference(a, false, w, false, m, k, n);
  for (int64_t i = 0; i < m * n; ++i) {
    const double v = double(want[i]) + b[i % n];
    want[i] = static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  ExpectClose(out, want, k);

  std::vector<Tensor> outs;
  Status st = RunOp("matmul", {F32({m, k}, a), F32({k, n}, w), F32({n - 1}, Random(n - 1, 1))},
                    {{DType::kF32, {m, n}}}, {}, &outs);
  EXPECT_HAS(st.message(),
             "matmul bias must be f32[9] (one value per column of a matrix product), got f32[8]");
  st = RunOp("matmul", {F32({m, k}, a), F32({k, n}, w)}, {{DType::kF32, {m, n}}},
             {{"epilogue", AttrString("relu")}}, &outs);
  EXPECT_HAS(st.message(), "matmul epilogue must be 'gelu' or absent, got 'relu'");
  st = RunOp("matmul", {I64({1, 2}, {1, 2}), I64({2, 1}, {3, 4}), I64({1}, {5})},
             {{DType::kI64, {1, 1}}}, {}, &outs);
  EXPECT_HAS(st.message(), "matmul bias and epilogue need f32 or f64 operands, got i64");
}

}  // namespace
}  // namespace distrt

// The CUDA einsum bodies (portable/einsum.h), run on the host by HostFor,
// against the host kernel: the general contraction on the equations of a
// MoE layer and their gradients, diagonals, a letter summed within one
// operand, three operands, a full sum, empty extents, f32 f64 bf16 i64
// i32; and the batched-GEMM plan the CUDA kernel runs (operands permuted
// into [batch, m, k] / [batch, k, n] by PermuteBody, a plain product here
// in place of cuBLASLt, the result permuted back).
#include <gtest/gtest.h>

#include "einsum_plan.h"
#include "portable/einsum.h"
#include "portable/host_launch.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

struct Case {
  std::string equation;
  std::vector<Shape> shapes;
};

// t tokens 6, e experts 3, c capacity 4, d model 5, f hidden 7.
const Case kCases[] = {
    {"tec,td->ecd", {{6, 3, 4}, {6, 5}}},        // dispatch
    {"ecd,edf->ecf", {{3, 4, 5}, {3, 5, 7}}},    // expert FFN
    {"tec,ecd->td", {{6, 3, 4}, {3, 4, 5}}},     // combine
    {"ecd,td->tec", {{3, 4, 5}, {6, 5}}},        // gradients
    {"ecf,edf->ecd", {{3, 4, 7}, {3, 5, 7}}},
    {"ecd,ecf->edf", {{3, 4, 5}, {3, 4, 7}}},
    {"td,ecd->tec", {{6, 5}, {3, 4, 5}}},
    {"ii->i", {{4, 4}}},                         // a diagonal
    {"ij->", {{3, 5}}},                          // a full sum
    {"ij,jk->ik", {{3, 0}, {0, 4}}},             // an empty sum
    {"ab,bc,cd->ad", {{2, 3}, {3, 4}, {4, 2}}},  // three operands
    {"bij,bj->bi", {{2, 3, 4}, {2, 4}}},
    {"iij,jk->ki", {{3, 3, 2}, {2, 4}}},         // diagonal in a product
};

// The CUDA kernel's loop map for `e` (einsum_plan.h's letters and strides).
portable::EinsumMap LoopMap(const EinsumSpec& e, const std::vector<Tensor>& in, int64_t* n_sum) {
  const std::string letters = LoopLetters(e);
  portable::EinsumMap m;
  m.operands = static_cast<int>(in.size());
  m.letters = static_cast<int>(letters.size());
  m.out_letters = static_cast<int>(e.out.size());
  *n_sum = 1;
  for (size_t d = 0; d < letters.size(); ++d) {
    m.sizes[d] = e.extent.at(letters[d]);
    if (static_cast<int>(d) >= m.out_letters) *n_sum *= m.sizes[d];
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const std::vector<int64_t> s = LetterStrides(e.terms[i], in[i].shape(), letters);
    for (size_t d = 0; d < s.size(); ++d) m.strides[i][d] = s[d];
  }
  return m;
}

EinsumSpec Spec(const std::string& equation, const std::vector<Tensor>& in, Shape* out) {
  std::vector<const Shape*> shapes;
  for (const Tensor& t : in) shapes.push_back(&t.shape());
  EinsumSpec e;
  proto::Instruction inst;
  (*inst.mutable_attrs())["equation"] = AttrString(equation);
  Status st = ParseEinsum(AttrReader(inst), shapes, &e, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return e;
}

Tensor LoopWithBody(const std::string& equation, const std::vector<Tensor>& in) {
  Shape out;
  const EinsumSpec e = Spec(equation, in, &out);
  int64_t n_sum;
  const portable::EinsumMap m = LoopMap(e, in, &n_sum);
  Tensor y = Zeros(in[0].dtype(), out);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    portable::EinsumBody<T> body{};
    for (size_t i = 0; i < in.size(); ++i) body.in[i] = in[i].data<T>();
    body.out = y.data<T>();
    body.map = m;
    body.n_sum = n_sum;
    portable::HostFor(y.num_elements(), body);
  };
  switch (in[0].dtype()) {
    case DType::kF32: run(float{}); break;
    case DType::kF64: run(double{}); break;
    case DType::kBF16: run(bf16_t{}); break;
    case DType::kI64: run(int64_t{}); break;
    case DType::kI32: run(int32_t{}); break;
    default: ADD_FAILURE() << "no einsum body for " << DTypeName(in[0].dtype());
  }
  return y;
}

Tensor HostEinsum(const std::string& equation, const std::vector<Tensor>& in, const Shape& out) {
  return Run1("einsum", in, {in[0].dtype(), out}, {{"equation", AttrString(equation)}});
}

std::vector<double> AsF64(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  EXPECT_TRUE(CastBuffer(t.raw(), t.dtype(), v.data(), DType::kF64, t.num_elements()).ok());
  return v;
}

void ExpectNear(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.type(), want.type());
  const std::vector<double> gv = AsF64(got), wv = AsF64(want);
  for (size_t i = 0; i < gv.size(); ++i) {
    const double g = gv[i], w = wv[i];
    EXPECT_NEAR(g, w, tol * (1 + std::fabs(w))) << "element " << i;
  }
}

TEST(PortableEinsum, ContractionMatchesHostKernel) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16, DType::kI64, DType::kI32}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", c.equation));
      std::vector<Tensor> in;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        in.push_back(RandomOf(dt, c.shapes[i], 50 + static_cast<uint32_t>(i), 2.0));
      }
      Shape out;
      Spec(c.equation, in, &out);
      const Tensor want = HostEinsum(c.equation, in, out);
      const Tensor got = LoopWithBody(c.equation, in);
      std::string batch, m, n, k;
      EinsumSpec e = Spec(c.equation, in, &out);
      const bool host_gemm =
          (dt == DType::kF32 || dt == DType::kF64 || dt == DType::kBF16) && MatmulLetters(e, &batch, &m, &n, &k);
      if (host_gemm) {
        // The host multiplied with its GEMM (f32 for bf16): rounding differs.
        ExpectNear(got, want, dt == DType::kBF16 ? 1e-2 : (dt == DType::kF64 ? 1e-12 : 1e-5));
      } else {
        ExpectSameBytes(got, want);  // the host's loop, in the same order
      }
    }
  }
}

// The CUDA kernel's GEMM plan with a plain double product in place of
// cuBLASLt: checks the permutations around it.
TEST(PortableEinsum, GemmPlanMatchesHostKernel) {
  for (const Case& c : kCases) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      in.push_back(RandomOf(DType::kF32, c.shapes[i], 60 + static_cast<uint32_t>(i)));
    }
    Shape out;
    const EinsumSpec e = Spec(c.equation, in, &out);
    std::string batch, m, n, k;
    if (!MatmulLetters(e, &batch, &m, &n, &k)) continue;
    SCOPED_TRACE(c.equation);
    auto permute = [&](const float* src, const std::string& term, const Shape& shape,
                       const std::string& letters, std::vector<float>* dst) {
      const std::vector<int64_t> sizes = SizesOf(e, letters);
      const std::vector<int64_t> strides = LetterStrides(term, shape, letters);
      portable::PermuteBody<float> body{};
      body.src = src;
      body.rank = static_cast<int>(letters.size());
      for (size_t d = 0; d < letters.size(); ++d) {
        body.sizes[d] = sizes[d];
        body.strides[d] = strides[d];
      }
      dst->assign(static_cast<size_t>(Extent(e, letters)), 0.0f);
      body.dst = dst->data();
      portable::HostFor(static_cast<int64_t>(dst->size()), body);
    };
    const int64_t B = Extent(e, batch), M = Extent(e, m), N = Extent(e, n), K = Extent(e, k);
    std::vector<float> a, b, prod(static_cast<size_t>(B * M * N)), y;
    permute(in[0].data<float>(), e.terms[0], in[0].shape(), batch + m + k, &a);
    permute(in[1].data<float>(), e.terms[1], in[1].shape(), batch + k + n, &b);
    for (int64_t bi = 0; bi < B; ++bi) {
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t q = 0; q < K; ++q) {
            s += static_cast<double>(a[(bi * M + i) * K + q]) * b[(bi * K + q) * N + j];
          }
          prod[(bi * M + i) * N + j] = static_cast<float>(s);
        }
      }
    }
    const std::string lc = batch + m + n;
    permute(prod.data(), lc, SizesOf(e, lc), e.out, &y);
    ExpectNear(*Tensor::FromVector<float>(out, y), HostEinsum(c.equation, in, out), 1e-5);
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// einsum (nn.einsum: ONNX Einsum in explicit form, "bij,bjk->bik") and
// top_k (the indices of ONNX TopK; the values are a gather_elements).
//
// An einsum that is a batched matrix product (two operands; every letter
// in both and the result, or in one operand and the result, or in both and
// summed) multiplies [batch, m, k] by [batch, k, n] matrices with the GEMM,
// reading an operand in place where it is laid out so (or transposed) and
// copying it in contiguous runs where not; any other equation (diagonals, letters
// summed within one operand, three or more operands) runs as one loop over
// every letter, accumulating in double (int64 for integers).
#include <algorithm>
#include <map>
#include <numeric>

#include "einsum_plan.h"
#include "kernel_util.h"

namespace distrt {
namespace {

Status VerifyEinsum(const VerifyContext& ctx) {
  std::vector<const Shape*> shapes;
  for (const TensorType& t : ctx.inputs) {
    if (t.dtype != ctx.inputs[0].dtype) return InvalidArgumentError("einsum: mixed input dtypes");
    shapes.push_back(&t.shape);
  }
  EinsumSpec e;
  Shape s;
  DISTRT_RETURN_IF_ERROR(ParseEinsum(ctx.attrs(), shapes, &e, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

// How many elements at a time a copy reading with `strides` over `sizes`
// moves: the trailing dims that are contiguous in the source.
int64_t ContiguousRun(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t run = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != run) break;
    run *= sizes[d];
  }
  return run;
}

// Whether reading with `strides` over `sizes` walks memory in order: the
// source is already laid out as the copy would write it.
bool InOrder(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return ContiguousRun(sizes, strides) == NumElements(sizes);
}

// dst (contiguous, dims `sizes`) = src read with `strides` per dim. The
// trailing dims that are contiguous in src are copied as one run each.
template <typename T>
void StridedCopy(const T* src, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& strides, T* dst) {
  const int64_t run = ContiguousRun(sizes, strides);
  size_t inner = sizes.size();
  for (int64_t covered = 1; inner > 0 && covered * sizes[inner - 1] <= run;) {
    covered *= sizes[--inner];
  }
  const std::vector<int64_t> outer(sizes.begin(), sizes.begin() + inner);
  const int64_t n = NumElements(outer);
  std::vector<int64_t> idx(inner, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::copy(src + off, src + off + run, dst + i * run);
    for (size_t d = inner; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void EinsumLoop(const EinsumSpec& e, const std::vector<const Tensor*>& in, T* out) {
  using Acc = typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type;
  const std::string letters = LoopLetters(e);
  const size_t nout = e.out.size(), nl = letters.size();
  std::vector<int64_t> sizes;
  for (char c : letters) sizes.push_back(e.extent.at(c));
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < in.size(); ++i) {
    strides.push_back(LetterStrides(e.terms[i], in[i]->shape(), letters));
  }
  const std::vector<int64_t> out_sizes(sizes.begin(), sizes.begin() + nout);
  const std::vector<int64_t> sum_sizes(sizes.begin() + nout, sizes.end());
  const int64_t n_out = NumElements(out_sizes), n_sum = NumElements(sum_sizes);
  std::vector<int64_t> oidx(nout, 0), sidx(nl - nout, 0);
  std::vector<int64_t> base(in.size(), 0), off(in.size());
  for (int64_t o = 0; o < n_out; ++o) {
    Acc acc = 0;
    off = base;
    std::fill(sidx.begin(), sidx.end(), 0);
    for (int64_t s = 0; s < n_sum; ++s) {
      Acc p = 1;
      for (size_t i = 0; i < in.size(); ++i) p *= static_cast<Acc>(in[i]->data<T>()[off[i]]);
      acc += p;
      for (size_t d = sidx.size(); d-- > 0;) {
        for (size_t i = 0; i < in.size(); ++i) off[i] += strides[i][nout + d];
        if (++sidx[d] < sum_sizes[d]) break;
        for (size_t i = 0; i < in.size(); ++i) off[i] -= strides[i][nout + d] * sum_sizes[d];
        sidx[d] = 0;
      }
    }
    out[o] = static_cast<T>(acc);
    for (size_t d = nout; d-- > 0;) {
      for (size_t i = 0; i < in.size(); ++i) base[i] += strides[i][d];
      if (++oidx[d] < out_sizes[d]) break;
      for (size_t i = 0; i < in.size(); ++i) base[i] -= strides[i][d] * out_sizes[d];
      oidx[d] = 0;
    }
  }
}

// An operand of a batched product as [batch, rows, cols] matrices, or
// transposed ([batch, cols, rows], `transposed`): in place where the tensor
// is laid out so, else copied into `temp` in whichever of the two orders
// moves longer contiguous runs.
template <typename T>
Status Operand(KernelContext& ctx, const EinsumSpec& e, int i, const std::string& batch,
               const std::string& rows, const std::string& cols, Tensor* temp, const T** data,
               bool* transposed) {
  const Tensor& in = ctx.input(i);
  int64_t best_run = -1;
  for (bool trans : {false, true}) {
    const std::string order = batch + (trans ? cols + rows : rows + cols);
    const std::vector<int64_t> sizes = SizesOf(e, order),
                               strides = LetterStrides(e.terms[i], in.shape(), order);
    const int64_t run = ContiguousRun(sizes, strides);
    if (run == NumElements(sizes)) {
      *data = in.data<T>();
      *transposed = trans;
      return OkStatus();
    }
    if (run > best_run) {
      best_run = run;
      *transposed = trans;
    }
  }
  const std::string order = batch + (*transposed ? cols + rows : rows + cols);
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(in.dtype(), SizesOf(e, order), temp));
  StridedCopy(in.data<T>(), SizesOf(e, order), LetterStrides(e.terms[i], in.shape(), order),
              temp->data<T>());
  *data = temp->data<T>();
  return OkStatus();
}

template <typename T>
Status EinsumGemm(KernelContext& ctx, const EinsumSpec& e, const std::string& batch,
                  const std::string& m, const std::string& n, const std::string& k, T* out) {
  const int64_t B = Extent(e, batch), M = Extent(e, m), N = Extent(e, n), K = Extent(e, k);
  Tensor ta, tb, c;
  const T *a, *b;
  bool trans_a, trans_b;
  DISTRT_RETURN_IF_ERROR(Operand(ctx, e, 0, batch, m, k, &ta, &a, &trans_a));
  DISTRT_RETURN_IF_ERROR(Operand(ctx, e, 1, batch, k, n, &tb, &b, &trans_b));
  // The product lands in the result itself where the equation wants
  // [batch, m, n].
  const std::string lc = batch + m + n;
  const bool direct = InOrder(SizesOf(e, e.out), LetterStrides(lc, SizesOf(e, lc), e.out));
  T* prod = out;
  if (!direct) {
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(ctx.input(0).dtype(), {B, M, N}, &c));
    prod = c.data<T>();
  }
  // Rows r0..r1 of batch i's product: op(A)'s rows are A's columns when
  // transposed.
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  auto rows = [&](int64_t i, int64_t r0, int64_t r1) {
    const T* ai = a + i * M * K;
    GemmRowMajorEx(trans_a, trans_b, r1 - r0, N, K, trans_a ? ai + r0 : ai + r0 * lda, lda,
                   b + i * K * N, ldb, /*accumulate=*/false, prod + i * M * N + r0 * N, N);
  };
  // The executor's threads take whole batches (experts), or rows of each
  // where there are fewer batches than threads; small products run inline.
  ThreadPool* pool = B * M * N * K >= (int64_t{1} << 18) ? ctx.pool : nullptr;
  const int threads = pool ? pool->size() : 1;
  if (threads <= 1 || B >= threads) {
    ParallelFor(threads > 1 ? pool : nullptr, B, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) rows(i, 0, M);
    });
  } else {
    for (int64_t i = 0; i < B; ++i) {
      ParallelFor(pool, M, 8, [&](int64_t r0, int64_t r1) { rows(i, r0, r1); });
    }
  }
  // c is in batch+m+n order; the result wants e.out's.
  if (!direct) {
    StridedCopy(c.data<T>(), SizesOf(e, e.out), LetterStrides(lc, SizesOf(e, lc), e.out), out);
  }
  return OkStatus();
}

Status RunEinsum(KernelContext& ctx) {
  std::vector<const Shape*> shapes;
  for (const Tensor* t : ctx.inputs) shapes.push_back(&t->shape());
  EinsumSpec e;
  Shape s;
  DISTRT_RETURN_IF_ERROR(ParseEinsum(ctx.attrs(), shapes, &e, &s));
  const DType dt = ctx.input(0).dtype();
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{dt, s}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  std::string batch, m, n, k;
  if ((dt == DType::kF32 || dt == DType::kF64) && MatmulLetters(e, &batch, &m, &n, &k)) {
    if (dt == DType::kF32) return EinsumGemm(ctx, e, batch, m, n, k, out->data<float>());
    return EinsumGemm(ctx, e, batch, m, n, k, out->data<double>());
  }
  DISTRT_DISPATCH_NUMERIC(dt, "einsum", EinsumLoop<T>(e, ctx.inputs, out->data<T>()));
  return OkStatus();
}

}  // namespace

void RegisterEinsumKernels(KernelRegistry& r) {
  r.Add({"einsum", 1, -1, 1, RunEinsum, VerifyEinsum});
}

}  // namespace distrt

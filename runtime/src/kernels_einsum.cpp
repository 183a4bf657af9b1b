// einsum (nn.einsum: ONNX Einsum in explicit form, "bij,bjk->bik") and
// top_k (the indices of ONNX TopK; the values are a gather_elements).
//
// An einsum that is a batched matrix product (two operands; every letter
// in both and the result, or in one operand and the result, or in both and
// summed) copies its operands into [batch, m, k] and [batch, k, n] order
// and multiplies with the GEMM; any other equation (diagonals, letters
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

// dst (contiguous, dims `sizes`) = src read with `strides` per dim.
template <typename T>
void StridedCopy(const T* src, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& strides, T* dst) {
  const int64_t n = NumElements(sizes);
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (size_t d = sizes.size(); d-- > 0;) {
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

template <typename T>
Status EinsumGemm(KernelContext& ctx, const EinsumSpec& e, const std::string& batch,
                  const std::string& m, const std::string& n, const std::string& k, T* out) {
  const int64_t B = Extent(e, batch), M = Extent(e, m), N = Extent(e, n), K = Extent(e, k);
  const DType dt = ctx.input(0).dtype();
  Tensor a, b, c;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(dt, {B, M, K}, &a));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(dt, {B, K, N}, &b));
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(dt, {B, M, N}, &c));
  const std::string la = batch + m + k, lb = batch + k + n, lc = batch + m + n;
  StridedCopy(ctx.input(0).data<T>(), SizesOf(e, la),
              LetterStrides(e.terms[0], ctx.input(0).shape(), la), a.data<T>());
  StridedCopy(ctx.input(1).data<T>(), SizesOf(e, lb),
              LetterStrides(e.terms[1], ctx.input(1).shape(), lb), b.data<T>());
  for (int64_t i = 0; i < B; ++i) {
    GemmRowMajor(a.data<T>() + i * M * K, b.data<T>() + i * K * N, c.data<T>() + i * M * N, M, K,
                 N);
  }
  // c is in batch+m+n order; the result wants e.out's.
  StridedCopy(c.data<T>(), SizesOf(e, e.out), LetterStrides(lc, SizesOf(e, lc), e.out), out);
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

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

#include "kernel_util.h"

namespace distrt {
namespace {

struct EinsumSpec {
  std::vector<std::string> terms;
  std::string out;
  std::map<char, int64_t> extent;
};

Status ParseEinsum(const AttrReader& attrs, const std::vector<const Shape*>& shapes,
                   EinsumSpec* e, Shape* out_shape) {
  std::string eq;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("equation", "", &eq));
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos) {
    return InvalidArgumentError("einsum: equation '", eq, "' has no '->'");
  }
  e->out = eq.substr(arrow + 2);
  e->terms.clear();
  std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e->terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e->terms.size() != shapes.size()) {
    return InvalidArgumentError("einsum: equation '", eq, "' has ", e->terms.size(),
                                " terms for ", shapes.size(), " inputs");
  }
  e->extent.clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string& t = e->terms[i];
    if (t.size() != shapes[i]->size()) {
      return InvalidArgumentError("einsum: term '", t, "' for input ", i, " of rank ",
                                  shapes[i]->size());
    }
    for (size_t d = 0; d < t.size(); ++d) {
      auto [it, inserted] = e->extent.insert({t[d], (*shapes[i])[d]});
      if (!inserted && it->second != (*shapes[i])[d]) {
        return InvalidArgumentError("einsum: letter '", std::string(1, t[d]), "' has extents ",
                                    it->second, " and ", (*shapes[i])[d]);
      }
    }
  }
  out_shape->clear();
  for (size_t d = 0; d < e->out.size(); ++d) {
    const char c = e->out[d];
    if (!e->extent.count(c) || e->out.find(c) != d) {
      return InvalidArgumentError("einsum: result letter '", std::string(1, c),
                                  "' is unknown or repeats");
    }
    out_shape->push_back(e->extent[c]);
  }
  return OkStatus();
}

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

// Strides of `shape` (row-major) summed per letter of `term`, laid out in
// the order of `letters` (0 for a letter the term lacks): a repeated letter
// walks the diagonal.
std::vector<int64_t> LetterStrides(const std::string& term, const Shape& shape,
                                   const std::string& letters) {
  std::vector<int64_t> dim_stride(term.size());
  int64_t s = 1;
  for (size_t d = term.size(); d-- > 0;) {
    dim_stride[d] = s;
    s *= shape[d];
  }
  std::vector<int64_t> out(letters.size(), 0);
  for (size_t d = 0; d < term.size(); ++d) out[letters.find(term[d])] += dim_stride[d];
  return out;
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
  // Result letters first (in the result's order), then the summed ones.
  std::string letters = e.out, summed;
  for (const auto& [c, s] : e.extent) {
    if (letters.find(c) == std::string::npos) summed += c;
  }
  letters += summed;
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

// The letters of a two-operand product that is a batched GEMM, or false.
bool MatmulLetters(const EinsumSpec& e, std::string* batch, std::string* m, std::string* n,
                   std::string* k) {
  if (e.terms.size() != 2) return false;
  const std::string &a = e.terms[0], &b = e.terms[1];
  for (const std::string* t : {&a, &b}) {
    for (size_t d = 0; d < t->size(); ++d) {
      if (t->find((*t)[d]) != d) return false;
    }
  }
  for (const auto& [c, s] : e.extent) {
    const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos,
               in_out = e.out.find(c) != std::string::npos;
    if (in_a && in_b && in_out) {
      *batch += c;
    } else if (in_a && in_out) {
      *m += c;
    } else if (in_b && in_out) {
      *n += c;
    } else if (in_a && in_b) {
      *k += c;
    } else {
      return false;  // summed within one operand
    }
  }
  return true;
}

int64_t Extent(const EinsumSpec& e, const std::string& letters) {
  int64_t p = 1;
  for (char c : letters) p *= e.extent.at(c);
  return p;
}

std::vector<int64_t> SizesOf(const EinsumSpec& e, const std::string& letters) {
  std::vector<int64_t> s;
  for (char c : letters) s.push_back(e.extent.at(c));
  return s;
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

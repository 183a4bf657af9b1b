// CUDA kernel for einsum, planned as the host's (einsum_plan.h): an
// equation that is a batched matrix product on f32 f64 bf16 f16 permutes
// its operands into [batch, m, k] and [batch, k, n] order (strided copies;
// skipped where an operand already is), multiplies with the matmul
// kernel's cuBLASLt GEMM (cuda/gemm.h) and permutes the product into the
// result's order. Any other equation (diagonals, letters summed within one
// operand, one or three operands, integers) runs the general contraction
// body, one thread per result element accumulating in double / int64 as
// the host's loop does: correct, not fast. Refused (the host runs them):
// more than portable::kMaxEinsumOperands operands or kMaxEinsumLetters
// letters, and products too large for cuBLASLt's 32-bit sizes.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/einsum.h"
#include "cuda/gemm.h"
#include "cuda/kernels_common.h"
#include "einsum_plan.h"

namespace distrt {
namespace {

bool IsGemmDType(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kBF16 || t == DType::kF16;
}

Status Parse(const AttrReader& attrs, const std::vector<TensorType>& in, EinsumSpec* e,
             TensorType* out) {
  std::vector<const Shape*> shapes;
  for (const TensorType& t : in) {
    if (t.dtype != in[0].dtype) return InvalidArgumentError("einsum: mixed input dtypes");
    shapes.push_back(&t.shape);
  }
  out->dtype = in.empty() ? DType::kF32 : in[0].dtype;
  return ParseEinsum(attrs, shapes, e, &out->shape);
}

bool Fits32(int64_t v) { return v < (int64_t{1} << 31); }

bool AcceptEinsum(const VerifyContext& v) {
  if (v.inputs.empty() || static_cast<int>(v.inputs.size()) > portable::kMaxEinsumOperands ||
      v.outputs.size() != 1) {
    return false;
  }
  EinsumSpec e;
  TensorType out;
  if (!Parse(v.attrs(), v.inputs, &e, &out).ok() || v.outputs[0] != out) return false;
  if (static_cast<int>(e.extent.size()) > portable::kMaxEinsumLetters) return false;
  std::string batch, m, n, k;
  if (IsGemmDType(out.dtype) && MatmulLetters(e, &batch, &m, &n, &k)) {
    return Fits32(Extent(e, batch)) && Fits32(Extent(e, m)) && Fits32(Extent(e, n)) &&
           Fits32(Extent(e, k));
  }
  return out.dtype == DType::kF32 || out.dtype == DType::kF64 || out.dtype == DType::kBF16 ||
         out.dtype == DType::kF16 || out.dtype == DType::kI64 || out.dtype == DType::kI32;
}

// dst = src's elements read in the order of `letters` (src's letters
// `term`, shape `shape`), unless that is src's own order.
Status Permute(KernelContext& ctx, const EinsumSpec& e, const Tensor& src, const std::string& term,
               const std::string& letters, Tensor* tmp, const void** out) {
  if (term == letters) {
    *out = src.raw();
    return OkStatus();
  }
  const std::vector<int64_t> sizes = SizesOf(e, letters);
  const std::vector<int64_t> strides = LetterStrides(term, src.shape(), letters);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(src.dtype(), {n}, tmp));
  DISTRT_CUDA(cuda::LaunchPermute(DTypeSize(src.dtype()), src.raw(), tmp->raw(),
                                  static_cast<int>(letters.size()), sizes.data(), strides.data(),
                                  n, CudaOf(ctx).cuda_stream()),
              "einsum permute kernel");
  *out = tmp->raw();
  return OkStatus();
}

Status RunGemmEinsum(KernelContext& ctx, const EinsumSpec& e, const std::string& batch,
                     const std::string& m, const std::string& n, const std::string& k,
                     Tensor* y) {
  CudaDevice& dev = CudaOf(ctx);
  const DType dt = y->dtype();
  if (Extent(e, k) == 0) return dev.Zero(y->raw(), y->byte_size());  // an empty sum
  Tensor ta, tb, tc;
  const void *a, *b;
  DISTRT_RETURN_IF_ERROR(Permute(ctx, e, ctx.input(0), e.terms[0], batch + m + k, &ta, &a));
  DISTRT_RETURN_IF_ERROR(Permute(ctx, e, ctx.input(1), e.terms[1], batch + k + n, &tb, &b));
  const std::string lc = batch + m + n;
  void* c = y->raw();
  if (lc != e.out) {
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(dt, {y->num_elements()}, &tc));
    c = tc.raw();
  }
  DISTRT_RETURN_IF_ERROR(CudaBatchedGemm(dev, dt, a, b, c, Extent(e, batch), Extent(e, m),
                                         Extent(e, k), Extent(e, n)));
  if (lc == e.out) return OkStatus();
  const std::vector<int64_t> sizes = SizesOf(e, e.out);
  const std::vector<int64_t> strides = LetterStrides(lc, SizesOf(e, lc), e.out);
  DISTRT_CUDA(cuda::LaunchPermute(DTypeSize(dt), c, y->raw(), static_cast<int>(e.out.size()),
                                  sizes.data(), strides.data(), y->num_elements(),
                                  dev.cuda_stream()),
              "einsum permute kernel");
  return OkStatus();
}

Status RunLoopEinsum(KernelContext& ctx, const EinsumSpec& e, Tensor* y) {
  const std::string letters = LoopLetters(e);
  portable::EinsumMap map;
  map.operands = ctx.num_inputs();
  map.letters = static_cast<int>(letters.size());
  map.out_letters = static_cast<int>(e.out.size());
  int64_t n_sum = 1;
  for (size_t d = 0; d < letters.size(); ++d) {
    map.sizes[d] = e.extent.at(letters[d]);
    if (static_cast<int>(d) >= map.out_letters) n_sum *= map.sizes[d];
  }
  const void* inputs[portable::kMaxEinsumOperands] = {};
  for (int i = 0; i < map.operands; ++i) {
    const std::vector<int64_t> s = LetterStrides(e.terms[i], ctx.input(i).shape(), letters);
    for (size_t d = 0; d < s.size(); ++d) map.strides[i][d] = s[d];
    inputs[i] = ctx.input(i).raw();
  }
  DISTRT_CUDA(cuda::LaunchEinsum(y->dtype(), inputs, y->raw(), y->num_elements(), map, n_sum,
                                 CudaOf(ctx).cuda_stream()),
              "einsum kernel");
  return OkStatus();
}

Status RunEinsum(KernelContext& ctx) {
  std::vector<TensorType> types;
  for (int i = 0; i < ctx.num_inputs(); ++i) types.push_back(ctx.input(i).type());
  if (static_cast<int>(types.size()) > portable::kMaxEinsumOperands) {
    return InvalidArgumentError("einsum: the CUDA kernel takes at most ",
                                portable::kMaxEinsumOperands, " operands");
  }
  EinsumSpec e;
  TensorType out;
  DISTRT_RETURN_IF_ERROR(Parse(ctx.attrs(), types, &e, &out));
  if (static_cast<int>(e.extent.size()) > portable::kMaxEinsumLetters) {
    return InvalidArgumentError("einsum: the CUDA kernel takes at most ",
                                portable::kMaxEinsumLetters, " letters");
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], out));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  std::string batch, m, n, k;
  if (IsGemmDType(out.dtype) && MatmulLetters(e, &batch, &m, &n, &k)) {
    return RunGemmEinsum(ctx, e, batch, m, n, k, y);
  }
  return RunLoopEinsum(ctx, e, y);
}

}  // namespace

void RegisterCudaEinsumKernels(KernelRegistry& r) {
  // Any operand count, as the host's: accepts refuses more than the body
  // takes, so those fall back to the host.
  r.Add(CudaKernel("einsum", 1, -1, RunEinsum,
                   FloatDTypes() | IntDTypes(), AcceptEinsum, false));
}

}  // namespace distrt

// CUDA kernel for cumsum (ONNX CumSum: axis, exclusive, reverse) on f32
// f64 bf16 f16 i64 i32, with kernels_reduce.cpp's order of additions (one
// thread per line, see portable/cumsum.h).
#include <algorithm>

#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/cumsum.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

// x viewed as [outer, dim, inner] around the normalised axis (a scalar is
// one line of one element, as on the host).
Status CumSumView(const AttrReader& attrs, const Shape& shape, int64_t* outer, int64_t* dim,
                  int64_t* inner) {
  int64_t a, axis;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, std::max<int>(1, static_cast<int>(shape.size())), &axis));
  *outer = *inner = 1;
  *dim = shape.empty() ? 1 : shape[static_cast<size_t>(axis)];
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) *outer *= shape[d];
    if (static_cast<int64_t>(d) > axis) *inner *= shape[d];
  }
  return OkStatus();
}

bool AcceptCumSum(const VerifyContext& v) {
  int64_t outer, dim, inner;
  return AcceptSameType(v) && CumSumView(v.attrs(), v.inputs[0].shape, &outer, &dim, &inner).ok();
}

Status RunCumSum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t outer, dim, inner, exclusive, reverse;
  DISTRT_RETURN_IF_ERROR(CumSumView(ctx.attrs(), x.shape(), &outer, &dim, &inner));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("exclusive", 0, &exclusive));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("reverse", 0, &reverse));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (x.num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchCumSum(x.dtype(), x.raw(), y->raw(), outer, dim, inner, exclusive != 0,
                                 reverse != 0, CudaOf(ctx).cuda_stream()),
              "cumsum kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaCumSumKernels(KernelRegistry& r) {
  // in_place_ok: a line's thread reads each element before writing it.
  r.Add(CudaKernel("cumsum", 1, 1, RunCumSum, FloatDTypes() | IntDTypes(), AcceptCumSum, true));
}

}  // namespace distrt

// CUDA kernel for top_k (the int64 positions of the k largest or smallest
// values along an axis, best first; f32 f64 bf16 f16 i64 i32), ordered as
// kernels_reduce.cpp's stable sort (portable/top_k.h). One warp per line,
// k selection rounds: k above kMaxDeviceK is left to the host, whose sort
// is the better algorithm there.
#include "axis_geometry.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/kernels_common.h"
#include "cuda/top_k.h"

namespace distrt {
namespace {

constexpr int64_t kMaxDeviceK = 64;

Status TopKView(const AttrReader& attrs, const Shape& in, AxisSplit* split, int64_t* k,
                TensorType* out) {
  int64_t a, axis;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", -1, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(in.size()), &axis));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("k", k));
  if (*k < 0 || *k > in[static_cast<size_t>(axis)]) {
    return InvalidArgumentError("top_k: k ", *k, " is not in [0, ", in[static_cast<size_t>(axis)],
                                "]");
  }
  *split = SplitAround(in, axis);
  out->dtype = DType::kI64;
  out->shape = in;
  out->shape[static_cast<size_t>(axis)] = *k;
  return OkStatus();
}

bool AcceptTopK(const VerifyContext& v) {
  if (v.inputs.size() != 1 || v.outputs.size() != 1) return false;
  AxisSplit split;
  int64_t k;
  TensorType out;
  return TopKView(v.attrs(), v.inputs[0].shape, &split, &k, &out).ok() && k <= kMaxDeviceK &&
         v.outputs[0] == out;
}

Status RunTopK(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  AxisSplit split;
  int64_t k, smallest;
  TensorType out;
  DISTRT_RETURN_IF_ERROR(TopKView(ctx.attrs(), x.shape(), &split, &k, &out));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("smallest", 0, &smallest));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], out));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  DISTRT_CUDA(cuda::LaunchTopK(x.dtype(), x.raw(), y->data<int64_t>(), split.outer, split.n,
                               split.inner, k, smallest != 0, CudaOf(ctx).cuda_stream()),
              "top_k kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaTopKKernels(KernelRegistry& r) {
  r.Add(CudaKernel("top_k", 1, 1, RunTopK, FloatDTypes() | IntDTypes(), AcceptTopK, false));
}

}  // namespace distrt

// CUDA kernel for cast between every pair of the host's dtypes (f32 f64
// bf16 f16 i64 i32 i16 i8 u8 bool), converting exactly as the host kernel
// does (portable/cast.h).
#include "cuda/cast.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

bool Known(DType t) { return (AllDTypes() & DTypeMask({t})) != 0; }

bool AcceptCast(const VerifyContext& v) {
  return v.inputs.size() == 1 && v.outputs.size() == 1 && Known(v.inputs[0].dtype) &&
         Known(v.outputs[0].dtype) && v.inputs[0].shape == v.outputs[0].shape;
}

Status RunCast(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ot, TensorType{ot.dtype, x.shape()}));
  if (x.dtype() == ot.dtype) return ctx.SetOutput(0, x);  // as the host: no copy
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchCast(x.dtype(), ot.dtype, x.raw(), y->raw(), x.num_elements(),
                               CudaOf(ctx).cuda_stream()),
              "cast kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaCastKernels(KernelRegistry& r) {
  // Registered by the source dtype (the instruction's compute dtype).
  r.Add(CudaKernel("cast", 1, 1, RunCast, AllDTypes(), AcceptCast, true));
}

}  // namespace distrt

// CUDA kernels for reduce_sum / mean / max / min / prod over any axes and
// argmax / argmin, on f32, f64, bf16 and f16 (16-bit floats accumulate in
// f32). Shapes and attributes as the host kernels (kernels_reduce.cpp) read
// them; the work is planned by portable::MakeReducePlan.
#include <algorithm>

#include "axis_geometry.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/kernels_common.h"
#include "cuda/reduce.h"

namespace distrt {
namespace {

using portable::ReduceOp;


ReduceOp ReduceOpOf(const std::string& name) {
  if (name == "reduce_sum") return ReduceOp::kSum;
  if (name == "reduce_mean") return ReduceOp::kMean;
  if (name == "reduce_max") return ReduceOp::kMax;
  if (name == "reduce_min") return ReduceOp::kMin;
  return ReduceOp::kProd;
}

bool AcceptReduce(const VerifyContext& v) {
  return v.inputs.size() == 1 && v.outputs.size() == 1 && v.inputs[0].dtype == v.outputs[0].dtype;
}

Status RunReduce(KernelContext& ctx) {
  const ReduceOp op = ReduceOpOf(ctx.inst->op());
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  Shape out_shape;
  DISTRT_RETURN_IF_ERROR(ReduceShape(ctx.attrs(), x.shape(), &axes, &out_shape));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), out_shape}));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  int64_t count;
  const std::vector<portable::ReducePass> plan =
      portable::MakeReducePlan(op, x.shape(), axes, portable::ReduceTargets(), &count);
  // Passes before the last write compute-type partial results.
  const DType partial = x.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  std::vector<Tensor> temps(plan.size());  // freed in stream order after the passes
  const void* in = x.raw();
  bool in_partial = false;
  for (size_t k = 0; k < plan.size(); ++k) {
    const bool last = k + 1 == plan.size();
    void* out = y->raw();
    if (!last) {
      DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(partial, {plan[k].result_elements()}, &temps[k]));
      out = temps[k].raw();
    }
    DISTRT_CUDA(
        cuda::LaunchReducePass(x.dtype(), op, plan[k], in, in_partial, out, !last,
                               last && op == ReduceOp::kMean, count, CudaOf(ctx).cuda_stream()),
        "reduction kernel");
    in = out;
    in_partial = !last;
  }
  return OkStatus();
}

// ---- argmax / argmin -------------------------------------------------------------

bool AcceptArg(const VerifyContext& v) {
  return v.inputs.size() == 1 && v.outputs.size() == 1 && v.outputs[0].dtype == DType::kI64;
}

Status RunArg(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const Tensor& x = ctx.input(0);
  int64_t axis;
  Shape s;
  DISTRT_RETURN_IF_ERROR(ArgShape(ctx.attrs(), x.shape(), &axis, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{DType::kI64, s}));
  int64_t last;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("select_last_index", 0, &last));
  const AxisSplit split = SplitAround(x.shape(), axis);
  const int64_t outer = split.outer, n = split.n, inner = split.inner;
  if (n == 0) return InvalidArgumentError(name, " over an empty axis");
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchArg(x.dtype(), name == "argmax", last != 0, x.raw(), y->data<int64_t>(),
                              outer, n, inner, CudaOf(ctx).cuda_stream()),
              "argmax/argmin kernel");
  return OkStatus();
}

KernelDef CudaDef(const char* name, KernelFn run, AcceptFn accepts) {
  return CudaKernel(name, 1, 1, run, FloatDTypes(), accepts, false);
}

}  // namespace

void RegisterCudaReduceKernels(KernelRegistry& r) {
  for (const char* n : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"})
    r.Add(CudaDef(n, RunReduce, AcceptReduce));
  r.Add(CudaDef("argmax", RunArg, AcceptArg));
  r.Add(CudaDef("argmin", RunArg, AcceptArg));
}

}  // namespace distrt

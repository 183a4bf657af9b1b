// CUDA kernels for integer arithmetic (add sub mul div max min mod, neg
// abs on i64 and i32; the float ones are kernels_elementwise.cpp's), mod on
// floats (f32 f64 bf16 f16), and clip (f32 f64 bf16 f16 i64 i32). Binary
// ops broadcast (up to kMaxDims dims). An integer division or modulo by
// zero gives 0 there and the host kernel's error when the run next waits
// for the device (device_errors.h). bf16/f16 mod and clip go beyond the host kernels
// (which have no 16-bit floats there); they compute in f32 and round once.
#include "cuda/arith.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

using portable::BroadcastMap;
using portable::IntBinaryOp;
using portable::IntUnaryOp;

struct IntBinaryName {
  const char* name;
  IntBinaryOp op;
};
const IntBinaryName kIntBinary[] = {
    {"add", IntBinaryOp::kAdd}, {"sub", IntBinaryOp::kSub}, {"mul", IntBinaryOp::kMul},
    {"div", IntBinaryOp::kDiv}, {"max", IntBinaryOp::kMax}, {"min", IntBinaryOp::kMin},
};

bool IsIntType(DType t) { return t == DType::kI64 || t == DType::kI32; }

// Same dtypes, shapes that broadcast to the output's.
bool AcceptSameTypeBinary(const VerifyContext& v) {
  if (v.inputs.size() != 2 || v.outputs.size() != 1) return false;
  if (v.inputs[0].dtype != v.inputs[1].dtype || v.inputs[0].dtype != v.outputs[0].dtype)
    return false;
  BroadcastMap map;
  return portable::MakeBroadcastMap({v.inputs[0].shape, v.inputs[1].shape}, v.outputs[0].shape,
                                    &map);
}

Status MapOf(const Tensor& a, const Tensor& b, const Shape& out, BroadcastMap* map) {
  if (!portable::MakeBroadcastMap({a.shape(), b.shape()}, out, map)) {
    return InvalidArgumentError("shapes ", ShapeToString(a.shape()), " and ",
                                ShapeToString(b.shape()), " do not broadcast to ",
                                ShapeToString(out));
  }
  return OkStatus();
}

Status RunIntBinary(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  const std::string& name = ctx.inst->op();
  IntBinaryOp op = IntBinaryOp::kAdd;
  if (name == "mod") {
    int64_t fmod;
    DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("fmod", 0, &fmod));
    op = fmod ? IntBinaryOp::kFmod : IntBinaryOp::kMod;
  } else {
    for (const IntBinaryName& n : kIntBinary)
      if (name == n.name) op = n.op;
  }
  BroadcastMap map;
  DISTRT_RETURN_IF_ERROR(MapOf(a, b, ctx.output_types[0].shape, &map));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchIntBinary(a.dtype(), op, a.raw(), b.raw(), y->raw(), y->num_elements(),
                                    map, slot, CudaOf(ctx).cuda_stream()),
              "integer binary kernel");
  return OkStatus();
}

Status RunMod(KernelContext& ctx) {
  if (IsIntType(ctx.input(0).dtype())) return RunIntBinary(ctx);
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  int64_t fmod;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("fmod", 0, &fmod));
  BroadcastMap map;
  DISTRT_RETURN_IF_ERROR(MapOf(a, b, ctx.output_types[0].shape, &map));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchFloatMod(a.dtype(), fmod != 0, a.raw(), b.raw(), y->raw(),
                                   y->num_elements(), map, CudaOf(ctx).cuda_stream()),
              "mod kernel");
  return OkStatus();
}

Status RunIntUnary(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  const IntUnaryOp op = ctx.inst->op() == "neg" ? IntUnaryOp::kNeg : IntUnaryOp::kAbs;
  DISTRT_CUDA(cuda::LaunchIntUnary(x.dtype(), op, x.raw(), y->raw(), x.num_elements(),
                                   CudaOf(ctx).cuda_stream()),
              "integer unary kernel");
  return OkStatus();
}

Status RunClip(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  AttrReader attrs = ctx.attrs();
  const bool has_min = attrs.Has("min"), has_max = attrs.Has("max");
  double lo = 0, hi = 0;
  if (has_min) DISTRT_RETURN_IF_ERROR(attrs.GetFloat("min", &lo));
  if (has_max) DISTRT_RETURN_IF_ERROR(attrs.GetFloat("max", &hi));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchClip(x.dtype(), has_min, lo, has_max, hi, x.raw(), y->raw(),
                               x.num_elements(), CudaOf(ctx).cuda_stream()),
              "clip kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaArithKernels(KernelRegistry& r) {
  // Element-wise: each output element is written after its operands are
  // read, so outputs may take over a dying input's buffer.
  for (const IntBinaryName& n : kIntBinary)
    r.Add(CudaKernel(n.name, 2, 2, RunIntBinary, IntDTypes(), AcceptSameTypeBinary, true));
  r.Add(CudaKernel("mod", 2, 2, RunMod, FloatDTypes() | IntDTypes(), AcceptSameTypeBinary, true));
  r.Add(CudaKernel("neg", 1, 1, RunIntUnary, IntDTypes(), AcceptSameType, true));
  r.Add(CudaKernel("abs", 1, 1, RunIntUnary, IntDTypes(), AcceptSameType, true));
  r.Add(CudaKernel("clip", 1, 1, RunClip, FloatDTypes() | IntDTypes(), AcceptSameType, true));
}

}  // namespace distrt

// CUDA kernels for comparisons (equal, less, less_equal, greater,
// greater_equal on f32 f64 bf16 f16 i64 i32 bool u8 -> bool), logic (and,
// or, xor, not on bool) and where (any branch dtype), with numpy
// broadcasting of up to kMaxDims dims. bf16/f16 comparisons go beyond the
// host kernel (which has no 16-bit floats there); they compare the exact
// f32 values.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/kernels_common.h"
#include "cuda/logic.h"

namespace distrt {
namespace {

using portable::BroadcastMap;
using portable::CompareOp;
using portable::LogicOp;

struct CompareName {
  const char* name;
  CompareOp op;
};
const CompareName kCompare[] = {
    {"equal", CompareOp::kEqual},     {"less", CompareOp::kLess},
    {"less_equal", CompareOp::kLessEqual}, {"greater", CompareOp::kGreater},
    {"greater_equal", CompareOp::kGreaterEqual},
};

struct LogicName {
  const char* name;
  LogicOp op;
};
const LogicName kLogic[] = {{"and", LogicOp::kAnd}, {"or", LogicOp::kOr}, {"xor", LogicOp::kXor}};

uint32_t CompareDTypes() {
  return FloatDTypes() | IntDTypes() | DTypeMask({DType::kBool, DType::kU8});
}

Status MapOf(const std::vector<Shape>& operands, const Shape& out, BroadcastMap* map) {
  if (!portable::MakeBroadcastMap(operands, out, map)) {
    return InvalidArgumentError("operand shapes do not broadcast to ", ShapeToString(out),
                                " in at most ", portable::kMaxDims, " dims");
  }
  return OkStatus();
}

bool Broadcasts(const VerifyContext& v) {
  std::vector<Shape> shapes;
  for (const TensorType& t : v.inputs) shapes.push_back(t.shape);
  BroadcastMap map;
  return portable::MakeBroadcastMap(shapes, v.outputs[0].shape, &map);
}

bool AcceptCompare(const VerifyContext& v) {
  return v.inputs.size() == 2 && v.outputs.size() == 1 && v.inputs[0].dtype == v.inputs[1].dtype &&
         (CompareDTypes() & DTypeMask({v.inputs[0].dtype})) != 0 &&
         v.outputs[0].dtype == DType::kBool && Broadcasts(v);
}

bool AcceptLogic(const VerifyContext& v) {
  return v.inputs.size() == 2 && v.outputs.size() == 1 && v.inputs[0].dtype == DType::kBool &&
         v.inputs[1].dtype == DType::kBool && v.outputs[0].dtype == DType::kBool && Broadcasts(v);
}

bool AcceptNot(const VerifyContext& v) {
  return v.inputs.size() == 1 && v.outputs.size() == 1 && v.inputs[0].dtype == DType::kBool &&
         v.outputs[0].dtype == DType::kBool;
}

bool AcceptWhere(const VerifyContext& v) {
  if (v.inputs.size() != 3 || v.outputs.size() != 1) return false;
  const DType t = v.outputs[0].dtype;
  const size_t elem = DTypeSize(t);
  return v.inputs[0].dtype == DType::kBool && v.inputs[1].dtype == t && v.inputs[2].dtype == t &&
         (elem == 1 || elem == 2 || elem == 4 || elem == 8) && Broadcasts(v);
}

CompareOp CompareOpOf(const std::string& name) {
  for (const CompareName& c : kCompare)
    if (name == c.name) return c.op;
  return CompareOp::kEqual;
}

LogicOp LogicOpOf(const std::string& name) {
  for (const LogicName& l : kLogic)
    if (name == l.name) return l.op;
  return LogicOp::kAnd;
}

Status RunCompare(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  BroadcastMap map;
  DISTRT_RETURN_IF_ERROR(MapOf({a.shape(), b.shape()}, ctx.output_types[0].shape, &map));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchCompare(a.dtype(), CompareOpOf(ctx.inst->op()), a.raw(), b.raw(),
                                  y->raw(), y->num_elements(), map, CudaOf(ctx).cuda_stream()),
              "comparison kernel");
  return OkStatus();
}

Status RunLogic(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  BroadcastMap map;
  DISTRT_RETURN_IF_ERROR(MapOf({a.shape(), b.shape()}, ctx.output_types[0].shape, &map));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchLogic(LogicOpOf(ctx.inst->op()), a.raw(), b.raw(), y->raw(),
                                y->num_elements(), map, CudaOf(ctx).cuda_stream()),
              "logic kernel");
  return OkStatus();
}

Status RunNot(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchNot(x.raw(), y->raw(), x.num_elements(), CudaOf(ctx).cuda_stream()),
              "not kernel");
  return OkStatus();
}

Status RunWhere(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor &c = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2);
  BroadcastMap map;
  DISTRT_RETURN_IF_ERROR(
      MapOf({c.shape(), a.shape(), b.shape()}, ctx.output_types[0].shape, &map));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchWhere(DTypeSize(a.dtype()), c.raw(), a.raw(), b.raw(), y->raw(),
                                y->num_elements(), map, CudaOf(ctx).cuda_stream()),
              "where kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaLogicKernels(KernelRegistry& r) {
  // Every kernel here writes element i after reading what it depends on at
  // index i: outputs may take over a dying input's buffer.
  for (const CompareName& c : kCompare)
    r.Add(CudaKernel(c.name, 2, 2, RunCompare, CompareDTypes(), AcceptCompare, true));
  for (const LogicName& l : kLogic)
    r.Add(CudaKernel(l.name, 2, 2, RunLogic, DTypeMask({DType::kBool}), AcceptLogic, true));
  r.Add(CudaKernel("not", 1, 1, RunNot, DTypeMask({DType::kBool}), AcceptNot, true));
  // where's compute dtype is a float branch's, else the bool condition's:
  // integer branches come under kBool.
  r.Add(CudaKernel("where", 3, 3, RunWhere, FloatDTypes() | DTypeMask({DType::kBool}),
                   AcceptWhere, true));
}

}  // namespace distrt

// CUDA kernels for gather (every dtype) and scatter_add (f32 f64 bf16 f16
// i64 i32, with atomic adds) along an axis, with i64 or i32 indices,
// negative ones counting from the end (kernels_index.cpp's semantics).
//
// An index out of range is the host kernels' OutOfRange error. Checking
// the indices before launching would mean reading them back, a
// synchronisation on every call (gather and scatter_add run in every
// training step), so the bodies check each index as they use it instead:
// gather writes zeros for it, scatter_add drops its updates, nothing is
// read or written out of bounds, and the error is recorded in the device's
// error slot, which the next kernel of these families to be queued after it
// has finished turns into the host kernel's error (cuda/device_errors.h).
// So a bad index fails the run that queues that next kernel (the same run
// if a later instruction finds it, else the next run) rather than the
// instruction that read it.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/index.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

bool IsIndexType(DType t) { return t == DType::kI64 || t == DType::kI32; }

// data [outer, dim, inner] along `axis`; `out` is gather's output type.
struct IndexShape {
  int64_t axis = 0, outer = 1, dim = 0, inner = 1, n = 0;
  TensorType out;
};

Status IndexShapeOf(const AttrReader& attrs, const TensorType& data, const TensorType& idx,
                    IndexShape* s) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(data.shape.size()), &s->axis));
  if (!IsIndexType(idx.dtype)) {
    return InvalidArgumentError("indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  const size_t ax = static_cast<size_t>(s->axis);
  s->outer = s->inner = 1;
  for (size_t d = 0; d < data.shape.size(); ++d) {
    if (d < ax) s->outer *= data.shape[d];
    if (d > ax) s->inner *= data.shape[d];
  }
  s->dim = data.shape[ax];
  s->n = NumElements(idx.shape);
  s->out.dtype = data.dtype;
  s->out.shape.assign(data.shape.begin(), data.shape.begin() + s->axis);
  s->out.shape.insert(s->out.shape.end(), idx.shape.begin(), idx.shape.end());
  s->out.shape.insert(s->out.shape.end(), data.shape.begin() + s->axis + 1, data.shape.end());
  return OkStatus();
}

// The widest copy unit (<= 16 bytes, a multiple of the element) that
// divides a slice and keeps both buffers aligned.
size_t GatherUnit(size_t elem, int64_t inner, const void* a, const void* b) {
  const uint64_t bytes = static_cast<uint64_t>(inner) * elem;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  for (size_t w = 16; w > elem; w /= 2)
    if (bytes % w == 0 && addr % w == 0) return w;
  return elem;
}

bool AcceptGather(const VerifyContext& v) {
  IndexShape s;
  return v.inputs.size() == 2 && v.outputs.size() == 1 &&
         IndexShapeOf(v.attrs(), v.inputs[0], v.inputs[1], &s).ok() && v.outputs[0] == s.out;
}

Status RunGather(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  IndexShape s;
  DISTRT_RETURN_IF_ERROR(IndexShapeOf(ctx.attrs(), data.type(), idx.type(), &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], s.out));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  const size_t elem = DTypeSize(data.dtype());
  const size_t unit = GatherUnit(elem, s.inner, data.raw(), y->raw());
  const int64_t units = s.inner * static_cast<int64_t>(elem) / static_cast<int64_t>(unit);
  DISTRT_CUDA(cuda::LaunchGather(unit, idx.dtype(), data.raw(), idx.raw(), y->raw(), s.outer, s.n,
                                 s.dim, units, slot, CudaOf(ctx).cuda_stream()),
              "gather kernel");
  return OkStatus();
}

bool AcceptScatterAdd(const VerifyContext& v) {
  IndexShape s;
  return v.inputs.size() == 3 && v.outputs.size() == 1 &&
         IndexShapeOf(v.attrs(), v.inputs[0], v.inputs[1], &s).ok() && v.inputs[2] == s.out &&
         v.outputs[0] == v.inputs[0];
}

Status RunScatterAdd(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const Tensor &base = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  IndexShape s;
  DISTRT_RETURN_IF_ERROR(IndexShapeOf(ctx.attrs(), base.type(), idx.type(), &s));
  if (upd.type() != s.out) {
    return InvalidArgumentError("scatter_add updates are ", upd.type().ToString(), ", expected ",
                                s.out.ToString());
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], base.type()));
  // Only base may become the output: the indices and updates are read after
  // base is copied into it.
  for (size_t k = 1; k < ctx.donatable.size(); ++k) ctx.donatable[k] = false;
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->raw() != base.raw()) {
    DISTRT_RETURN_IF_ERROR(ctx.device->CopyWithin(y->raw(), base.raw(), base.byte_size()));
  }
  DISTRT_CUDA(cuda::LaunchScatterAdd(base.dtype(), idx.dtype(), upd.raw(), idx.raw(), y->raw(),
                                     s.outer, s.n, s.dim, s.inner, slot,
                                     CudaOf(ctx).cuda_stream()),
              "scatter_add kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaIndexKernels(KernelRegistry& r) {
  r.Add(CudaKernel("gather", 2, 2, RunGather, AllDTypes(), AcceptGather, false));
  // in_place_ok: the result may take over a dying base (the kernel refuses
  // the other inputs' buffers itself), saving a table-sized copy.
  r.Add(CudaKernel("scatter_add", 3, 3, RunScatterAdd, FloatDTypes() | IntDTypes(),
                   AcceptScatterAdd, true));
}

}  // namespace distrt

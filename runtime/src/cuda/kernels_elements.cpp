// CUDA kernels for gather_elements and scatter_elements (every dtype;
// scatter_elements' reduction "none", and "add" on f32 f64 i64 i32) and
// one_hot (every values dtype), with i64 or i32 indices, negative
// ones counting from the end (kernels_index.cpp's semantics).
//
// scatter_elements: "none" lets the last of duplicate positions win, as
// the host's in-order writes do (two passes, portable/elements.h). "add"
// adds duplicates atomically, in no particular order: integers match the
// host exactly, floats up to rounding (as scatter_add). Refused (the host
// runs them): "mul", "max" and "min", and "add" on bf16/f16, which the
// host sums in f32 and rounds once (16-bit atomics would round per add).
//
// An index out of range is reported through the device's error slot, as
// for gather (see kernels_index.cpp): gather_elements writes a zero,
// scatter_elements drops the update, and the host kernel's OutOfRange
// error surfaces when the next such kernel is queued.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/elements.h"
#include "cuda/kernels_common.h"

namespace distrt {
namespace {

// The host's ElementsShape, plus the map the bodies use.
Status ElementsMapOf(const AttrReader& attrs, const TensorType& data, const TensorType& idx,
                     portable::ElementsMap* m) {
  int64_t a, axis;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  const int rank = static_cast<int>(data.shape.size());
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, rank, &axis));
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError("indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  if (static_cast<int>(idx.shape.size()) != rank) {
    return InvalidArgumentError("indices ", idx.ToString(), " must have the rank of data ",
                                data.ToString());
  }
  if (rank > portable::kMaxDims) {
    return InvalidArgumentError("rank ", rank, " exceeds ", portable::kMaxDims);
  }
  m->rank = rank;
  m->axis = static_cast<int>(axis);
  m->dim = data.shape[static_cast<size_t>(axis)];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (d != axis && idx.shape[d] > data.shape[d]) {
      return InvalidArgumentError("indices ", idx.ToString(), " exceed data ", data.ToString(),
                                  " in dimension ", d);
    }
    m->idx_dims[d] = idx.shape[d];
    m->data_strides[d] = stride;
    stride *= data.shape[d];
  }
  return OkStatus();
}

bool AcceptGatherElements(const VerifyContext& v) {
  portable::ElementsMap m;
  return v.inputs.size() == 2 && v.outputs.size() == 1 &&
         ElementsMapOf(v.attrs(), v.inputs[0], v.inputs[1], &m).ok() &&
         v.outputs[0] == TensorType{v.inputs[0].dtype, v.inputs[1].shape};
}

Status RunGatherElements(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  portable::ElementsMap m;
  DISTRT_RETURN_IF_ERROR(ElementsMapOf(ctx.attrs(), data.type(), idx.type(), &m));
  DISTRT_RETURN_IF_ERROR(
      CheckOutputType(ctx.output_types[0], TensorType{data.dtype(), idx.shape()}));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchGatherElements(DTypeSize(data.dtype()), idx.dtype(), data.raw(),
                                         idx.raw(), y->raw(), idx.num_elements(), m, slot,
                                         CudaOf(ctx).cuda_stream()),
              "gather_elements kernel");
  return OkStatus();
}

bool AddableDType(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kI64 || t == DType::kI32;
}

bool AcceptScatterElements(const VerifyContext& v) {
  portable::ElementsMap m;
  if (v.inputs.size() != 3 || v.outputs.size() != 1 ||
      !ElementsMapOf(v.attrs(), v.inputs[0], v.inputs[1], &m).ok() ||
      v.inputs[2] != TensorType{v.inputs[0].dtype, v.inputs[1].shape} ||
      v.outputs[0] != v.inputs[0]) {
    return false;
  }
  std::string reduction;
  if (!v.attrs().GetString("reduction", "none", &reduction).ok()) return false;
  return reduction == "none" || (reduction == "add" && AddableDType(v.inputs[0].dtype));
}

Status RunScatterElements(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  portable::ElementsMap m;
  DISTRT_RETURN_IF_ERROR(ElementsMapOf(ctx.attrs(), data.type(), idx.type(), &m));
  if (upd.type() != TensorType{data.dtype(), idx.shape()}) {
    return InvalidArgumentError("scatter_elements updates are ", upd.type().ToString(),
                                ", expected the indices' shape and data's dtype");
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], data.type()));
  std::string reduction;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetString("reduction", "none", &reduction));
  if (reduction != "none" && !(reduction == "add" && AddableDType(data.dtype()))) {
    return InvalidArgumentError("scatter_elements reduction '", reduction, "' on ",
                                DTypeName(data.dtype()), " has no CUDA kernel");
  }
  // Only data may become the output: indices and updates are read after
  // data is copied into it.
  for (size_t k = 1; k < ctx.donatable.size(); ++k) ctx.donatable[k] = false;
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->raw() != data.raw() && data.byte_size() > 0) {
    DISTRT_RETURN_IF_ERROR(ctx.device->CopyWithin(y->raw(), data.raw(), data.byte_size()));
  }
  const int64_t n = idx.num_elements();
  if (n == 0) return OkStatus();
  cudaStream_t stream = CudaOf(ctx).cuda_stream();
  if (reduction == "add") {
    DISTRT_CUDA(cuda::LaunchScatterElementsAdd(data.dtype(), idx.dtype(), upd.raw(), idx.raw(),
                                               y->raw(), n, m, slot, stream),
                "scatter_elements kernel");
    return OkStatus();
  }
  Tensor winner;  // the last position per target element
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kI64, {data.num_elements()}, &winner));
  DISTRT_CUDA(cuda::LaunchScatterElements(DTypeSize(data.dtype()), idx.dtype(), upd.raw(),
                                          idx.raw(), static_cast<long long*>(winner.raw()),
                                          data.num_elements(), y->raw(), n, m, slot, stream),
              "scatter_elements kernel");
  return OkStatus();
}

// The host's OneHotShape.
Status OneHotView(const AttrReader& attrs, const TensorType& idx, const TensorType& values,
                  int64_t* outer, int64_t* depth, int64_t* inner, TensorType* out) {
  int64_t a, axis;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("depth", depth));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", -1, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(idx.shape.size()) + 1, &axis));
  if (*depth < 1) return InvalidArgumentError("one_hot depth must be positive, got ", *depth);
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError("one_hot indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  if (values.shape != Shape{2}) {
    return InvalidArgumentError("one_hot values must have 2 elements [off, on], got ",
                                values.ToString());
  }
  *outer = *inner = 1;
  for (size_t d = 0; d < idx.shape.size(); ++d) {
    (static_cast<int64_t>(d) < axis ? *outer : *inner) *= idx.shape[d];
  }
  out->dtype = values.dtype;
  out->shape = idx.shape;
  out->shape.insert(out->shape.begin() + axis, *depth);
  return OkStatus();
}

bool AcceptOneHot(const VerifyContext& v) {
  int64_t outer, depth, inner;
  TensorType out;
  return v.inputs.size() == 2 && v.outputs.size() == 1 &&
         OneHotView(v.attrs(), v.inputs[0], v.inputs[1], &outer, &depth, &inner, &out).ok() &&
         v.outputs[0] == out;
}

Status RunOneHot(KernelContext& ctx) {
  const Tensor &idx = ctx.input(0), &values = ctx.input(1);
  int64_t outer, depth, inner;
  TensorType out;
  DISTRT_RETURN_IF_ERROR(
      OneHotView(ctx.attrs(), idx.type(), values.type(), &outer, &depth, &inner, &out));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], out));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchOneHot(DTypeSize(values.dtype()), idx.dtype(), idx.raw(), values.raw(),
                                 y->raw(), outer, depth, inner, CudaOf(ctx).cuda_stream()),
              "one_hot kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaElementsKernels(KernelRegistry& r) {
  r.Add(CudaKernel("gather_elements", 2, 2, RunGatherElements, AllDTypes(),
                   AcceptGatherElements, false));
  // in_place_ok: the result may take over a dying data tensor (the kernel
  // refuses the other inputs' buffers itself).
  r.Add(CudaKernel("scatter_elements", 3, 3, RunScatterElements, AllDTypes(),
                   AcceptScatterElements, true));
  r.Add(CudaKernel("one_hot", 2, 2, RunOneHot, AllDTypes(), AcceptOneHot, false));
}

}  // namespace distrt

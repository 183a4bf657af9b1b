// CUDA kernels for data movement on every dtype: transpose, expand, slice
// (any non-zero steps), concat and pad (constant, reflect, edge) move
// elements by their bits (portable/layout.h); range (f32 f64 i64 i32 i16)
// computes them. Shapes and attributes are the host kernels'
// (kernels_shape.cpp); an instruction whose copy needs more than kMaxDims
// dims once size-1 dims are dropped and contiguous ones merged, and pad of
// an empty input in reflect/edge mode (the host's error), run on the host.
#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/device_errors.h"
#include "cuda/kernels_common.h"
#include "cuda/layout.h"
#include "kernel_util.h"

namespace distrt {
namespace {

using portable::CopyDim;
using portable::CopyMap;
using portable::PadMap;
using portable::PadMode;

Status Launch(const std::vector<CopyDim>& dims, int64_t src_base, int64_t dst_base, size_t elem,
              const void* src, void* dst, KernelContext& ctx, const char* what) {
  CopyMap map;
  size_t unit;
  if (!portable::MakeCopyMap(dims, src_base, dst_base, elem, src, dst, &map, &unit)) {
    return InternalError(what, ": the copy needs more than ", portable::kMaxDims, " dims");
  }
  DISTRT_CUDA(cuda::LaunchCopy(unit, src, dst, map, CudaOf(ctx).cuda_stream()), what);
  return OkStatus();
}

bool Fits(const std::vector<CopyDim>& dims, size_t elem) {
  CopyMap map;
  size_t unit;
  return portable::MakeCopyMap(dims, 0, 0, elem, nullptr, nullptr, &map, &unit);
}

// ---- transpose -------------------------------------------------------------------

// The copy of y = x.transpose(perm) (perm attribute, default: reversed dims).
Status TransposeDims(const AttrReader& attrs, const Shape& in, std::vector<CopyDim>* dims,
                     Shape* out) {
  std::vector<int64_t> perm;
  bool present;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("perm", &perm, &present));
  const int r = static_cast<int>(in.size());
  if (!present || perm.empty()) {
    perm.clear();
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  DISTRT_RETURN_IF_ERROR(CheckPerm(perm, r));
  const std::vector<int64_t> in_strides = Strides(in);
  out->clear();
  for (int64_t p : perm) out->push_back(in[static_cast<size_t>(p)]);
  const std::vector<int64_t> out_strides = Strides(*out);
  dims->clear();
  for (size_t k = 0; k < perm.size(); ++k)
    dims->push_back({(*out)[k], in_strides[static_cast<size_t>(perm[k])], out_strides[k]});
  return OkStatus();
}

bool AcceptTranspose(const VerifyContext& v) {
  std::vector<CopyDim> dims;
  Shape out;
  return v.inputs.size() == 1 && TransposeDims(v.attrs(), v.inputs[0].shape, &dims, &out).ok() &&
         Fits(dims, DTypeSize(v.inputs[0].dtype));
}

Status RunTranspose(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  std::vector<CopyDim> dims;
  Shape s;
  DISTRT_RETURN_IF_ERROR(TransposeDims(ctx.attrs(), x.shape(), &dims, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  return Launch(dims, 0, 0, DTypeSize(x.dtype()), x.raw(), y->raw(), ctx, "transpose kernel");
}

// ---- expand ----------------------------------------------------------------------

// The copy of x broadcast to `out` (false when it does not broadcast).
bool ExpandDims(const Shape& in, const Shape& out, std::vector<CopyDim>* dims) {
  if (in.size() > out.size()) return false;
  const size_t lead = out.size() - in.size();
  const std::vector<int64_t> in_strides = Strides(in), out_strides = Strides(out);
  dims->clear();
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t src = 0;
    if (d >= lead) {
      const int64_t e = in[d - lead];
      if (e != out[d] && e != 1) return false;
      src = e == 1 ? 0 : in_strides[d - lead];
    }
    dims->push_back({out[d], src, out_strides[d]});
  }
  return true;
}

bool AcceptExpand(const VerifyContext& v) {
  std::vector<CopyDim> dims;
  return v.inputs.size() == 1 && v.outputs.size() == 1 &&
         v.inputs[0].dtype == v.outputs[0].dtype &&
         ExpandDims(v.inputs[0].shape, v.outputs[0].shape, &dims) &&
         Fits(dims, DTypeSize(v.inputs[0].dtype));
}

Status RunExpand(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  std::vector<CopyDim> dims;
  if (!ExpandDims(x.shape(), ot.shape, &dims)) {
    return InvalidArgumentError("cannot expand ", x.type().ToString(), " to ", ot.ToString());
  }
  if (x.shape() == ot.shape) return ctx.SetOutput(0, x);  // as the host: no copy
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  return Launch(dims, 0, 0, DTypeSize(x.dtype()), x.raw(), y->raw(), ctx, "expand kernel");
}

// ---- slice -----------------------------------------------------------------------

// The copy of x[starts : ends : steps] into an output of shape `out` (the
// declared one, which the program's verification checked against the
// attributes).
Status SliceDims(const AttrReader& attrs, const Shape& in, const Shape& out,
                 std::vector<CopyDim>* dims, int64_t* base) {
  std::vector<int64_t> starts, steps;
  bool has_steps;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("starts", &starts));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("steps", &steps, &has_steps));
  const size_t r = in.size();
  if (!has_steps) steps.assign(r, 1);
  if (starts.size() != r || steps.size() != r || out.size() != r) {
    return InvalidArgumentError("slice needs starts/steps for each of the ", r, " dims");
  }
  const std::vector<int64_t> in_strides = Strides(in), out_strides = Strides(out);
  dims->clear();
  *base = 0;
  for (size_t d = 0; d < r; ++d) {
    if (steps[d] == 0) return InvalidArgumentError("slice step is 0 in dim ", d);
    if (out[d] > 0) *base += starts[d] * in_strides[d];
    dims->push_back({out[d], in_strides[d] * steps[d], out_strides[d]});
  }
  return OkStatus();
}

bool AcceptSlice(const VerifyContext& v) {
  std::vector<CopyDim> dims;
  int64_t base;
  return v.inputs.size() == 1 && v.outputs.size() == 1 &&
         SliceDims(v.attrs(), v.inputs[0].shape, v.outputs[0].shape, &dims, &base).ok() &&
         Fits(dims, DTypeSize(v.inputs[0].dtype));
}

Status RunSlice(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  std::vector<CopyDim> dims;
  int64_t base;
  DISTRT_RETURN_IF_ERROR(SliceDims(ctx.attrs(), x.shape(), ctx.output_types[0].shape, &dims,
                                   &base));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  return Launch(dims, base, 0, DTypeSize(x.dtype()), x.raw(), y->raw(), ctx, "slice kernel");
}

// ---- concat ----------------------------------------------------------------------

// Input k as [outer, its axis size * inner] into the output's rows at
// column `col` (elements): two dims, whatever the rank.
std::vector<CopyDim> ConcatDims(int64_t outer, int64_t row, int64_t out_row) {
  return {{outer, row, out_row}, {row, 1, 1}};
}

Status ConcatAxis(const AttrReader& attrs, int rank, int64_t* axis) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", &a));
  return NormalizeAxis(a, rank, axis);
}

bool AcceptConcat(const VerifyContext& v) {
  if (v.inputs.empty() || v.outputs.size() != 1) return false;
  int64_t axis;
  if (!ConcatAxis(v.attrs(), static_cast<int>(v.outputs[0].shape.size()), &axis).ok())
    return false;
  for (const TensorType& t : v.inputs)
    if (t.dtype != v.outputs[0].dtype || t.shape.size() != v.outputs[0].shape.size()) return false;
  return true;
}

Status RunConcat(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const TensorType& ot = ctx.output_types[0];
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(ConcatAxis(ctx.attrs(), static_cast<int>(ot.shape.size()), &axis));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ot.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) outer *= ot.shape[d];
    if (static_cast<int64_t>(d) > axis) inner *= ot.shape[d];
  }
  const int64_t out_row = ot.shape[static_cast<size_t>(axis)] * inner;
  int64_t col = 0;
  for (const Tensor* in : ctx.inputs) {  // shapes as verified at load; checked again here
    if (in->dtype() != ot.dtype || in->rank() != static_cast<int>(ot.shape.size()))
      return InvalidArgumentError("concat input ", in->type().ToString(), " does not match ",
                                  ot.ToString());
    col += in->dim(static_cast<int>(axis)) * inner;
  }
  if (col != out_row) {
    return InvalidArgumentError("concat inputs give ", col / std::max<int64_t>(inner, 1),
                                " along axis ", axis, ", the output has ",
                                ot.shape[static_cast<size_t>(axis)]);
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  const size_t elem = DTypeSize(ot.dtype);
  col = 0;
  for (const Tensor* in : ctx.inputs) {
    const int64_t row = in->dim(static_cast<int>(axis)) * inner;
    if (row > 0 && outer > 0) {
      DISTRT_RETURN_IF_ERROR(Launch(ConcatDims(outer, row, out_row), 0, col, elem, in->raw(),
                                    y->raw(), ctx, "concat kernel"));
    }
    col += row;
  }
  return OkStatus();
}

// ---- pad -------------------------------------------------------------------------

Status PadMapOf(const AttrReader& attrs, const Shape& in, const Shape& out, PadMap* map) {
  std::vector<int64_t> pads;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("pads", &pads));
  std::string m;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("mode", "constant", &m));
  *map = PadMap();
  if (m == "constant") {
    map->mode = PadMode::kConstant;
  } else if (m == "reflect") {
    map->mode = PadMode::kReflect;
  } else if (m == "edge") {
    map->mode = PadMode::kEdge;
  } else {
    return InvalidArgumentError("pad mode must be constant, reflect or edge, got '", m, "'");
  }
  const size_t r = in.size();
  if (pads.size() != 2 * r || out.size() != r || r > static_cast<size_t>(portable::kMaxDims)) {
    return InvalidArgumentError("pad: ", pads.size(), " pads for rank ", r, " (at most ",
                                portable::kMaxDims, " dims on the device)");
  }
  const std::vector<int64_t> strides = Strides(in);
  map->rank = static_cast<int>(r);
  for (size_t d = 0; d < r; ++d) {
    if (out[d] != in[d] + pads[d] + pads[d + r])
      return InvalidArgumentError("pad: output dim ", d, " is ", out[d], ", the pads give ",
                                  in[d] + pads[d] + pads[d + r]);
    map->out_dims[d] = out[d];
    map->in_dims[d] = in[d];
    map->in_strides[d] = strides[d];
    map->begin[d] = pads[d];
  }
  return OkStatus();
}

bool AcceptPad(const VerifyContext& v) {
  if (v.inputs.size() != 1 || v.outputs.size() != 1) return false;
  PadMap map;
  if (!PadMapOf(v.attrs(), v.inputs[0].shape, v.outputs[0].shape, &map).ok()) return false;
  // reflect/edge of nothing is the host kernel's error to report.
  return map.mode == PadMode::kConstant || NumElements(v.inputs[0].shape) > 0 ||
         NumElements(v.outputs[0].shape) == 0;
}

Status RunPad(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx));
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  PadMap map;
  DISTRT_RETURN_IF_ERROR(PadMapOf(ctx.attrs(), x.shape(), ot.shape, &map));
  if (map.mode != PadMode::kConstant && x.num_elements() == 0 && NumElements(ot.shape) > 0)
    return InvalidArgumentError("pad mode ", map.mode == PadMode::kEdge ? "edge" : "reflect",
                                " needs a non-empty input");
  double value;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("value", 0.0, &value));
  uint8_t fill[8] = {0};  // the value as the element type, as the host converts it
  DISTRT_RETURN_IF_ERROR(CastBuffer(&value, DType::kF64, fill, x.dtype(), 1));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchPad(DTypeSize(x.dtype()), x.raw(), y->raw(), fill, map,
                              y->num_elements(), CudaOf(ctx).cuda_stream()),
              "pad kernel");
  return OkStatus();
}

// ---- range -----------------------------------------------------------------------

uint32_t RangeDTypes() {
  return DTypeMask({DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kI16});
}

bool AcceptRange(const VerifyContext& v) {
  if (v.inputs.size() != 3 || v.outputs.size() != 1) return false;
  const DType t = v.inputs[0].dtype;
  for (const TensorType& in : v.inputs)
    if (in.dtype != t || NumElements(in.shape) != 1) return false;
  return (RangeDTypes() & DTypeMask({t})) != 0 && v.outputs[0].dtype == t &&
         v.outputs[0].shape.size() == 1;
}

// The length comes from the declared output: start/limit/delta live on the
// device, and reading them here would synchronise. The body checks that
// they give that length (and a non-zero delta), as the host kernel does,
// through the device error slot.
Status RunRange(KernelContext& ctx) {
  portable::ErrorSlot* slot;
  DISTRT_RETURN_IF_ERROR(CheckDeviceErrors(ctx, &slot));
  const DType t = ctx.input(0).dtype();
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).num_elements() != 1 || ctx.input(i).dtype() != t) {
      return InvalidArgumentError("range needs three scalars of one dtype, input ", i, " is ",
                                  ctx.input(i).type().ToString());
    }
  }
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  DISTRT_CUDA(cuda::LaunchRange(t, ctx.input(0).raw(), ctx.input(1).raw(), ctx.input(2).raw(),
                                y->raw(), y->num_elements(), slot, CudaOf(ctx).cuda_stream()),
              "range kernel");
  return OkStatus();
}

}  // namespace

void RegisterCudaLayoutKernels(KernelRegistry& r) {
  // Outputs read other positions of the input: never in place.
  r.Add(CudaKernel("transpose", 1, 1, RunTranspose, AllDTypes(), AcceptTranspose, false));
  r.Add(CudaKernel("expand", 1, 1, RunExpand, AllDTypes(), AcceptExpand, false));
  r.Add(CudaKernel("slice", 1, 1, RunSlice, AllDTypes(), AcceptSlice, false));
  r.Add(CudaKernel("concat", 1, -1, RunConcat, AllDTypes(), AcceptConcat, false));
  r.Add(CudaKernel("pad", 1, 1, RunPad, AllDTypes(), AcceptPad, false));
  r.Add(CudaKernel("range", 3, 3, RunRange, RangeDTypes(), AcceptRange, false));
}

}  // namespace distrt

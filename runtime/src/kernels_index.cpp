// gather (ONNX Gather): take slices of `data` along `axis` at `indices`.
#include "kernel_util.h"

namespace distrt {
namespace {

Status GatherShape(const AttrReader& attrs, const TensorType& data, const TensorType& idx,
                   int64_t* axis, TensorType* out) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(data.shape.size()), axis));
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError("gather indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  out->dtype = data.dtype;
  out->shape.assign(data.shape.begin(), data.shape.begin() + *axis);
  out->shape.insert(out->shape.end(), idx.shape.begin(), idx.shape.end());
  out->shape.insert(out->shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  return OkStatus();
}

Status VerifyGather(const VerifyContext& ctx) {
  int64_t axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(GatherShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], &axis, &t));
  return CheckOutputType(ctx.outputs[0], t);
}

template <typename I>
Status ResolveIndices(const I* idx, int64_t n, int64_t dim, std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = static_cast<int64_t>(idx[i]);
    if (v < -dim || v >= dim) {
      return OutOfRangeError("gather index ", v, " (at position ", i,
                             ") is out of range for an axis of size ", dim);
    }
    (*out)[static_cast<size_t>(i)] = v < 0 ? v + dim : v;
  }
  return OkStatus();
}

Status RunGather(KernelContext& ctx) {
  const HostTensor &data = ctx.input(0), &idx = ctx.input(1);
  int64_t axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(GatherShape(ctx.attrs(), data.type(), idx.type(), &axis, &t));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], t));
  const int64_t dim = data.dim(static_cast<int>(axis));
  std::vector<int64_t> ids;
  if (idx.dtype() == DType::kI64) {
    DISTRT_RETURN_IF_ERROR(ResolveIndices(idx.data<int64_t>(), idx.num_elements(), dim, &ids));
  } else {
    DISTRT_RETURN_IF_ERROR(ResolveIndices(idx.data<int32_t>(), idx.num_elements(), dim, &ids));
  }
  HostTensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < data.rank(); ++i) {
    if (i < axis) outer *= data.dim(i);
    if (i > axis) inner *= data.dim(i);
  }
  const size_t chunk = static_cast<size_t>(inner) * DTypeSize(data.dtype());
  const int64_t n = static_cast<int64_t>(ids.size());
  const uint8_t* src = data.data<uint8_t>();
  uint8_t* dst = out->data<uint8_t>();
  if (chunk == 0) return OkStatus();
  int64_t grain = std::max<int64_t>(1, (kElementwiseGrain * 4) / static_cast<int64_t>(chunk));
  ParallelFor(ctx.pool, outer * n, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / n, i = t % n;
      std::memcpy(dst + static_cast<size_t>(t) * chunk,
                  src + static_cast<size_t>(o * dim + ids[static_cast<size_t>(i)]) * chunk, chunk);
    }
  });
  return OkStatus();
}

}  // namespace

void RegisterIndexKernels(KernelRegistry& r) {
  r.Add({"gather", 2, 2, 1, RunGather, VerifyGather});
}

}  // namespace distrt

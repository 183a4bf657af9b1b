// gather (ONNX Gather): take slices of `data` along `axis` at `indices`;
// scatter_add, its gradient: add slices of `updates` into `base` there.
#include <algorithm>

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
Status ResolveIndices(const char* op, const I* idx, int64_t n, int64_t dim,
                      std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = static_cast<int64_t>(idx[i]);
    if (v < -dim || v >= dim) {
      return OutOfRangeError(op, " index ", v, " (at position ", i,
                             ") is out of range for an axis of size ", dim);
    }
    (*out)[static_cast<size_t>(i)] = v < 0 ? v + dim : v;
  }
  return OkStatus();
}

// Indices of either integer dtype, normalised to [0, dim).
Status ReadIndices(const char* op, const Tensor& idx, int64_t dim, std::vector<int64_t>* out) {
  if (idx.dtype() == DType::kI64) {
    return ResolveIndices(op, idx.data<int64_t>(), idx.num_elements(), dim, out);
  }
  return ResolveIndices(op, idx.data<int32_t>(), idx.num_elements(), dim, out);
}

Status RunGather(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  int64_t axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(GatherShape(ctx.attrs(), data.type(), idx.type(), &axis, &t));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], t));
  const int64_t dim = data.dim(static_cast<int>(axis));
  std::vector<int64_t> ids;
  DISTRT_RETURN_IF_ERROR(ReadIndices("gather", idx, dim, &ids));
  Tensor* out;
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

// ---- scatter_add ---------------------------------------------------------------

// base [.., D, ..] (D at `axis`), updates = gather(base, indices)'s shape.
Status ScatterAddShape(const AttrReader& attrs, const TensorType& base, const TensorType& idx,
                       const TensorType& updates, int64_t* axis) {
  TensorType want;
  DISTRT_RETURN_IF_ERROR(GatherShape(attrs, base, idx, axis, &want));
  if (updates != want) {
    return InvalidArgumentError("scatter_add updates are ", updates.ToString(), ", expected ",
                                want.ToString(), " (the shape gather of base ", base.ToString(),
                                " at indices ", idx.ToString(), " would have)");
  }
  return OkStatus();
}

Status VerifyScatterAdd(const VerifyContext& ctx) {
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(
      ScatterAddShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], &axis));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// dst[i] += src[i]: wrapping for integers, rounded once per addition for
// the 16-bit floats (as a sequence of f16 additions would be).
template <typename T>
void AddRow(T* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = portable::Store<T>(WrapAdd(portable::Load(dst[i]), portable::Load(src[i])));
  }
}

// out = base viewed as [outer, dim, inner], updates as [outer, n, inner]:
// out[o, ids[j], :] += updates[o, j, :] for j in order. Every element sums
// its updates in index order whatever the split, so the result does not
// depend on the thread count.
template <typename T>
void ScatterAdd(const T* upd, const std::vector<int64_t>& ids, int64_t outer, int64_t dim,
                int64_t inner, T* out, ThreadPool* pool) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n == 0 || inner == 0 || outer == 0) return;
  const int threads = pool ? pool->size() : 1;
  // Wide rows (an embedding table's D): threads take column blocks, so
  // repeated ids never race.
  if (threads == 1 || inner >= 64 * threads) {
    const int64_t grain = std::max<int64_t>(64, kElementwiseGrain / std::max<int64_t>(1, n));
    ParallelFor(pool, inner, grain, [&](int64_t c0, int64_t c1) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < n; ++j) {
          AddRow(out + (o * dim + ids[static_cast<size_t>(j)]) * inner + c0,
                 upd + (o * n + j) * inner + c0, c1 - c0);
        }
      }
    });
    return;
  }
  // Narrow rows: group the positions by destination row (counting sort,
  // stable, so each row still adds in index order) and split the rows.
  std::vector<int64_t> start(static_cast<size_t>(dim) + 1, 0), order(static_cast<size_t>(n));
  for (int64_t id : ids) ++start[static_cast<size_t>(id) + 1];
  for (int64_t d = 0; d < dim; ++d) start[d + 1] += start[d];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t j = 0; j < n; ++j) order[fill[ids[j]]++] = j;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  ParallelFor(pool, outer * dim, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / dim, d = r % dim;
      for (int64_t k = start[d]; k < start[d + 1]; ++k) {
        AddRow(out + r * inner, upd + (o * n + order[k]) * inner, inner);
      }
    }
  });
}

Status RunScatterAdd(KernelContext& ctx) {
  const Tensor &base = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(ScatterAddShape(ctx.attrs(), base.type(), idx.type(), upd.type(), &axis));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], base.type()));
  const int64_t dim = base.dim(static_cast<int>(axis));
  std::vector<int64_t> ids;
  DISTRT_RETURN_IF_ERROR(ReadIndices("scatter_add", idx, dim, &ids));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < base.rank(); ++i) {
    if (i < axis) outer *= base.dim(i);
    if (i > axis) inner *= base.dim(i);
  }
  // Only base may become the output: updates is read while it is written.
  if (ctx.donatable.size() > 2) ctx.donatable[2] = false;
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const size_t bytes = base.byte_size();
  if (bytes > 0 && out->raw() != base.raw()) {
    const int64_t chunk = kElementwiseGrain * 8;  // bytes per task
    ParallelFor(ctx.pool, static_cast<int64_t>(bytes), chunk, [&](int64_t b0, int64_t b1) {
      std::memcpy(out->data<uint8_t>() + b0, base.data<uint8_t>() + b0,
                  static_cast<size_t>(b1 - b0));
    });
  }
  switch (base.dtype()) {
    DISTRT_FLOAT_CASES_(ScatterAdd(upd.data<T>(), ids, outer, dim, inner, out->data<T>(), ctx.pool))
    DISTRT_INT_CASES_(ScatterAdd(upd.data<T>(), ids, outer, dim, inner, out->data<T>(), ctx.pool))
    DISTRT_HALF_CASES_(ScatterAdd(upd.data<T>(), ids, outer, dim, inner, out->data<T>(), ctx.pool))
    DISTRT_UNSUPPORTED_(base.dtype(), "scatter_add")
  }
  return OkStatus();
}

}  // namespace

void RegisterIndexKernels(KernelRegistry& r) {
  KernelDef gather{"gather", 2, 2, 1, RunGather, VerifyGather};
  gather.half_native = true;  // copies rows by bytes
  r.Add(gather);
  // in_place_ok: the result may take over a dying base (the kernel refuses
  // the updates' buffer itself), saving a table-sized copy.
  // half_native: it adds bf16/f16 rows itself (each add rounded to the
  // storage dtype, as the device body does).
  KernelDef scatter_add{"scatter_add", 3, 3, 1, RunScatterAdd, VerifyScatterAdd, false, true};
  scatter_add.half_native = true;
  r.Add(scatter_add);
}

}  // namespace distrt

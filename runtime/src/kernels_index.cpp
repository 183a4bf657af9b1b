// gather (ONNX Gather): take slices of `data` along `axis` at `indices`;
// scatter_add, its gradient: add slices of `updates` into `base` there.
// gather_elements / scatter_elements (ONNX GatherElements /
// ScatterElements): one element per index, indices of data's rank;
// gather_nd / scatter_nd (ONNX GatherND / ScatterND): slices at index
// tuples; one_hot (ONNX OneHot).
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

// ---- gather_elements, scatter_elements ------------------------------------------

// indices of data's rank, no longer than data outside `axis`.
Status ElementsShape(const char* op, const AttrReader& attrs, const TensorType& data,
                     const TensorType& idx, int64_t* axis) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(data.shape.size()), axis));
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError(op, " indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  if (idx.shape.size() != data.shape.size()) {
    return InvalidArgumentError(op, " indices ", idx.ToString(), " must have the rank of data ",
                                data.ToString());
  }
  for (size_t d = 0; d < data.shape.size(); ++d) {
    if (static_cast<int64_t>(d) != *axis && idx.shape[d] > data.shape[d]) {
      return InvalidArgumentError(op, " indices ", idx.ToString(), " exceed data ",
                                  data.ToString(), " in dimension ", d);
    }
  }
  return OkStatus();
}

// For every position of the indices (row-major), the offset of the data
// element it addresses: its own coordinates, with the index at `axis`.
Status ElementOffsets(const char* op, const Tensor& data, const Tensor& idx, int64_t axis,
                      std::vector<int64_t>* out) {
  const int rank = data.rank();
  std::vector<int64_t> ids;
  DISTRT_RETURN_IF_ERROR(ReadIndices(op, idx, data.dim(static_cast<int>(axis)), &ids));
  std::vector<int64_t> stride(static_cast<size_t>(rank), 1), coord(static_cast<size_t>(rank), 0);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * data.dim(d + 1);
  out->resize(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += (d == axis ? ids[t] : coord[d]) * stride[d];
    (*out)[t] = off;
    for (int d = rank - 1; d >= 0 && ++coord[d] == idx.dim(d); --d) coord[d] = 0;
  }
  return OkStatus();
}

Status VerifyGatherElements(const VerifyContext& ctx) {
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(
      ElementsShape("gather_elements", ctx.attrs(), ctx.inputs[0], ctx.inputs[1], &axis));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, ctx.inputs[1].shape});
}

Status RunGatherElements(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(
      ElementsShape("gather_elements", ctx.attrs(), data.type(), idx.type(), &axis));
  DISTRT_RETURN_IF_ERROR(
      CheckOutputType(ctx.output_types[0], TensorType{data.dtype(), idx.shape()}));
  std::vector<int64_t> offsets;
  DISTRT_RETURN_IF_ERROR(ElementOffsets("gather_elements", data, idx, axis, &offsets));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const size_t size = DTypeSize(data.dtype());
  const uint8_t* src = data.data<uint8_t>();
  uint8_t* dst = out->data<uint8_t>();
  for (size_t t = 0; t < offsets.size(); ++t) {
    std::memcpy(dst + t * size, src + static_cast<size_t>(offsets[t]) * size, size);
  }
  return OkStatus();
}

Status VerifyScatterElements(const VerifyContext& ctx) {
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(
      ElementsShape("scatter_elements", ctx.attrs(), ctx.inputs[0], ctx.inputs[1], &axis));
  if (ctx.inputs[2] != TensorType{ctx.inputs[0].dtype, ctx.inputs[1].shape}) {
    return InvalidArgumentError("scatter_elements updates are ", ctx.inputs[2].ToString(),
                                ", expected the indices' shape and data's dtype");
  }
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// out[offsets[t]] = combine(out[offsets[t]], upd[t]) in index order, so
// repeated indices combine deterministically.
template <typename T>
void ScatterCombine(const T* upd, const std::vector<int64_t>& offsets, const std::string& r,
                    T* out) {
  for (size_t t = 0; t < offsets.size(); ++t) {
    T& e = out[offsets[t]];
    auto a = portable::Load(e), b = portable::Load(upd[t]);
    if (r == "add") {
      e = portable::Store<T>(WrapAdd(a, b));
    } else if (r == "mul") {
      e = portable::Store<T>(WrapMul(a, b));
    } else if (r == "max") {
      e = portable::Store<T>(a < b ? b : a);
    } else {
      e = portable::Store<T>(b < a ? b : a);
    }
  }
}

Status RunScatterElements(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(
      ElementsShape("scatter_elements", ctx.attrs(), data.type(), idx.type(), &axis));
  if (upd.type() != TensorType{data.dtype(), idx.shape()}) {
    return InvalidArgumentError("scatter_elements updates are ", upd.type().ToString(),
                                ", expected the indices' shape and data's dtype");
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], data.type()));
  std::string reduction;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetString("reduction", "none", &reduction));
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    return InvalidArgumentError("scatter_elements reduction must be none, add, mul, max or min, "
                                "got '", reduction, "'");
  }
  std::vector<int64_t> offsets;
  DISTRT_RETURN_IF_ERROR(ElementOffsets("scatter_elements", data, idx, axis, &offsets));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (data.byte_size() > 0) std::memcpy(out->raw(), data.raw(), data.byte_size());
  if (reduction == "none") {
    const size_t size = DTypeSize(data.dtype());
    for (size_t t = 0; t < offsets.size(); ++t) {
      std::memcpy(out->data<uint8_t>() + static_cast<size_t>(offsets[t]) * size,
                  upd.data<uint8_t>() + t * size, size);
    }
    return OkStatus();
  }
  switch (data.dtype()) {
    DISTRT_FLOAT_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_INT_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_HALF_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_UNSUPPORTED_(data.dtype(), "scatter_elements")
  }
  return OkStatus();
}

// ---- gather_nd, scatter_nd ------------------------------------------------------

// The geometry of index tuples (ONNX GatherND/ScatterND): indices
// [B.., I.., k] address data [B.., D1..Dk, S..] (B: `batch_dims` shared
// dimensions); every tuple picks a slice of `slice` elements.
struct TupleGeometry {
  int64_t batch_dims = 0, k = 0;
  int64_t slice = 1;  // elements per picked slice: prod(S..)
  Shape result;       // indices.shape[:-1] + S..
};

Status TupleShape(const char* op, const TensorType& data, const TensorType& idx,
                  int64_t batch_dims, TupleGeometry* g) {
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError(op, " indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(idx.shape.size());
  if (q < 1 || batch_dims < 0 || batch_dims >= std::min(q, r)) {
    return InvalidArgumentError(op, " batch_dims ", batch_dims, " must be below the ranks of data ",
                                data.ToString(), " and indices ", idx.ToString());
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data.shape[d] != idx.shape[d]) {
      return InvalidArgumentError(op, " data ", data.ToString(), " and indices ", idx.ToString(),
                                  " differ in batch dimension ", d);
    }
  }
  g->batch_dims = batch_dims;
  g->k = idx.shape.back();
  if (g->k < 1 || g->k > r - batch_dims) {
    return InvalidArgumentError(op, " index tuples of length ", g->k, " do not fit data ",
                                data.ToString());
  }
  g->result.assign(idx.shape.begin(), idx.shape.end() - 1);
  g->slice = 1;
  for (int64_t d = batch_dims + g->k; d < r; ++d) {
    g->result.push_back(data.shape[d]);
    g->slice *= data.shape[d];
  }
  return OkStatus();
}

// The data offset (in elements) of every tuple's slice, in the tuples'
// row-major order; indices may be negative (counting from the end).
Status TupleOffsets(const char* op, const Tensor& data, const Tensor& idx, const TupleGeometry& g,
                    std::vector<int64_t>* out) {
  const int64_t b = g.batch_dims, k = g.k;
  int64_t batches = 1, batch_stride = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dim(static_cast<int>(d));
  for (int d = static_cast<int>(b); d < data.rank(); ++d) batch_stride *= data.dim(d);
  std::vector<int64_t> stride(static_cast<size_t>(k));
  for (int64_t j = k - 1, s = g.slice; j >= 0; --j) {
    stride[j] = s;
    s *= data.dim(static_cast<int>(b + j));
  }
  const int64_t tuples = idx.num_elements() / k;
  const int64_t per_batch = batches ? tuples / batches : 0;
  out->resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch ? (t / per_batch) * batch_stride : 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = data.dim(static_cast<int>(b + j));
      int64_t v = idx.dtype() == DType::kI64 ? idx.data<int64_t>()[t * k + j]
                                             : idx.data<int32_t>()[t * k + j];
      if (v < -dim || v >= dim) {
        return OutOfRangeError(op, " index ", v, " (tuple ", t, ", entry ", j,
                               ") is out of range for a dimension of size ", dim);
      }
      off += (v < 0 ? v + dim : v) * stride[j];
    }
    (*out)[t] = off;
  }
  return OkStatus();
}

Status VerifyGatherND(const VerifyContext& ctx) {
  int64_t b;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("batch_dims", 0, &b));
  TupleGeometry g;
  DISTRT_RETURN_IF_ERROR(TupleShape("gather_nd", ctx.inputs[0], ctx.inputs[1], b, &g));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, g.result});
}

Status RunGatherND(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1);
  int64_t b;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("batch_dims", 0, &b));
  TupleGeometry g;
  DISTRT_RETURN_IF_ERROR(TupleShape("gather_nd", data.type(), idx.type(), b, &g));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{data.dtype(), g.result}));
  std::vector<int64_t> offsets;
  DISTRT_RETURN_IF_ERROR(TupleOffsets("gather_nd", data, idx, g, &offsets));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const size_t bytes = DTypeSize(data.dtype()) * static_cast<size_t>(g.slice);
  const size_t size = DTypeSize(data.dtype());
  for (size_t t = 0; t < offsets.size(); ++t) {
    std::memcpy(out->data<uint8_t>() + t * bytes,
                data.data<uint8_t>() + static_cast<size_t>(offsets[t]) * size, bytes);
  }
  return OkStatus();
}

Status VerifyScatterND(const VerifyContext& ctx) {
  TupleGeometry g;
  DISTRT_RETURN_IF_ERROR(TupleShape("scatter_nd", ctx.inputs[0], ctx.inputs[1], 0, &g));
  if (ctx.inputs[2] != TensorType{ctx.inputs[0].dtype, g.result}) {
    return InvalidArgumentError("scatter_nd updates are ", ctx.inputs[2].ToString(), ", expected ",
                                TensorType{ctx.inputs[0].dtype, g.result}.ToString());
  }
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

Status RunScatterND(KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &upd = ctx.input(2);
  TupleGeometry g;
  DISTRT_RETURN_IF_ERROR(TupleShape("scatter_nd", data.type(), idx.type(), 0, &g));
  if (upd.type() != TensorType{data.dtype(), g.result}) {
    return InvalidArgumentError("scatter_nd updates are ", upd.type().ToString(), ", expected ",
                                TensorType{data.dtype(), g.result}.ToString());
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], data.type()));
  std::string reduction;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetString("reduction", "none", &reduction));
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    return InvalidArgumentError("scatter_nd reduction must be none, add, mul, max or min, got '",
                                reduction, "'");
  }
  std::vector<int64_t> slices;
  DISTRT_RETURN_IF_ERROR(TupleOffsets("scatter_nd", data, idx, g, &slices));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (data.byte_size() > 0) std::memcpy(out->raw(), data.raw(), data.byte_size());
  const size_t size = DTypeSize(data.dtype());
  if (reduction == "none") {
    for (size_t t = 0; t < slices.size(); ++t) {
      std::memcpy(out->data<uint8_t>() + static_cast<size_t>(slices[t]) * size,
                  upd.data<uint8_t>() + t * size * static_cast<size_t>(g.slice),
                  size * static_cast<size_t>(g.slice));
    }
    return OkStatus();
  }
  // Element by element, in tuple order: what ScatterCombine does for
  // single elements.
  std::vector<int64_t> offsets;
  offsets.reserve(slices.size() * static_cast<size_t>(g.slice));
  for (int64_t s : slices) {
    for (int64_t e = 0; e < g.slice; ++e) offsets.push_back(s + e);
  }
  switch (data.dtype()) {
    DISTRT_FLOAT_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_INT_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_HALF_CASES_(ScatterCombine(upd.data<T>(), offsets, reduction, out->data<T>()))
    DISTRT_UNSUPPORTED_(data.dtype(), "scatter_nd")
  }
  return OkStatus();
}

// ---- one_hot -----------------------------------------------------------------------

Status OneHotShape(const AttrReader& attrs, const TensorType& idx, const TensorType& values,
                   int64_t* depth, int64_t* axis, TensorType* out) {
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("depth", depth));
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", -1, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(idx.shape.size()) + 1, axis));
  if (*depth < 1) return InvalidArgumentError("one_hot depth must be positive, got ", *depth);
  if (idx.dtype != DType::kI64 && idx.dtype != DType::kI32) {
    return InvalidArgumentError("one_hot indices must be i64 or i32, got ", DTypeName(idx.dtype));
  }
  if (values.shape != Shape{2}) {
    return InvalidArgumentError("one_hot values must have 2 elements [off, on], got ",
                                values.ToString());
  }
  out->dtype = values.dtype;
  out->shape = idx.shape;
  out->shape.insert(out->shape.begin() + *axis, *depth);
  return OkStatus();
}

Status VerifyOneHot(const VerifyContext& ctx) {
  int64_t depth, axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(OneHotShape(ctx.attrs(), ctx.inputs[0], ctx.inputs[1], &depth, &axis, &t));
  return CheckOutputType(ctx.outputs[0], t);
}

Status RunOneHot(KernelContext& ctx) {
  const Tensor &idx = ctx.input(0), &values = ctx.input(1);
  int64_t depth, axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(OneHotShape(ctx.attrs(), idx.type(), values.type(), &depth, &axis, &t));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], t));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  // The output viewed as [outer, depth, inner], the indices as [outer, inner].
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < idx.rank(); ++d) (d < axis ? outer : inner) *= idx.dim(d);
  const size_t size = DTypeSize(values.dtype());
  const uint8_t *off = values.data<uint8_t>(), *on = off + size;
  uint8_t* dst = out->data<uint8_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = idx.dtype() == DType::kI64 ? idx.data<int64_t>()[o * inner + i]
                                             : idx.data<int32_t>()[o * inner + i];
      if (v < 0) v += depth;  // out of [-depth, depth): a row of `off`
      for (int64_t k = 0; k < depth; ++k) {
        std::memcpy(dst + static_cast<size_t>((o * depth + k) * inner + i) * size,
                    k == v ? on : off, size);
      }
    }
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
  r.Add({"gather_elements", 2, 2, 1, RunGatherElements, VerifyGatherElements});
  r.Add({"scatter_elements", 3, 3, 1, RunScatterElements, VerifyScatterElements});
  r.Add({"one_hot", 2, 2, 1, RunOneHot, VerifyOneHot});
  KernelDef gather_nd{"gather_nd", 2, 2, 1, RunGatherND, VerifyGatherND};
  gather_nd.half_native = true;  // copies slices by bytes
  r.Add(gather_nd);
  KernelDef scatter_nd{"scatter_nd", 3, 3, 1, RunScatterND, VerifyScatterND};
  scatter_nd.half_native = true;  // combines bf16/f16 itself, as scatter_elements
  r.Add(scatter_nd);
}

}  // namespace distrt

// Data movement on any dtype (by bytes): transpose, reshape, expand, concat,
// slice, pad; and range.
#include <algorithm>
#include <cmath>

#include "kernel_util.h"

namespace distrt {

// ---- transpose (shared) --------------------------------------------------------

Status CheckPerm(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank) {
    return InvalidArgumentError("perm has ", perm.size(), " entries for rank ", rank);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return InvalidArgumentError("perm is not a permutation of 0..", rank - 1);
    }
    seen[static_cast<size_t>(p)] = true;
  }
  return OkStatus();
}

namespace {

// Copies rows described by `plan` (one operand: the source strides) into a
// contiguous destination, starting at source element `base`.
void GatherRows(const uint8_t* src, int64_t base, const BroadcastPlan& plan, size_t elem,
                uint8_t* dst, ThreadPool* pool) {
  const int64_t inner = plan.inner;
  const int64_t s = plan.strides[0].back();
  const size_t row_bytes = static_cast<size_t>(inner) * elem;
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner));
  ParallelFor(pool, plan.rows, grain, [&](int64_t r0, int64_t r1) {
    ForEachRow(plan, r0, r1, [&](int64_t r, const int64_t* off) {
      const uint8_t* in = src + static_cast<size_t>(base + off[0]) * elem;
      uint8_t* out = dst + static_cast<size_t>(r) * row_bytes;
      if (s == 1) {
        std::memcpy(out, in, row_bytes);
      } else if (s == 0) {  // one value repeated (a broadcast of a size-1 dim)
        switch (elem) {  // constant sizes: the copies inline and vectorise
          case 1:
            std::memset(out, in[0], static_cast<size_t>(inner));
            break;
          case 2:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 2 * i, in, 2);
            break;
          case 4:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 4 * i, in, 4);
            break;
          case 8:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 8 * i, in, 8);
            break;
          default:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + i * elem, in, elem);
        }
      } else {
        switch (elem) {
          case 1:
            for (int64_t i = 0; i < inner; ++i) out[i] = in[i * s];
            break;
          case 2:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 2 * i, in + 2 * i * s, 2);
            break;
          case 4:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 4 * i, in + 4 * i * s, 4);
            break;
          case 8:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(out + 8 * i, in + 8 * i * s, 8);
            break;
          default:
            for (int64_t i = 0; i < inner; ++i) {
              std::memcpy(out + i * elem, in + i * s * static_cast<int64_t>(elem), elem);
            }
        }
      }
    });
  });
}

// A one-operand plan for GatherRows, built dim by dim (outer first): a dim
// whose rows continue the previous dim's merges into it.
struct GatherPlan {
  BroadcastPlan plan;
  GatherPlan() { plan.strides.resize(1); }
  void AddDim(int64_t extent, int64_t stride) {
    if (!plan.dims.empty() && plan.strides[0].back() == stride * extent) {
      plan.dims.back() *= extent;
      plan.strides[0].back() = stride;
    } else {
      plan.dims.push_back(extent);
      plan.strides[0].push_back(stride);
    }
  }
  const BroadcastPlan& Finish() {
    if (plan.dims.empty()) AddDim(1, 1);
    plan.inner = plan.dims.back();
    plan.rows = 1;
    for (size_t d = 0; d + 1 < plan.dims.size(); ++d) plan.rows *= plan.dims[d];
    plan.total = plan.rows * plan.inner;
    return plan;
  }
};

// A transpose that moves the input's innermost dimension away from the
// output's innermost one: reading whole output rows would stride through
// the input one element per cache line. Instead copy square tiles, each
// read and written within the cache: output dim `j` (input stride 1) and
// the output's last dim (input stride `sl`), for every index of the other
// (outer) output dims.
template <typename T>
void TiledTranspose(const T* x, T* y, const std::vector<int64_t>& extents,
                    const std::vector<int64_t>& in_strides, size_t j, ThreadPool* pool) {
  constexpr int64_t kTile = 32;
  const size_t k = extents.size();
  std::vector<int64_t> out_strides(k, 1);
  for (size_t d = k - 1; d-- > 0;) out_strides[d] = out_strides[d + 1] * extents[d + 1];
  std::vector<size_t> outer;
  int64_t outer_count = 1;
  for (size_t d = 0; d + 1 < k; ++d) {
    if (d == j) continue;
    outer.push_back(d);
    outer_count *= extents[d];
  }
  const int64_t ej = extents[j], oj = out_strides[j];
  const int64_t el = extents[k - 1], sl = in_strides[k - 1];
  const int64_t jtiles = (ej + kTile - 1) / kTile;
  ParallelFor(pool, outer_count * jtiles, std::max<int64_t>(1, kElementwiseGrain / (kTile * el)),
              [&](int64_t b0, int64_t b1) {
                for (int64_t b = b0; b < b1; ++b) {
                  int64_t rest = b / jtiles, in_base = 0, out_base = 0;
                  for (size_t q = outer.size(); q-- > 0;) {
                    const size_t d = outer[q];
                    const int64_t i = rest % extents[d];
                    rest /= extents[d];
                    in_base += i * in_strides[d];
                    out_base += i * out_strides[d];
                  }
                  const int64_t j0 = (b % jtiles) * kTile, j1 = std::min(ej, j0 + kTile);
                  for (int64_t l0 = 0; l0 < el; l0 += kTile) {
                    const int64_t l1 = std::min(el, l0 + kTile);
                    for (int64_t jj = j0; jj < j1; ++jj) {
                      const T* in = x + in_base + jj;
                      T* out = y + out_base + jj * oj;
                      for (int64_t ll = l0; ll < l1; ++ll) out[ll] = in[ll * sl];
                    }
                  }
                }
              });
}

}  // namespace

void TransposeBytes(const uint8_t* x, const Shape& shape, const std::vector<int64_t>& perm,
                    size_t elem, uint8_t* y, ThreadPool* pool) {
  const size_t r = shape.size();
  if (NumElements(shape) == 0) return;
  // Drop size-1 dims, then merge runs of output dims that are consecutive
  // input dims.
  std::vector<int64_t> new_index(r, -1);
  Shape kept;
  for (size_t i = 0; i < r; ++i) {
    if (shape[i] != 1) {
      new_index[i] = static_cast<int64_t>(kept.size());
      kept.push_back(shape[i]);
    }
  }
  std::vector<int64_t> p2;
  for (int64_t p : perm) {
    if (new_index[static_cast<size_t>(p)] >= 0) p2.push_back(new_index[static_cast<size_t>(p)]);
  }
  // Kept dims are all > 1, so their strides strictly decrease: an output dim
  // continues the previous one exactly when it is the next input dim.
  std::vector<int64_t> in_strides = Strides(kept);
  GatherPlan plan;
  for (int64_t d : p2) plan.AddDim(kept[d], in_strides[d]);
  const BroadcastPlan& merged = plan.Finish();
  const std::vector<int64_t>& strides = merged.strides[0];
  const size_t k = merged.dims.size();
  // Whole rows when the innermost dim stays innermost, or when output rows
  // are long enough that the strided reads are not the cost.
  if (strides.back() != 1 && merged.dims.back() >= 8) {
    size_t j = 0;
    while (j < k && strides[j] != 1) ++j;
    if (j + 1 < k && merged.dims[j] >= 8) {
      switch (elem) {
        case 1:
          return TiledTranspose(x, y, merged.dims, strides, j, pool);
        case 2:
          return TiledTranspose(reinterpret_cast<const uint16_t*>(x),
                                reinterpret_cast<uint16_t*>(y), merged.dims, strides, j, pool);
        case 4:
          return TiledTranspose(reinterpret_cast<const uint32_t*>(x),
                                reinterpret_cast<uint32_t*>(y), merged.dims, strides, j, pool);
        case 8:
          return TiledTranspose(reinterpret_cast<const uint64_t*>(x),
                                reinterpret_cast<uint64_t*>(y), merged.dims, strides, j, pool);
        default:
          break;
      }
    }
  }
  GatherRows(x, 0, merged, elem, y, pool);
}

namespace {

Status TransposeShape(const AttrReader& attrs, const Shape& in, std::vector<int64_t>* perm,
                      Shape* out) {
  bool present;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("perm", perm, &present));
  const int r = static_cast<int>(in.size());
  if (!present || perm->empty()) {  // default: reverse the dims
    perm->clear();
    for (int i = r - 1; i >= 0; --i) perm->push_back(i);
  }
  DISTRT_RETURN_IF_ERROR(CheckPerm(*perm, r));
  out->clear();
  for (int64_t p : *perm) out->push_back(in[static_cast<size_t>(p)]);
  return OkStatus();
}

Status VerifyTranspose(const VerifyContext& ctx) {
  std::vector<int64_t> perm;
  Shape s;
  DISTRT_RETURN_IF_ERROR(TransposeShape(ctx.attrs(), ctx.inputs[0].shape, &perm, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

Status RunTranspose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm;
  Shape s;
  DISTRT_RETURN_IF_ERROR(TransposeShape(ctx.attrs(), x.shape(), &perm, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  TransposeBytes(x.data<uint8_t>(), x.shape(), perm, DTypeSize(x.dtype()), out->data<uint8_t>(),
                 ctx.pool);
  return OkStatus();
}

// ---- reshape -------------------------------------------------------------------

Status VerifyReshape(const VerifyContext& ctx) {
  const TensorType &in = ctx.inputs[0], &out = ctx.outputs[0];
  if (in.dtype != out.dtype || NumElements(in.shape) != NumElements(out.shape)) {
    return InvalidArgumentError("cannot reshape ", in.ToString(), " to ", out.ToString());
  }
  return OkStatus();
}

Status RunReshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  if (ot.dtype != x.dtype()) {
    return InvalidArgumentError("reshape changes the dtype from ", DTypeName(x.dtype()), " to ",
                                DTypeName(ot.dtype));
  }
  Tensor y;
  DISTRT_RETURN_IF_ERROR(x.Reshaped(ot.shape, &y));  // shares the buffer
  return ctx.SetOutput(0, y);
}

// ---- expand --------------------------------------------------------------------

Status VerifyExpand(const VerifyContext& ctx) {
  Shape b;
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(ctx.inputs[0].shape, ctx.outputs[0].shape, &b));
  if (b != ctx.outputs[0].shape) {
    return InvalidArgumentError("cannot expand ", ctx.inputs[0].ToString(), " to ",
                                ctx.outputs[0].ToString());
  }
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, b});
}

Status RunExpand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  Shape b;
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(x.shape(), ot.shape, &b));
  if (b != ot.shape) {
    return InvalidArgumentError("cannot expand ", x.type().ToString(), " to ", ot.ToString());
  }
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ot, TensorType{x.dtype(), b}));
  if (x.shape() == ot.shape) return ctx.SetOutput(0, x);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  BroadcastPlan plan = MakeBroadcastPlan(ot.shape, {x.shape()});
  GatherRows(x.data<uint8_t>(), 0, plan, DTypeSize(x.dtype()), out->data<uint8_t>(), ctx.pool);
  return OkStatus();
}

// ---- concat --------------------------------------------------------------------

Status ConcatShape(const AttrReader& attrs, const std::vector<TensorType>& ins, int64_t* axis,
                   TensorType* out) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", &a));
  const TensorType& first = ins[0];
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(first.shape.size()), axis));
  *out = first;
  out->shape[static_cast<size_t>(*axis)] = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorType& t = ins[i];
    bool ok = t.dtype == first.dtype && t.shape.size() == first.shape.size();
    for (size_t d = 0; ok && d < t.shape.size(); ++d) {
      if (static_cast<int64_t>(d) != *axis && t.shape[d] != first.shape[d]) ok = false;
    }
    if (!ok) {
      return InvalidArgumentError("concat input ", i, " (", t.ToString(),
                                  ") does not match input 0 (", first.ToString(), ") outside axis ",
                                  *axis);
    }
    out->shape[static_cast<size_t>(*axis)] += t.shape[static_cast<size_t>(*axis)];
  }
  return OkStatus();
}

Status VerifyConcat(const VerifyContext& ctx) {
  int64_t axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(ConcatShape(ctx.attrs(), ctx.inputs, &axis, &t));
  return CheckOutputType(ctx.outputs[0], t);
}

Status RunConcat(KernelContext& ctx) {
  std::vector<TensorType> types;
  for (const Tensor* t : ctx.inputs) types.push_back(t->type());
  int64_t axis;
  TensorType t;
  DISTRT_RETURN_IF_ERROR(ConcatShape(ctx.attrs(), types, &axis, &t));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], t));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const size_t elem = DTypeSize(t.dtype);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) outer *= t.shape[d];
    if (static_cast<int64_t>(d) > axis) inner *= t.shape[d];
  }
  const size_t out_row = static_cast<size_t>(t.shape[static_cast<size_t>(axis)] * inner) * elem;
  uint8_t* dst = out->data<uint8_t>();
  size_t col = 0;
  for (const Tensor* in : ctx.inputs) {
    const size_t row = static_cast<size_t>(in->dim(static_cast<int>(axis)) * inner) * elem;
    const uint8_t* src = in->data<uint8_t>();
    if (row > 0) {
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst + static_cast<size_t>(o) * out_row + col,
                    src + static_cast<size_t>(o) * row, row);
      }
    }
    col += row;
  }
  return OkStatus();
}

// ---- slice ---------------------------------------------------------------------

Status SliceParams(const AttrReader& attrs, const Shape& in, std::vector<int64_t>* starts,
                   std::vector<int64_t>* steps, Shape* out) {
  std::vector<int64_t> ends;
  bool has_steps;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("starts", starts));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("ends", &ends));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("steps", steps, &has_steps));
  const size_t r = in.size();
  if (!has_steps) steps->assign(r, 1);
  if (starts->size() != r || ends.size() != r || steps->size() != r) {
    return InvalidArgumentError("slice needs starts/ends/steps for each of the ", r, " dims, got ",
                                starts->size(), "/", ends.size(), "/", steps->size());
  }
  out->assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t s = (*starts)[d], e = ends[d], st = (*steps)[d];
    if (st == 0) return InvalidArgumentError("slice step is 0 in dim ", d);
    int64_t count = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
    if (count < 0) count = 0;
    if (count > 0) {
      const int64_t last = s + (count - 1) * st;
      if (s < 0 || s >= in[d] || last < 0 || last >= in[d]) {
        return OutOfRangeError("slice dim ", d, ": start ", s, ", end ", e, ", step ", st,
                               " reaches outside [0, ", in[d], ")");
      }
    }
    (*out)[d] = count;
  }
  return OkStatus();
}

Status VerifySlice(const VerifyContext& ctx) {
  std::vector<int64_t> starts, steps;
  Shape s;
  DISTRT_RETURN_IF_ERROR(SliceParams(ctx.attrs(), ctx.inputs[0].shape, &starts, &steps, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

Status RunSlice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> starts, steps;
  Shape s;
  DISTRT_RETURN_IF_ERROR(SliceParams(ctx.attrs(), x.shape(), &starts, &steps, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  std::vector<int64_t> in_strides = Strides(x.shape());
  GatherPlan plan;
  int64_t base = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    base += starts[d] * in_strides[d];
    if (s[d] != 1) plan.AddDim(s[d], in_strides[d] * steps[d]);
  }
  GatherRows(x.data<uint8_t>(), base, plan.Finish(), DTypeSize(x.dtype()), out->data<uint8_t>(),
             ctx.pool);
  return OkStatus();
}

// ---- pad -----------------------------------------------------------------------

enum class PadMode { kConstant, kReflect, kEdge };

Status PadParams(const AttrReader& attrs, const Shape& in, std::vector<int64_t>* pads,
                 PadMode* mode, Shape* out) {
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("pads", pads));
  std::string m;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("mode", "constant", &m));
  if (m == "constant")
    *mode = PadMode::kConstant;
  else if (m == "reflect")
    *mode = PadMode::kReflect;
  else if (m == "edge")
    *mode = PadMode::kEdge;
  else
    return InvalidArgumentError("pad mode must be constant, reflect or edge, got '", m, "'");
  const size_t r = in.size();
  if (pads->size() != 2 * r) {
    return InvalidArgumentError("pads has ", pads->size(), " entries, expected ", 2 * r);
  }
  out->assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    (*out)[d] = in[d] + (*pads)[d] + (*pads)[d + r];
    if ((*out)[d] < 0) {
      return InvalidArgumentError("pads make dim ", d, " negative (", (*out)[d], ")");
    }
  }
  return OkStatus();
}

Status VerifyPad(const VerifyContext& ctx) {
  std::vector<int64_t> pads;
  PadMode mode;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PadParams(ctx.attrs(), ctx.inputs[0].shape, &pads, &mode, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

// Source index along one dim for output index o, or -1 for the pad value.
int64_t PadSource(int64_t o, int64_t begin, int64_t n, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
  }
  return -1;
}

Status RunPad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> pads;
  PadMode mode;
  Shape s;
  DISTRT_RETURN_IF_ERROR(PadParams(ctx.attrs(), x.shape(), &pads, &mode, &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  double value;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetFloat("value", 0.0, &value));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t total = out->num_elements();
  if (total == 0) return OkStatus();
  if (mode != PadMode::kConstant && x.num_elements() == 0) {
    return InvalidArgumentError("pad mode ", mode == PadMode::kEdge ? "edge" : "reflect",
                                " needs a non-empty input");
  }
  const size_t elem = DTypeSize(x.dtype());
  uint8_t fill[8] = {0};
  DISTRT_RETURN_IF_ERROR(CastBuffer(&value, DType::kF64, fill, x.dtype(), 1));
  const size_t r = s.size();
  if (r == 0) {
    std::memcpy(out->raw(), x.raw(), elem);
    return OkStatus();
  }
  // Per-dim maps output index -> source index (or -1).
  std::vector<std::vector<int64_t>> map(r);
  for (size_t d = 0; d < r; ++d) {
    map[d].resize(static_cast<size_t>(s[d]));
    for (int64_t o = 0; o < s[d]; ++o)
      map[d][o] = PadSource(o, pads[d], x.dim(static_cast<int>(d)), mode);
  }
  std::vector<int64_t> in_strides = Strides(x.shape());
  const int64_t inner = s.back();
  const std::vector<int64_t>& last = map.back();
  // The run of the last dim that copies straight from the input.
  int64_t lo = std::max<int64_t>(0, pads[r - 1]);
  int64_t hi = std::min<int64_t>(inner, pads[r - 1] + x.dim(static_cast<int>(r - 1)));
  if (hi < lo) hi = lo;
  const int64_t rows = total / inner;
  const uint8_t* src = x.data<uint8_t>();
  uint8_t* dst = out->data<uint8_t>();
  // A row of pad values: constant runs are copied from it whole (a gradient
  // of a slice pads half of every row; one small memcpy per element was
  // most of its time).
  std::vector<uint8_t> fill_row(static_cast<size_t>(inner) * elem);
  for (int64_t j = 0; j < inner; ++j) std::memcpy(fill_row.data() + j * elem, fill, elem);
  const bool constant = mode == PadMode::kConstant;
  ParallelFor(ctx.pool, rows, std::max<int64_t>(1, kElementwiseGrain / inner),
              [&](int64_t r0, int64_t r1) {
                std::vector<int64_t> idx(r - 1);
                for (int64_t row = r0; row < r1; ++row) {
                  int64_t rem = row, off = 0;
                  bool is_pad = false;
                  for (size_t d = r - 1; d-- > 0;) {
                    const int64_t o = rem % s[d];
                    rem /= s[d];
                    const int64_t m = map[d][o];
                    if (m < 0)
                      is_pad = true;
                    else
                      off += m * in_strides[d];
                  }
                  uint8_t* out_row = dst + static_cast<size_t>(row * inner) * elem;
                  if (is_pad) {
                    std::memcpy(out_row, fill_row.data(), fill_row.size());
                    continue;
                  }
                  const uint8_t* in_row = src + static_cast<size_t>(off) * elem;
                  if (constant) {  // outside [lo, hi) every value is the pad value
                    std::memcpy(out_row, fill_row.data(), static_cast<size_t>(lo) * elem);
                    if (hi > lo)
                      std::memcpy(out_row + lo * elem, in_row + last[lo] * elem,
                                  static_cast<size_t>(hi - lo) * elem);
                    std::memcpy(out_row + hi * elem, fill_row.data(),
                                static_cast<size_t>(inner - hi) * elem);
                    continue;
                  }
                  for (int64_t j = 0; j < lo; ++j) {
                    const int64_t m = last[j];
                    std::memcpy(out_row + j * elem, m < 0 ? fill : in_row + m * elem, elem);
                  }
                  if (hi > lo) {
                    std::memcpy(out_row + lo * elem, in_row + last[lo] * elem,
                                static_cast<size_t>(hi - lo) * elem);
                  }
                  for (int64_t j = hi; j < inner; ++j) {
                    const int64_t m = last[j];
                    std::memcpy(out_row + j * elem, m < 0 ? fill : in_row + m * elem, elem);
                  }
                }
              });
  return OkStatus();
}

// ---- range ---------------------------------------------------------------------

template <typename T>
Status RangeImpl(KernelContext& ctx) {
  const T start = *ctx.input(0).data<T>(), limit = *ctx.input(1).data<T>(),
          delta = *ctx.input(2).data<T>();
  if (delta == T(0)) return InvalidArgumentError("range delta is 0");
  int64_t n;
  if constexpr (std::is_floating_point<T>::value) {
    n = static_cast<int64_t>(std::ceil(static_cast<double>(limit - start) / delta));
  } else {
    const int64_t diff = static_cast<int64_t>(limit) - static_cast<int64_t>(start);
    const int64_t d = static_cast<int64_t>(delta);
    n = diff / d + ((diff % d != 0 && ((diff < 0) == (d < 0))) ? 1 : 0);
  }
  if (n < 0) n = 0;
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{DTypeOf<T>::value, {n}}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  T* y = out->data<T>();
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  return OkStatus();
}

Status RunRange(KernelContext& ctx) {
  const DType dt = ctx.input(0).dtype();
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).num_elements() != 1 || ctx.input(i).dtype() != dt) {
      return InvalidArgumentError("range needs three scalars of one dtype, input ", i, " is ",
                                  ctx.input(i).type().ToString());
    }
  }
  switch (dt) {
    case DType::kF32:
      return RangeImpl<float>(ctx);
    case DType::kF64:
      return RangeImpl<double>(ctx);
    case DType::kI64:
      return RangeImpl<int64_t>(ctx);
    case DType::kI32:
      return RangeImpl<int32_t>(ctx);
    case DType::kI16:
      return RangeImpl<int16_t>(ctx);
    default:
      return UnimplementedError("range does not support dtype ", DTypeName(dt));
  }
}

// Moves elements by their size: bf16 and f16 need no conversion (range
// computes, and takes them through f32).
void AddByBytes(KernelRegistry& r, KernelDef def) {
  def.half_native = true;
  r.Add(std::move(def));
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  AddByBytes(r, {"transpose", 1, 1, 1, RunTranspose, VerifyTranspose});
  AddByBytes(r, {"reshape", 1, 1, 1, RunReshape, VerifyReshape});
  // Only views its input's buffer with a new shape: the same kernel serves
  // every device.
  KernelDef reshape{"reshape", 1, 1, 1, RunReshape, VerifyReshape};
  reshape.device = DeviceKind::kCuda;
  r.Add(reshape);
  AddByBytes(r, {"expand", 1, 1, 1, RunExpand, VerifyExpand});
  AddByBytes(r, {"concat", 1, -1, 1, RunConcat, VerifyConcat});
  AddByBytes(r, {"slice", 1, 1, 1, RunSlice, VerifySlice});
  AddByBytes(r, {"pad", 1, 1, 1, RunPad, VerifyPad});
  r.Add({"range", 3, 3, 1, RunRange, nullptr});
}

}  // namespace distrt

// Reductions over axes, argmax / argmin, cumsum and top_k.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "axis_geometry.h"
#include "kernel_util.h"
#include "via_f32.h"

namespace distrt {
namespace {

enum class RedOp { kSum, kMean, kMax, kMin, kProd };

RedOp RedOpOf(const std::string& name) {
  if (name == "reduce_sum") return RedOp::kSum;
  if (name == "reduce_mean") return RedOp::kMean;
  if (name == "reduce_max") return RedOp::kMax;
  if (name == "reduce_min") return RedOp::kMin;
  return RedOp::kProd;
}

Status VerifyReduce(const VerifyContext& ctx) {
  std::vector<int64_t> axes;
  Shape s;
  DISTRT_RETURN_IF_ERROR(ReduceShape(ctx.attrs(), ctx.inputs[0].shape, &axes, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

template <typename T>
struct Acc {
  using type = std::conditional_t<std::is_floating_point<T>::value, double, T>;
};

template <typename T>
T MaxNan(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T>
T MinNan(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

// The largest (or smallest) of x[0..n), NaN if any is NaN. 32 running
// extremes and NaN flags instead of MaxNan's test per element, so the loop
// vectorises without waiting on one chain of compares (a cross-entropy's
// row max over GPT-2's vocabulary: 2.4 -> 0.9 ms for 128 rows on a Zen 5
// core; 8 running extremes made one such chain).
template <bool kMax, typename T>
T RowExtreme(const T* x, int64_t n) {
  constexpr int kLanes = 32;
  const T start = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  T part[kLanes];
  int32_t nan[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    part[j] = start;
    nan[j] = 0;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const T v = x[i + j];
      nan[j] |= v != v;
      part[j] = kMax ? (v > part[j] ? v : part[j]) : (v < part[j] ? v : part[j]);
    }
  for (; i < n; ++i) {
    const T v = x[i];
    nan[0] |= v != v;
    part[0] = kMax ? (v > part[0] ? v : part[0]) : (v < part[0] ? v : part[0]);
  }
  T best = part[0];
  for (int j = 0; j < kLanes; ++j) {
    if (nan[j]) return std::numeric_limits<T>::quiet_NaN();
    best = kMax ? (part[j] > best ? part[j] : best) : (part[j] < best ? part[j] : best);
  }
  return best;
}

// Adds f(x[i]) over x[0..n) into L running sums of A (double for floats),
// f the element as A or its square: no chain of dependent adds, so the
// compiler can vectorise them. Element i goes to sum i % L, so a row added
// in pieces whose starts are multiples of L sums as in one pass.
template <int L = 8, typename A, typename T, typename F>
void AddToRunningSums(const T* x, int64_t n, F f, A part[L]) {
  int64_t r = 0;
  for (; r + L <= n; r += L)
    for (int j = 0; j < L; ++j) part[j] += f(x[r + j]);
  for (; r < n; ++r) part[r % L] += f(x[r]);
}
// The L running sums added pairwise, in a fixed order.
template <int L = 8, typename A>
A CombineRunningSums(const A part[L]) {
  if constexpr (L == 1) {
    return part[0];
  } else {
    return CombineRunningSums<L / 2>(part) + CombineRunningSums<L / 2>(part + L / 2);
  }
}

// The sum of x[0..n) in A.
template <typename A, typename T>
A RowSum(const T* x, int64_t n) {
  A part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  AddToRunningSums(
      x, n, [](T v) { return static_cast<A>(v); }, part);
  return CombineRunningSums(part);
}

// Columns a task of Reduce3 accumulates down the rows (inner > 1).
constexpr int64_t kColumnBlock = 1024;

// Elements per chunk when a few long rows are reduced in parallel.
constexpr int64_t kLongRowChunk = 1 << 16;

// fn(o, r0, len) for every chunk of kLongRowChunk elements (the last one
// shorter) of `rows` rows of R elements, over the threads: per row, its
// chunks' results in order. The chunks are fixed, so whatever combines them
// in order gets the same result at any thread count.
template <typename A, typename F>
std::vector<A> LongRowChunks(int64_t rows, int64_t R, ThreadPool* pool, F fn) {
  const int64_t chunks = std::max<int64_t>(1, (R + kLongRowChunk - 1) / kLongRowChunk);
  std::vector<A> part(static_cast<size_t>(rows * chunks));
  ParallelFor(pool, rows * chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t o = c / chunks, r0 = (c % chunks) * kLongRowChunk;
      part[static_cast<size_t>(c)] = fn(o, r0, std::min(kLongRowChunk, R - r0));
    }
  });
  return part;
}

// y[o, i] = reduce_r x[o, r, i], computed in T. S is the stored element:
// T, or bf16/f16 bits (uint16_t) when inner > 1, whose rows are widened a
// block at a time and whose results are rounded once (`half`): the bits of
// this function on an f32 copy, without the copy.
template <typename T, typename S = T>
void Reduce3(RedOp op, const S* x, S* y, int64_t outer, int64_t R, int64_t inner, ThreadPool* pool,
             DType half = DType::kF32) {
  constexpr bool kWidened = !std::is_same<S, T>::value;
  using A = typename Acc<T>::type;
  const T lowest = std::is_floating_point<T>::value ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  const T highest = std::is_floating_point<T>::value ? std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::max();
  auto finish = [&](A acc) -> T {
    if (op == RedOp::kMean) {
      if constexpr (std::is_floating_point<T>::value) {
        return static_cast<T>(acc / static_cast<A>(R));
      } else {
        return R == 0 ? T(0) : static_cast<T>(acc / static_cast<A>(R));
      }
    }
    return static_cast<T>(acc);
  };
  auto init = [&]() -> A {
    switch (op) {
      case RedOp::kProd:
        return A(1);
      case RedOp::kMax:
        return static_cast<A>(lowest);
      case RedOp::kMin:
        return static_cast<A>(highest);
      default:
        return A(0);
    }
  };
  auto step = [&](A acc, T v) -> A {
    switch (op) {
      case RedOp::kProd:
        return WrapMul<A>(acc, static_cast<A>(v));
      case RedOp::kMax:
        return static_cast<A>(MaxNan<T>(static_cast<T>(acc), v));
      case RedOp::kMin:
        return static_cast<A>(MinNan<T>(static_cast<T>(acc), v));
      default:
        return WrapAdd<A>(acc, static_cast<A>(v));
    }
  };
  if (outer == 0 || inner == 0) return;  // an empty result (a device's empty piece)
  if constexpr (std::is_floating_point<T>::value && !kWidened) {
    if (inner == 1 && op != RedOp::kProd && R >= 2 * kLongRowChunk && outer < 16) {
      // A few long rows (a gradient norm's sum of squares over a whole
      // embedding): parallel over fixed chunks of each row, their results
      // combined in order, so the result does not depend on the threads.
      const std::vector<A> part =
          LongRowChunks<A>(outer, R, pool, [&](int64_t o, int64_t r0, int64_t len) -> A {
            const T* row = x + o * R + r0;
            if (op == RedOp::kMax) return RowExtreme<true>(row, len);
            if (op == RedOp::kMin) return RowExtreme<false>(row, len);
            return RowSum<A>(row, len);
          });
      const int64_t chunks = static_cast<int64_t>(part.size()) / outer;
      for (int64_t o = 0; o < outer; ++o) {
        A acc = part[o * chunks];
        for (int64_t c = 1; c < chunks; ++c) {
          const A v = part[o * chunks + c];
          acc = op == RedOp::kMax
                    ? static_cast<A>(MaxNan<T>(static_cast<T>(acc), static_cast<T>(v)))
                : op == RedOp::kMin
                    ? static_cast<A>(MinNan<T>(static_cast<T>(acc), static_cast<T>(v)))
                    : acc + v;
        }
        y[o] = finish(acc);
      }
      return;
    }
  }
  if constexpr (!kWidened) {
    if (inner == 1) {
      int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, R));
      ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          const T* row = x + o * R;
          A acc = init();
          if constexpr (std::is_floating_point<T>::value) {
            if (op == RedOp::kSum || op == RedOp::kMean) {
              y[o] = finish(RowSum<A>(row, R));
              continue;
            }
            if (op == RedOp::kMax || op == RedOp::kMin) {
              y[o] = op == RedOp::kMax ? RowExtreme<true>(row, R) : RowExtreme<false>(row, R);
              continue;
            }
          }
          if (op == RedOp::kSum || op == RedOp::kMean) {
            for (int64_t r = 0; r < R; ++r) acc = WrapAdd<A>(acc, static_cast<A>(row[r]));
          } else {
            for (int64_t r = 0; r < R; ++r) acc = step(acc, row[r]);
          }
          y[o] = finish(acc);
        }
      });
      return;
    }
  }
  // Parallel over (outer x inner-block); accumulate a block of the inner dim.
  const int64_t block = std::min<int64_t>(inner, kColumnBlock);
  const int64_t nblocks = (inner + block - 1) / block;
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, R * block));
  ParallelFor(pool, outer * nblocks, grain, [&](int64_t t0, int64_t t1) {
    std::vector<A> acc(static_cast<size_t>(block));
    std::vector<T> widened(kWidened ? static_cast<size_t>(block) : 0);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / nblocks, b0 = (t % nblocks) * block;
      const int64_t len = std::min(block, inner - b0);
      std::fill(acc.begin(), acc.begin() + len, init());
      for (int64_t r = 0; r < R; ++r) {
        const S* stored = x + (o * R + r) * inner + b0;
        const T* row;
        if constexpr (kWidened) {
          WidenToF32(stored, half, widened.data(), len, nullptr);
          row = widened.data();
        } else {
          row = stored;
        }
        if (op == RedOp::kSum || op == RedOp::kMean) {
          for (int64_t i = 0; i < len; ++i) acc[i] = WrapAdd<A>(acc[i], static_cast<A>(row[i]));
        } else {
          for (int64_t i = 0; i < len; ++i) acc[i] = step(acc[i], row[i]);
        }
      }
      S* out = y + o * inner + b0;
      if constexpr (kWidened) {
        for (int64_t i = 0; i < len; ++i) widened[i] = finish(acc[i]);
        NarrowFromF32(widened.data(), out, half, len, nullptr);
      } else {
        for (int64_t i = 0; i < len; ++i) out[i] = finish(acc[i]);
      }
    }
  });
}

// [outer, R, inner] for reduced `axes` (sorted) of `s` when they are one
// contiguous block (or none: R = inner = 1); false otherwise.
bool ContiguousGeometry(const Shape& s, const std::vector<int64_t>& axes, int64_t* outer,
                        int64_t* R, int64_t* inner) {
  *outer = *R = *inner = 1;
  if (axes.empty()) {
    *outer = NumElements(s);
    return true;
  }
  if (axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size())) return false;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axes.front())
      *outer *= s[i];
    else if (i <= axes.back())
      *R *= s[i];
    else
      *inner *= s[i];
  }
  return true;
}

// bf16/f16 reductions over a block of axes with axes after it (a bias
// gradient's sum over the tokens) read their rows widened a block at a time
// (Reduce3's `S`); other 16-bit reductions run through f32 copies.
bool ReducesHalfByColumns(const VerifyContext& ctx) {
  if (ctx.inputs.size() != 1 || !IsHalfFloat(ctx.inputs[0].dtype)) return false;
  std::vector<int64_t> axes;
  Shape out;
  if (!ReduceShape(ctx.attrs(), ctx.inputs[0].shape, &axes, &out).ok()) return false;
  int64_t outer, R, inner;
  return ContiguousGeometry(ctx.inputs[0].shape, axes, &outer, &R, &inner) && inner > 1;
}

Status RunReduce(KernelContext& ctx) {
  const std::string& name = ctx.inst->op();
  const RedOp op = RedOpOf(name);
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  Shape out_shape;
  DISTRT_RETURN_IF_ERROR(ReduceShape(ctx.attrs(), x.shape(), &axes, &out_shape));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), out_shape}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const Shape& s = x.shape();
  const int r = x.rank();
  // Contiguous block of reduced axes -> (outer, R, inner) directly; otherwise
  // move the reduced axes last first.
  const Tensor* src = &x;
  Tensor moved;
  int64_t outer = 1, R = 1, inner = 1;
  const bool contiguous = ContiguousGeometry(s, axes, &outer, &R, &inner);
  if (IsHalfFloat(x.dtype())) {  // only what ReducesHalfByColumns let through
    if (!contiguous || inner <= 1) return InternalError(name, ": no 16-bit path for these axes");
    Reduce3<float, uint16_t>(op, x.data<uint16_t>(), out->data<uint16_t>(), outer, R, inner,
                             ctx.pool, x.dtype());
    return OkStatus();
  }
  if (!contiguous) {
    std::vector<int64_t> perm;
    Shape moved_shape;
    for (int i = 0; i < r; ++i) {
      if (!std::binary_search(axes.begin(), axes.end(), i)) {
        perm.push_back(i);
        outer *= s[i];
      }
    }
    for (int64_t a : axes) {
      perm.push_back(a);
      R *= s[a];
    }
    for (int64_t p : perm) moved_shape.push_back(s[p]);
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype(), moved_shape, &moved));
    TransposeBytes(x.data<uint8_t>(), s, perm, DTypeSize(x.dtype()), moved.data<uint8_t>(),
                   ctx.pool);
    src = &moved;
  }
  DISTRT_DISPATCH_NUMERIC(
      x.dtype(), name, Reduce3<T>(op, src->data<T>(), out->data<T>(), outer, R, inner, ctx.pool));
  return OkStatus();
}

// ---- argmax / argmin ---------------------------------------------------------

Status VerifyArg(const VerifyContext& ctx) {
  int64_t axis;
  Shape s;
  DISTRT_RETURN_IF_ERROR(ArgShape(ctx.attrs(), ctx.inputs[0].shape, &axis, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{DType::kI64, s});
}

template <typename T>
void ArgLoop(bool is_max, bool last, const T* x, int64_t* y, int64_t outer, int64_t n,
             int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      int64_t best_i = 0;
      T best = p[0];
      for (int64_t k = 1; k < n; ++k) {
        T v = p[k * inner];
        bool better;
        if constexpr (std::is_floating_point<T>::value) {
          if (std::isnan(best)) {
            better = last && std::isnan(v);
          } else if (std::isnan(v)) {
            better = true;  // NaN wins, like numpy
          } else {
            better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          }
        } else {
          better = is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
        }
        if (better) {
          best = v;
          best_i = k;
        }
      }
      y[o * inner + i] = best_i;
    }
  }
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
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const bool is_max = name == "argmax";
  DISTRT_DISPATCH_NUMERIC_BOOL(
      x.dtype(), name,
      ArgLoop<T>(is_max, last != 0, x.data<T>(), out->data<int64_t>(), outer, n, inner));
  return OkStatus();
}

// ---- cumsum (ONNX CumSum) ----------------------------------------------------

Status CumSumAxis(const AttrReader& attrs, const TensorType& in, int64_t* axis) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  return NormalizeAxis(a, std::max<int>(1, static_cast<int>(in.shape.size())), axis);
}

Status VerifyCumSum(const VerifyContext& ctx) {
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(CumSumAxis(ctx.attrs(), ctx.inputs[0], &axis));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

// x viewed as [outer, dim, inner]; each (outer, inner) line summed in
// order (from the end when reversed), in the element's compute type.
template <typename T>
void CumSum(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner, bool exclusive,
            bool reverse) {
  using C = decltype(portable::Load(T{}));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      C sum = C{};
      for (int64_t s = 0; s < dim; ++s) {
        const int64_t k = reverse ? dim - 1 - s : s;
        const int64_t at = (o * dim + k) * inner + i;
        const C v = portable::Load(x[at]);
        if (!exclusive) sum = WrapAdd(sum, v);
        y[at] = portable::Store<T>(sum);
        if (exclusive) sum = WrapAdd(sum, v);
      }
    }
  }
}

Status RunCumSum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis, exclusive, reverse;
  DISTRT_RETURN_IF_ERROR(CumSumAxis(ctx.attrs(), x.type(), &axis));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("exclusive", 0, &exclusive));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("reverse", 0, &reverse));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  int64_t outer = 1, dim = x.rank() ? x.dim(static_cast<int>(axis)) : 1, inner = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  switch (x.dtype()) {
    DISTRT_FLOAT_CASES_(CumSum(x.data<T>(), out->data<T>(), outer, dim, inner, exclusive != 0,
                               reverse != 0))
    DISTRT_INT_CASES_(CumSum(x.data<T>(), out->data<T>(), outer, dim, inner, exclusive != 0,
                             reverse != 0))
    DISTRT_HALF_CASES_(CumSum(x.data<T>(), out->data<T>(), outer, dim, inner, exclusive != 0,
                              reverse != 0))
    DISTRT_UNSUPPORTED_(x.dtype(), "cumsum")
  }
  return OkStatus();
}

// ---- top_k (the indices of ONNX TopK) ------------------------------------------

Status TopKShape(const AttrReader& attrs, const Shape& in, int64_t* axis, int64_t* k, Shape* out) {
  int64_t a;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", -1, &a));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(in.size()), axis));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("k", k));
  if (*k < 0 || *k > in[static_cast<size_t>(*axis)]) {
    return InvalidArgumentError("top_k: k ", *k, " is not in [0, ", in[static_cast<size_t>(*axis)],
                                "]");
  }
  *out = in;
  (*out)[static_cast<size_t>(*axis)] = *k;
  return OkStatus();
}

Status VerifyTopK(const VerifyContext& ctx) {
  int64_t axis, k;
  Shape s;
  DISTRT_RETURN_IF_ERROR(TopKShape(ctx.attrs(), ctx.inputs[0].shape, &axis, &k, &s));
  return CheckOutputType(ctx.outputs[0], TensorType{DType::kI64, s});
}

// Per line along the axis: the positions of the k largest (smallest)
// values, best first; equal values keep index order, NaN counts as largest.
template <typename T>
void TopKLoop(bool smallest, const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner,
              int64_t k) {
  auto key = [](T v) {
    if constexpr (std::is_floating_point<T>::value) {
      return std::isnan(v) ? std::numeric_limits<double>::infinity() : static_cast<double>(v);
    } else {
      return static_cast<double>(v);
    }
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double va = key(p[a * inner]), vb = key(p[b * inner]);
        return smallest ? va < vb : va > vb;
      });
      for (int64_t j = 0; j < k; ++j) y[(o * k + j) * inner + i] = order[static_cast<size_t>(j)];
    }
  }
}

Status RunTopK(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis, k, smallest;
  Shape s;
  DISTRT_RETURN_IF_ERROR(TopKShape(ctx.attrs(), x.shape(), &axis, &k, &s));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("smallest", 0, &smallest));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{DType::kI64, s}));
  const AxisSplit split = SplitAround(x.shape(), axis);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  DISTRT_DISPATCH_NUMERIC(x.dtype(), "top_k",
                          TopKLoop<T>(smallest != 0, x.data<T>(), out->data<int64_t>(),
                                      split.outer, split.n, split.inner, k));
  return OkStatus();
}

// sum_squares (dist-fuse-for-target's form of reduce_sum(x * x) over every
// axis): one read of x, squares summed in double over fixed chunks split
// over the threads and added in order (the same result at any thread
// count), rounded once. A bf16/f16 x (a gradient whose cast to f32 folded)
// gives an f32 sum: each element widened exactly into the same running
// sums, so the bits of the sum of its f32 cast.
DType SumSquaresType(DType x) { return IsHalfFloat(x) ? DType::kF32 : x; }

bool SumsHalfItself(const VerifyContext& ctx) {
  return IsHalfFloat(ctx.inputs[0].dtype) && ctx.outputs[0].dtype == DType::kF32;
}

Status VerifySumSquares(const VerifyContext& ctx) {
  return CheckOutputType(ctx.outputs[0], TensorType{SumSquaresType(ctx.inputs[0].dtype), {}});
}

// An f32 or f64 element's square in double.
constexpr auto Square = [](auto e) {
  const double d = e;
  return d * d;
};
// A bf16 element's square: its bits widened to f32 (exact), squared in
// double.
constexpr auto SquareOfBF16 = [](uint16_t bits) { return Square(portable::BF16BitsToFloat(bits)); };

// Sums of squares keep 32 running sums: with 8, each vector of them is one
// chain of dependent adds, and the loop waits on the add's latency instead
// of memory (GPT-2-small's bf16 gradients: 22.5 against 10-16 ms on one Zen
// 5 core). Chunks start at multiples of 32 (kLongRowChunk, kWidenedBlock).
constexpr int kSquareSums = 32;
static_assert(kLongRowChunk % kSquareSums == 0, "chunks must start on a running sum's first");

// Adds x[i]^2 over x[0..n) into the running sums. The conversions and
// squares in double are the loop's work (a bf16 or f32 square is exact in
// double, so an FMA clone sums the same bits), hence the AVX-512 clone
// (DISTRT_ARITHMETIC_CLONES). A bf16 x (its bits) is read as stored.
DISTRT_ARITHMETIC_CLONES void AddSquares(const float* x, int64_t n, double part[kSquareSums]) {
  AddToRunningSums<kSquareSums>(x, n, Square, part);
}
DISTRT_ARITHMETIC_CLONES void AddSquares(const double* x, int64_t n, double part[kSquareSums]) {
  AddToRunningSums<kSquareSums>(x, n, Square, part);
}
DISTRT_ARITHMETIC_CLONES void AddSquaresOfBF16(const uint16_t* x, int64_t n,
                                               double part[kSquareSums]) {
  AddToRunningSums<kSquareSums>(x, n, SquareOfBF16, part);
}

// The sum of squares of n elements of x (f32, f64, or bf16 bits).
template <typename T>
double SumOfSquares(const T* x, int64_t n) {
  double part[kSquareSums] = {};
  if constexpr (std::is_same_v<T, uint16_t>)
    AddSquaresOfBF16(x, n, part);
  else
    AddSquares(x, n, part);
  return CombineRunningSums<kSquareSums>(part);
}

// The same of an f16 chunk, widened a block at a time (F16C's conversion)
// into the running sums one pass over its f32 copy would use.
double SumOfSquaresOfF16(const uint16_t* x, int64_t n) {
  static_assert(kWidenedBlock % kSquareSums == 0, "blocks must start on a running sum's first");
  double part[kSquareSums] = {};
  ForEachWidenedBlock(x, DType::kF16, n, [&](int64_t, int64_t len, const float* block) {
    AddSquares(block, len, part);
  });
  return CombineRunningSums<kSquareSums>(part);
}

Status RunSumSquares(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const TensorType want{SumSquaresType(x.dtype()), {}};
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], want));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t n = x.num_elements();
  if (IsHalfFloat(x.dtype())) {
    const uint16_t* p = x.data<uint16_t>();
    double sum = 0;
    for (double v : LongRowChunks<double>(1, n, ctx.pool, [&](int64_t, int64_t r0, int64_t len) {
           return x.dtype() == DType::kBF16 ? SumOfSquares(p + r0, len)
                                            : SumOfSquaresOfF16(p + r0, len);
         }))
      sum += v;
    out->data<float>()[0] = static_cast<float>(sum);
    return OkStatus();
  }
  DISTRT_DISPATCH_FLOAT(x.dtype(), "sum_squares", {
    const T* p = x.data<T>();
    double sum = 0;
    for (double v : LongRowChunks<double>(1, n, ctx.pool, [&](int64_t, int64_t r0, int64_t len) {
           return SumOfSquares(p + r0, len);
         }))
      sum += v;
    out->data<T>()[0] = static_cast<T>(sum);
  });
  return OkStatus();
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& r) {
  for (const char* n : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
    KernelDef def{n, 1, 1, 1, RunReduce, VerifyReduce};
    def.half_native_for = ReducesHalfByColumns;
    r.Add(def);
  }
  r.Add({"argmax", 1, 1, 1, RunArg, VerifyArg});
  r.Add({"argmin", 1, 1, 1, RunArg, VerifyArg});
  r.Add({"cumsum", 1, 1, 1, RunCumSum, VerifyCumSum});
  r.Add({"top_k", 1, 1, 1, RunTopK, VerifyTopK});
  KernelDef sum_squares{"sum_squares", 1, 1, 1, RunSumSquares, VerifySumSquares};
  sum_squares.half_native_for = SumsHalfItself;
  r.Add(sum_squares);
}

}  // namespace distrt

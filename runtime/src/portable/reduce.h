// Reduction kernel bodies (host and device): reduce_sum / mean / max / min /
// prod over a set of axes, and argmax / argmin over one axis, on any float
// storage type (16-bit floats compute in f32). Semantics are the host
// kernels' (kernels_reduce.cpp): max/min carry a NaN, the mean of nothing is
// 0/0, argmax/argmin pick the first (or, with select_last_index, the last)
// extreme and a NaN beats every number.
//
// A reduction runs as passes over [outer, R, inner] views (ReducePlan
// below): the reduced axes, after size-1 dims are dropped and neighbours
// merged, form one or more contiguous groups, reduced one group per pass,
// innermost first. A pass reduces rows (inner == 1: a warp per output, its
// lanes combining, ReduceRowsBody) or columns (a thread per output walking
// the reduced extent, coalesced over `inner`, ReduceColsBody). A pass with
// few outputs and a long reduction is split: its first pass writes partial
// results of `splits` chunks, a second pass reduces those.
#ifndef DISTRT_SRC_PORTABLE_REDUCE_H_
#define DISTRT_SRC_PORTABLE_REDUCE_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "portable/hd.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

enum class ReduceOp : int { kSum, kMean, kMax, kMin, kProd };

template <typename C>
DISTRT_HD C Infinity() {
  return static_cast<C>(HUGE_VAL);
}

// The combining operations: Init (the result over nothing), Step (fold one
// value in), Lanes (combine the lanes' partial results). kMean folds as a
// sum; the last pass divides.
struct SumFold {
  template <typename C>
  static DISTRT_HD C Init() {
    return C(0);
  }
  template <typename C>
  static DISTRT_HD C Step(C a, C v) {
    return a + v;
  }
  template <typename L, typename C>
  static DISTRT_HD C Lanes(const L& lanes, C a) {
    return lanes.Sum(a);
  }
};
struct MaxFold {
  template <typename C>
  static DISTRT_HD C Init() {
    return -Infinity<C>();
  }
  template <typename C>
  static DISTRT_HD C Step(C a, C v) {
    return NanMax(a, v);
  }
  template <typename L, typename C>
  static DISTRT_HD C Lanes(const L& lanes, C a) {
    return lanes.Max(a);
  }
};
struct MinFold {
  template <typename C>
  static DISTRT_HD C Init() {
    return Infinity<C>();
  }
  template <typename C>
  static DISTRT_HD C Step(C a, C v) {
    return NanMin(a, v);
  }
  template <typename L, typename C>
  static DISTRT_HD C Lanes(const L& lanes, C a) {
    return lanes.Min(a);
  }
};
// No lane combination (lanes have no product): product passes are column
// passes, one thread per output.
struct ProdFold {
  template <typename C>
  static DISTRT_HD C Init() {
    return C(1);
  }
  template <typename C>
  static DISTRT_HD C Step(C a, C v) {
    return a * v;
  }
};

// Folds v[lo, hi) (element k at v[k * stride]) with four running results,
// so four loads are in flight per thread.
template <typename Fold, typename C, typename In>
DISTRT_HD C FoldRange(const In* v, int64_t lo, int64_t hi, int64_t step, int64_t stride) {
  C a0 = Fold::template Init<C>(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = lo;
  for (; k + 3 * step < hi; k += 4 * step) {
    a0 = Fold::Step(a0, Load(v[k * stride]));
    a1 = Fold::Step(a1, Load(v[(k + step) * stride]));
    a2 = Fold::Step(a2, Load(v[(k + 2 * step) * stride]));
    a3 = Fold::Step(a3, Load(v[(k + 3 * step) * stride]));
  }
  for (; k < hi; k += step) a0 = Fold::Step(a0, Load(v[k * stride]));
  return Fold::Step(Fold::Step(a0, a1), Fold::Step(a2, a3));
}

// Rows: x is [outer, R] (inner == 1), each row cut into `splits` chunks of
// `chunk`; row q = o * splits + s writes y[q] (a partial result when
// splits > 1). The last pass of a mean divides by `count`.
template <typename In, typename Out, typename Fold>
struct ReduceRowsBody {
  using C = typename Elem<In>::Compute;
  const In* x;
  Out* y;
  int64_t R;
  int64_t splits;
  int64_t chunk;
  bool mean;
  C count;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t q, const Lanes& lanes) const {
    int64_t o, s;
    DivMod(q, splits, &o, &s);
    const int64_t lo = s * chunk, hi = lo + chunk < R ? lo + chunk : R;
    const In* row = x + o * R;
    C acc = FoldRange<Fold, C>(row, lo + lanes.lane, hi, Lanes::count, 1);
    acc = Fold::Lanes(lanes, acc);
    if (mean) acc = acc / count;
    if (lanes.lane == 0) y[q] = Store<Out>(acc);
  }
};

// Columns: x is [outer, R, inner]; thread t = (o * splits + s) * inner + i
// folds x[o, r, i] for r in chunk s and writes y[(o * inner + i) * splits +
// s]: with splits > 1 the partial results of an output are contiguous, a
// row for the pass that combines them.
template <typename In, typename Out, typename Fold>
struct ReduceColsBody {
  using C = typename Elem<In>::Compute;
  const In* x;
  Out* y;
  int64_t R;
  int64_t inner;
  int64_t splits;
  int64_t chunk;
  bool mean;
  C count;
  DISTRT_HD void operator()(int64_t t) const {
    int64_t i, rest, s, o;
    DivMod(t, inner, &rest, &i);
    DivMod(rest, splits, &o, &s);
    const int64_t lo = s * chunk, hi = lo + chunk < R ? lo + chunk : R;
    C acc = FoldRange<Fold, C>(x + o * R * inner + i, lo, hi, 1, inner);
    if (mean) acc = acc / count;
    y[(o * inner + i) * splits + s] = Store<Out>(acc);
  }
};

// ---- the plan -----------------------------------------------------------------

// One pass over x viewed as [outer, R, inner]. Its result has
// outer * inner * splits elements (see the bodies for their order).
struct ReducePass {
  bool rows = false;  // ReduceRowsBody (inner == 1), else ReduceColsBody
  int64_t outer = 1, R = 1, inner = 1;
  int64_t splits = 1, chunk = 1;
  int64_t result_elements() const { return outer * inner * splits; }
};

// How many threads (or warps) keep the device busy: passes with fewer
// outputs than this split their reduction. The launcher's defaults fill an
// H100; tests pass small ones to split small tensors.
struct ReduceTargets {
  int64_t threads = int64_t{1} << 18;
  int64_t warps = int64_t{1} << 13;
  int64_t min_row_chunk = 2048;  // elements a split row chunk has at least
  int64_t min_col_chunk = 32;    // rows a split column chunk has at least
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Appends the pass (or two, when split) that reduces [outer, R, inner].
inline void AddReducePasses(ReduceOp op, int64_t outer, int64_t R, int64_t inner,
                            const ReduceTargets& t, bool may_split,
                            std::vector<ReducePass>* passes) {
  ReducePass p;
  p.outer = outer;
  p.R = R;
  p.inner = inner;
  p.chunk = R > 0 ? R : 1;
  // A warp per row pays when a row has a warp's worth of elements; a
  // product has no lane combination.
  p.rows = inner == 1 && R >= 32 && op != ReduceOp::kProd;
  int64_t splits = 1;
  if (may_split && op != ReduceOp::kProd) {
    if (p.rows && outer * 2 <= t.warps && R >= 2 * t.min_row_chunk) {
      splits = CeilDiv(t.warps, outer);
      if (splits > R / t.min_row_chunk) splits = R / t.min_row_chunk;
    } else if (!p.rows && outer * inner * 2 <= t.threads && R >= 2 * t.min_col_chunk) {
      splits = CeilDiv(t.threads, outer * inner);
      if (splits > R / t.min_col_chunk) splits = R / t.min_col_chunk;
    }
  }
  if (splits > 1) {
    p.chunk = CeilDiv(R, splits);
    p.splits = CeilDiv(R, p.chunk);
  }
  passes->push_back(p);
  // The partial results, [outer * inner, splits], reduced as rows.
  if (p.splits > 1) AddReducePasses(op, outer * inner, p.splits, 1, t, false, passes);
}

// The passes that reduce `shape` over the sorted, distinct `axes`; *count
// is the number of elements each output reduces (what a mean divides by).
inline std::vector<ReducePass> MakeReducePlan(ReduceOp op, const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& axes,
                                              const ReduceTargets& targets, int64_t* count) {
  // Dims as (extent, reduced), size-1 dims dropped, neighbours of a kind
  // merged.
  std::vector<int64_t> dims;
  std::vector<bool> red;
  *count = 1;
  size_t a = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool r = a < axes.size() && axes[a] == static_cast<int64_t>(d);
    if (r) {
      ++a;
      *count *= shape[d];
    }
    if (shape[d] == 1) continue;
    if (!dims.empty() && red.back() == r) {
      dims.back() *= shape[d];
    } else {
      dims.push_back(shape[d]);
      red.push_back(r);
    }
  }
  std::vector<ReducePass> passes;
  bool any = false;
  for (bool r : red) any = any || r;
  if (!any) {  // nothing reduced: one pass that maps each element
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    AddReducePasses(op, 1, 1, n, targets, false, &passes);
    return passes;
  }
  // Innermost reduced group first; the kept dims around it then merge.
  while (true) {
    int g = -1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (red[static_cast<size_t>(d)]) {
        g = d;
        break;
      }
    }
    if (g < 0) break;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < g; ++d) outer *= dims[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(g) + 1; d < dims.size(); ++d) inner *= dims[d];
    AddReducePasses(op, outer, dims[static_cast<size_t>(g)], inner, targets, true, &passes);
    dims.erase(dims.begin() + g);
    red.erase(red.begin() + g);
    if (g > 0 && static_cast<size_t>(g) < dims.size() && !red[static_cast<size_t>(g) - 1] &&
        !red[static_cast<size_t>(g)]) {
      dims[static_cast<size_t>(g) - 1] *= dims[static_cast<size_t>(g)];
      dims.erase(dims.begin() + g);
      red.erase(red.begin() + g);
    }
  }
  return passes;
}

// ---- argmax / argmin ------------------------------------------------------------

// The running best of a scan in index order, with the host's rules: a NaN
// beats every number (the first NaN, or the last with select_last), ties
// go to the first (or last) index.
template <typename C>
struct ArgBest {
  C value;
  int64_t index;  // -1: nothing seen
};

template <typename C>
DISTRT_HD bool ArgBetter(bool is_max, bool last, C v, C best) {
  if (IsNan(best)) return last && IsNan(v);
  if (IsNan(v)) return true;
  return is_max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
}

// Rows: x is [rows, n]; lanes scan their share, then agree on the winner:
// a NaN when any lane has one, else the extreme; among the lanes holding
// it, the smallest index (or the largest with select_last).
template <typename T>
struct ArgRowsBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  int64_t* y;
  int64_t n;
  bool is_max;
  bool last;
  template <typename Lanes>
  DISTRT_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* p = x + row * n;
    C best = C(0);
    int64_t index = -1;
    for (int64_t k = lanes.lane; k < n; k += Lanes::count) {
      const C v = Load(p[k]);
      if (index < 0 || ArgBetter(is_max, last, v, best)) {
        best = v;
        index = k;
      }
    }
    const bool nan = index >= 0 && IsNan(best);
    const int any_nan = lanes.Max(nan ? 1 : 0);
    bool candidate;
    if (any_nan) {
      candidate = nan;
    } else {
      // Lanes with nothing hold no candidate; the others agree on the
      // extreme value.
      const C none = is_max ? -Infinity<C>() : Infinity<C>();
      const C mine = index >= 0 ? best : none;
      const C extreme = is_max ? lanes.Max(mine) : lanes.Min(mine);
      candidate = index >= 0 && mine == extreme;
    }
    const int64_t pick = last ? lanes.Max(candidate ? index : int64_t{-1})
                              : lanes.Min(candidate ? index : INT64_MAX);
    if (lanes.lane == 0) y[row] = pick;
  }
};

// Columns: x is [outer, n, inner]; thread t = o * inner + i scans x[o, :, i]
// as the host does.
template <typename T>
struct ArgColsBody {
  using C = typename Elem<T>::Compute;
  const T* x;
  int64_t* y;
  int64_t n;
  int64_t inner;
  bool is_max;
  bool last;
  DISTRT_HD void operator()(int64_t t) const {
    int64_t i, o;
    DivMod(t, inner, &o, &i);
    const T* p = x + o * n * inner + i;
    C best = Load(p[0]);
    int64_t index = 0;
    for (int64_t k = 1; k < n; ++k) {
      const C v = Load(p[k * inner]);
      if (ArgBetter(is_max, last, v, best)) {
        best = v;
        index = k;
      }
    }
    y[t] = index;
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_REDUCE_H_

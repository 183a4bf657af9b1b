// Element-wise indexing bodies (host and device): gather_elements,
// scatter_elements and one_hot, with kernels_index.cpp's semantics.
// Indices are i64 or i32; negative ones count from the end.
//
// gather_elements / scatter_elements: every position of the indices
// addresses the data element with the position's own coordinates, the
// index in place of the coordinate at `axis`. An index outside
// [-dim, dim) is the host's OutOfRange error; as for gather (index.h) the
// bodies report it in an ErrorSlot instead (gather_elements writes a zero,
// scatter_elements drops the update) and never touch memory out of bounds.
//
// scatter_elements without a reduction: the host writes in index order, so
// with duplicate offsets the last position wins. The device does the same
// in two passes: ScatterWinnerBody keeps the highest position per target
// (an atomic max, Policy::Max), then ScatterWriteBody lets only that
// position write. With "add" duplicates add through Policy::Add (atomic on
// the device, in no particular order: float sums may round differently
// from the host's index order; integers wrap and match exactly).
#ifndef DISTRT_SRC_PORTABLE_ELEMENTS_H_
#define DISTRT_SRC_PORTABLE_ELEMENTS_H_

#include "portable/device_error.h"
#include "portable/hd.h"

namespace distrt {
namespace portable {

// Index positions mapped to data offsets: positions run over idx_dims
// (row-major); data_strides are data's row-major strides.
struct ElementsMap {
  int rank = 0;
  int axis = 0;
  int64_t dim = 0;  // data's size along axis
  int64_t idx_dims[kMaxDims] = {};
  int64_t data_strides[kMaxDims] = {};
};

// The data offset of position t holding index v, or -1 when v is out of
// range.
DISTRT_HD int64_t ElementOffset(const ElementsMap& m, int64_t t, int64_t v) {
  if (v < -m.dim || v >= m.dim) return -1;
  if (v < 0) v += m.dim;
  int64_t off = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    int64_t q, c;
    DivMod(t, m.idx_dims[d], &q, &c);
    t = q;
    off += (d == m.axis ? v : c) * m.data_strides[d];
  }
  return off;
}

// ElementOffset, or -1 after reporting index `v` out of range as `code`.
DISTRT_HD int64_t OffsetOrReport(const ElementsMap& m, int64_t t, int64_t v,
                                 ErrorSlot* error, DeviceErrorCode code) {
  const int64_t off = ElementOffset(m, t, v);
  if (off < 0) ReportError(error, code, v, m.dim);
  return off;
}

// out[t] = data[offset(t)], moved as U (the element's unsigned word).
template <typename U, typename I>
struct GatherElementsBody {
  const U* data;
  const I* idx;
  U* out;
  ElementsMap map;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t t) const {
    const int64_t off = OffsetOrReport(map, t, static_cast<int64_t>(idx[t]), error,
                                       DeviceErrorCode::kGatherElementsIndex);
    out[t] = off < 0 ? U{} : data[off];
  }
};

// winner[offset(t)] = max(winner[offset(t)], t); winner starts at -1.
template <typename I, typename Policy>
struct ScatterWinnerBody {
  const I* idx;
  long long* winner;
  ElementsMap map;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t t) const {
    const int64_t off = OffsetOrReport(map, t, static_cast<int64_t>(idx[t]), error,
                                       DeviceErrorCode::kScatterElementsIndex);
    if (off >= 0) Policy::Max(winner + off, static_cast<long long>(t));
  }
};

// The host side of ScatterWinnerBody's max: HostFor runs one position at
// a time. (The device's is cuda/atomics.cuh's AtomicMax.)
struct SequentialMax {
  static void Max(long long* p, long long v) {
    if (v > *p) *p = v;
  }
};

// out[offset(t)] = upd[t] where t is the winner of its target.
template <typename U, typename I>
struct ScatterWriteBody {
  const U* upd;
  const I* idx;
  const long long* winner;
  U* out;
  ElementsMap map;
  DISTRT_HD void operator()(int64_t t) const {
    const int64_t off = ElementOffset(map, t, static_cast<int64_t>(idx[t]));
    if (off >= 0 && winner[off] == static_cast<long long>(t)) out[off] = upd[t];
  }
};

// out[offset(t)] += upd[t] through Policy::Add(T*, T).
template <typename T, typename I, typename Policy>
struct ScatterAddElementsBody {
  const T* upd;
  const I* idx;
  T* out;
  ElementsMap map;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t t) const {
    const int64_t off = OffsetOrReport(map, t, static_cast<int64_t>(idx[t]), error,
                                       DeviceErrorCode::kScatterElementsIndex);
    if (off >= 0) Policy::Add(out + off, upd[t]);
  }
};

// one_hot: out [outer, depth, inner] = values[1] where the index of
// [outer, inner] (negative ones + depth) is the depth position, else
// values[0]; an index outside [-depth, depth) gives a row of values[0].
template <typename U, typename I>
struct OneHotBody {
  const I* idx;
  const U* values;  // [off, on]
  U* out;
  int64_t depth, inner;
  DISTRT_HD void operator()(int64_t t) const {
    int64_t r, i, o, k;
    DivMod(t, inner, &r, &i);
    DivMod(r, depth, &o, &k);
    int64_t v = static_cast<int64_t>(idx[o * inner + i]);
    if (v < 0) v += depth;
    out[t] = values[k == v ? 1 : 0];
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_ELEMENTS_H_

// Data-movement bodies (host and device) that map each output element to
// an input element: a strided copy (transpose, expand, slice with any
// steps, and each input of concat), pad, and range. Elements move as
// unsigned words of their size, so one instantiation per element size
// serves every dtype; a copy whose innermost run is contiguous on both
// sides moves up to 16 bytes at a time (MakeCopyMap "widens" the element).
// Semantics are the host kernels' (kernels_shape.cpp).
#ifndef DISTRT_SRC_PORTABLE_LAYOUT_H_
#define DISTRT_SRC_PORTABLE_LAYOUT_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "portable/device_error.h"
#include "portable/hd.h"
#include "portable/math.h"

namespace distrt {
namespace portable {

// The 16-byte copy unit.
struct alignas(16) Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

// An iteration space of `rank` dims (row-major index i) with the source's
// and destination's offset of each index, in copy units.
struct CopyMap {
  int rank = 0;
  int64_t count = 1;  // product of dims
  int64_t dims[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
  int64_t src_base = 0;
  int64_t dst_base = 0;

  DISTRT_HD void Offsets(int64_t i, int64_t* src, int64_t* dst) const {
    int64_t s = src_base, d = dst_base, rest = i;
    for (int k = rank - 1; k > 0; --k) {
      int64_t idx;
      DivMod(rest, dims[k], &rest, &idx);
      s += idx * src_strides[k];
      d += idx * dst_strides[k];
    }
    if (rank > 0) {  // the outermost index is what is left
      s += rest * src_strides[0];
      d += rest * dst_strides[0];
    }
    *src = s;
    *dst = d;
  }
};

// dst[map.dst(i)] = src[map.src(i)], U a copy unit (uint8/16/32/64_t, Bytes16).
template <typename U>
struct CopyBody {
  const U* src;
  U* dst;
  CopyMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t s, d;
    map.Offsets(i, &s, &d);
    dst[d] = src[s];
  }
};

// One dim of a copy: its extent and the source's and destination's stride
// (in elements; a source stride 0 broadcasts, a negative one walks back).
struct CopyDim {
  int64_t extent;
  int64_t src_stride;
  int64_t dst_stride;
};

// The copy of `dims` (outer first) of `elem`-byte elements starting at
// element offsets src_base / dst_base (host-only): drops dims of extent 1,
// merges dims that continue each other on both sides, and widens the copy
// unit (to at most 16 bytes) when the innermost dim is contiguous on both
// sides and every offset and the buffers `src`/`dst` (null: not known yet)
// stay aligned to it. Sets *unit to the unit's bytes. False when more than
// kMaxDims dims remain.
inline bool MakeCopyMap(const std::vector<CopyDim>& dims, int64_t src_base, int64_t dst_base,
                        size_t elem, const void* src, const void* dst, CopyMap* m,
                        size_t* unit) {
  *m = CopyMap();
  *unit = elem;
  std::vector<CopyDim> kept;
  for (const CopyDim& d : dims) {
    m->count *= d.extent;
    if (d.extent == 1) continue;
    if (!kept.empty() && kept.back().src_stride == d.src_stride * d.extent &&
        kept.back().dst_stride == d.dst_stride * d.extent) {
      kept.back() = {kept.back().extent * d.extent, d.src_stride, d.dst_stride};
    } else {
      kept.push_back(d);
    }
  }
  if (kept.size() > static_cast<size_t>(kMaxDims)) return false;
  if (!kept.empty() && kept.back().src_stride == 1 && kept.back().dst_stride == 1) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
    for (size_t w = 16; w > elem; w /= 2) {
      const int64_t k = static_cast<int64_t>(w / elem);
      bool ok = kept.back().extent % k == 0 && src_base % k == 0 && dst_base % k == 0 &&
                addr % w == 0;
      for (size_t d = 0; ok && d + 1 < kept.size(); ++d)
        ok = kept[d].src_stride % k == 0 && kept[d].dst_stride % k == 0;
      if (!ok) continue;
      for (size_t d = 0; d + 1 < kept.size(); ++d) {
        kept[d].src_stride /= k;
        kept[d].dst_stride /= k;
      }
      kept.back().extent /= k;
      src_base /= k;
      dst_base /= k;
      m->count /= k;
      *unit = w;
      break;
    }
  }
  m->rank = static_cast<int>(kept.size());
  for (size_t d = 0; d < kept.size(); ++d) {
    m->dims[d] = kept[d].extent;
    m->src_strides[d] = kept[d].src_stride;
    m->dst_strides[d] = kept[d].dst_stride;
  }
  m->src_base = src_base;
  m->dst_base = dst_base;
  return true;
}

// ---- pad ---------------------------------------------------------------------

enum class PadMode : int { kConstant, kReflect, kEdge };

// Source index along one dim for output index o, or -1 for the pad value
// (the host's PadSource).
DISTRT_HD int64_t PadSourceHD(int64_t o, int64_t begin, int64_t n, PadMode mode) {
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

struct PadMap {
  int rank = 0;
  PadMode mode = PadMode::kConstant;
  int64_t out_dims[kMaxDims] = {};
  int64_t in_dims[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t begin[kMaxDims] = {};  // pads before each dim (negative: cropped)
};

// y = pad(x): each output element from its source element, or `fill` (the
// value attribute converted to the element type, as bits).
template <typename U>
struct PadBody {
  const U* x;
  U* y;
  U fill;
  PadMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t rest = i, off = 0;
    for (int d = map.rank - 1; d >= 0; --d) {
      int64_t o;
      DivMod(rest, map.out_dims[d], &rest, &o);
      const int64_t m = PadSourceHD(o, map.begin[d], map.in_dims[d], map.mode);
      if (m < 0) {
        y[i] = fill;
        return;
      }
      off += m * map.in_strides[d];
    }
    y[i] = x[off];
  }
};

// ---- range -------------------------------------------------------------------

// y[i] = start + i * delta for the `n` elements the output was declared
// with; start/limit/delta are read where they live (device scalars).
// Element 0 also checks what the host kernel checks first: a zero delta,
// and that start/limit/delta give n elements; either is reported in `error`.
template <typename T>
struct RangeBody {
  const T* start;
  const T* limit;
  const T* delta;
  T* y;
  int64_t n;
  ErrorSlot* error;
  DISTRT_HD void operator()(int64_t i) const {
    const T s = *start, d = *delta;
    if (i == 0) {
      const T l = *limit;
      if (d == T(0)) {
        ReportError(error, DeviceErrorCode::kRangeDeltaZero, 0, n);
      } else {
        int64_t count;
        if constexpr (std::is_floating_point<T>::value) {
          count = static_cast<int64_t>(Ceil(static_cast<double>(l - s) / d));
        } else {
          const int64_t diff = static_cast<int64_t>(l) - static_cast<int64_t>(s);
          const int64_t dd = static_cast<int64_t>(d);
          count = diff / dd + ((diff % dd != 0 && ((diff < 0) == (dd < 0))) ? 1 : 0);
        }
        if (count < 0) count = 0;
        if (count != n) ReportError(error, DeviceErrorCode::kRangeCount, count, n);
      }
    }
    y[i] = static_cast<T>(s + static_cast<T>(i) * d);
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_LAYOUT_H_

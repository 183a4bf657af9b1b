// How reductions, argmax/argmin and softmax-like row ops read their axis
// attributes: one copy for the host kernels and the device kernels, so that
// both accept the same programs and name the same errors.
#ifndef DISTRT_SRC_AXIS_GEOMETRY_H_
#define DISTRT_SRC_AXIS_GEOMETRY_H_

#include <algorithm>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace distrt {

// A tensor seen as [outer, n, inner] around one of its axes.
struct AxisSplit {
  int64_t axis = 0;
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit SplitAround(const Shape& shape, int64_t axis) {
  AxisSplit s;
  s.axis = axis;
  s.n = shape[static_cast<size_t>(axis)];
  for (size_t i = 0; i < shape.size(); ++i) {
    if (static_cast<int64_t>(i) < axis) s.outer *= shape[i];
    if (static_cast<int64_t>(i) > axis) s.inner *= shape[i];
  }
  return s;
}

// Attribute "axis" (default `default_axis`, negative counts from the end)
// of `op` over a tensor of `shape`; a rank-0 tensor has no axis.
inline Status ReadAxisSplit(const AttrReader& attrs, int64_t default_axis, const std::string& op,
                            const Shape& shape, AxisSplit* split) {
  int64_t axis;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", default_axis, &axis));
  if (shape.empty()) return InvalidArgumentError(op, " of a rank-0 tensor");
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(axis, static_cast<int>(shape.size()), &axis));
  *split = SplitAround(shape, axis);
  return OkStatus();
}

// Reductions: sorted distinct axes ("axes" absent or empty: all of them)
// and the result's shape (reduced dims kept as 1 when "keepdims", default 1).
inline Status ReduceShape(const AttrReader& attrs, const Shape& in, std::vector<int64_t>* axes,
                          Shape* out) {
  std::vector<int64_t> raw;
  bool present;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("axes", &raw, &present));
  int64_t keepdims;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("keepdims", 1, &keepdims));
  const int r = static_cast<int>(in.size());
  axes->clear();
  if (raw.empty()) {
    for (int i = 0; i < r; ++i) axes->push_back(i);
  } else {
    for (int64_t a : raw) {
      int64_t n;
      DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, r, &n));
      axes->push_back(n);
    }
    std::sort(axes->begin(), axes->end());
    if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) {
      return InvalidArgumentError("axes list an axis twice");
    }
  }
  out->clear();
  for (int i = 0; i < r; ++i) {
    if (!std::binary_search(axes->begin(), axes->end(), i)) {
      out->push_back(in[static_cast<size_t>(i)]);
    } else if (keepdims) {
      out->push_back(1);
    }
  }
  return OkStatus();
}

// argmax / argmin: the axis ("axis", default 0) and the i64 result's shape
// ("keepdims", default 1).
inline Status ArgShape(const AttrReader& attrs, const Shape& in, int64_t* axis, Shape* out) {
  int64_t a, keepdims;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("axis", 0, &a));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("keepdims", 1, &keepdims));
  DISTRT_RETURN_IF_ERROR(NormalizeAxis(a, static_cast<int>(in.size()), axis));
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (static_cast<int64_t>(i) != *axis) {
      out->push_back(in[i]);
    } else if (keepdims) {
      out->push_back(1);
    }
  }
  return OkStatus();
}

}  // namespace distrt

#endif  // DISTRT_SRC_AXIS_GEOMETRY_H_

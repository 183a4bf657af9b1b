//===- TensorComparison.cpp - compare a result with what was expected -----===//
#include "distopt/Check/TensorComparison.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace distopt;

static bool readAsDouble(const distrt::Tensor &t, int64_t i, double &out) {
  switch (t.dtype()) {
  case distrt::DType::kF32:
    out = t.data<float>()[i];
    return true;
  case distrt::DType::kF64:
    out = t.data<double>()[i];
    return true;
  case distrt::DType::kI64:
    out = static_cast<double>(t.data<int64_t>()[i]);
    return true;
  case distrt::DType::kI32:
    out = t.data<int32_t>()[i];
    return true;
  case distrt::DType::kI16:
    out = t.data<int16_t>()[i];
    return true;
  case distrt::DType::kF16:
    out = distrt::HalfToFloat(t.data<distrt::f16_t>()[i].bits);
    return true;
  case distrt::DType::kBF16:
    out = distrt::BF16ToFloat(t.data<distrt::bf16_t>()[i].bits);
    return true;
  case distrt::DType::kBool:
  case distrt::DType::kU8:
    out = t.data<uint8_t>()[i];
    return true;
  case distrt::DType::kI8:
    out = t.data<int8_t>()[i];
    return true;
  case distrt::DType::kU16:
    out = t.data<uint16_t>()[i];
    return true;
  case distrt::DType::kU32:
    out = t.data<uint32_t>()[i];
    return true;
  case distrt::DType::kU64:
    out = static_cast<double>(t.data<uint64_t>()[i]);
    return true;
  default:
    return false;
  }
}

Comparison distopt::compareTensors(const distrt::Tensor &actual,
                                   const distrt::Tensor &expected, double rtol,
                                   double atol) {
  Comparison c;
  if (actual.shape() != expected.shape()) {
    c.ok = false;
    c.message = "shape " + distrt::ShapeToString(actual.shape()) +
                " differs from expected " +
                distrt::ShapeToString(expected.shape());
    return c;
  }
  if (actual.dtype() != expected.dtype()) {
    c.ok = false;
    c.message = "dtype " + distrt::DTypeName(actual.dtype()) +
                " differs from expected " + distrt::DTypeName(expected.dtype());
    return c;
  }
  bool exact = !distrt::IsFloat(expected.dtype());
  // Integers compare by their bytes: a double cannot tell apart i64 or u64
  // values above 2^53.
  bool bytewise = distrt::IsInteger(expected.dtype());
  size_t width = distrt::DTypeSize(expected.dtype());
  int64_t n = expected.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double a, e;
    if (!readAsDouble(actual, i, a) || !readAsDouble(expected, i, e)) {
      c.ok = false;
      c.message = "cannot compare dtype " + distrt::DTypeName(actual.dtype());
      return c;
    }
    if (std::isnan(e) && std::isnan(a))
      continue;
    if (std::isinf(e) && a == e)
      continue;
    double diff = std::fabs(a - e);
    c.maxAbs = std::max(c.maxAbs, diff);
    if (e != 0)
      c.maxRel = std::max(c.maxRel, diff / std::fabs(e));
    bool bad = bytewise ? std::memcmp(static_cast<const char *>(actual.raw()) +
                                          i * width,
                                      static_cast<const char *>(expected.raw()) +
                                          i * width,
                                      width) != 0
               : exact ? diff != 0
                       : !(diff <= atol + rtol * std::fabs(e));
    if (bad && c.ok) {
      c.ok = false;
      c.message = "element " + std::to_string(i) + ": got " +
                  std::to_string(a) + ", expected " + std::to_string(e);
    }
  }
  return c;
}

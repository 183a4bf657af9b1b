// cast: conversion between every pair of dtypes.
#include <cmath>
#include <limits>

#include "kernel_util.h"
#include "via_f32.h"

namespace distrt {
namespace {

// Element i of a source buffer as a "wide" value: double for floats (the
// 16-bit ones loaded through their element trait), int64 for
// integers/bool.
template <typename S>
auto ReadWide(const S* p, int64_t i) {
  auto v = portable::Load(p[i]);
  if constexpr (std::is_floating_point<decltype(v)>::value) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same<decltype(v), uint64_t>::value) {
    return v;  // int64 would turn values from 2^63 on negative
  } else {
    return static_cast<int64_t>(v);
  }
}

template <typename I>
I FloatToInt(double x) {
  if constexpr (std::is_unsigned<I>::value && sizeof(I) >= 4) {
    // u32/u64: in [0, 2^64) truncate (and wrap to u32); otherwise through
    // i64, as numpy does on x86.
    if (x >= 0 && x < 18446744073709551616.0) return static_cast<I>(static_cast<uint64_t>(x));
    return static_cast<I>(static_cast<uint64_t>(FloatToInt<int64_t>(x)));
  } else if constexpr (sizeof(I) >= 4) {
    // In range: truncate. NaN / out of range: the type's minimum (what x86
    // conversions, and so numpy, produce).
    if (x >= static_cast<double>(std::numeric_limits<I>::min()) &&
        x < -static_cast<double>(std::numeric_limits<I>::min())) {
      return static_cast<I>(x);
    }
    return std::numeric_limits<I>::min();
  } else {
    // Narrow types go through int32 and wrap, like numpy.
    int32_t v = FloatToInt<int32_t>(x);
    return static_cast<I>(static_cast<uint32_t>(v));
  }
}

template <typename D, typename W>
D Convert(W v, bool dst_bool) {
  if constexpr (std::is_same<D, uint8_t>::value) {
    if (dst_bool) return static_cast<D>(v != 0);
  }
  using Compute = typename portable::Elem<D>::Compute;
  if constexpr (!std::is_same<D, Compute>::value) {  // f16, bf16: via f32
    return portable::Store<D>(static_cast<Compute>(v));
  } else if constexpr (std::is_floating_point<D>::value) {
    return static_cast<D>(v);
  } else if constexpr (std::is_floating_point<W>::value) {
    return FloatToInt<D>(v);
  } else {
    return static_cast<D>(static_cast<std::make_unsigned_t<D>>(v));  // wraps
  }
}

template <typename S, typename D>
void CastLoop(const void* src, void* dst, int64_t n, bool dst_bool) {
  const S* s = static_cast<const S*>(src);
  D* d = static_cast<D*>(dst);
  if constexpr (std::is_same<S, float>::value && std::is_same<D, float>::value) {
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = Convert<D>(ReadWide(s, i), dst_bool);
  }
}

#define DISTRT_ALL_TYPES_(dtype, ...)                                        \
  switch (dtype) {                                                           \
    DISTRT_FLOAT_CASES_(__VA_ARGS__)                                         \
    DISTRT_HALF_CASES_(__VA_ARGS__)                                          \
    DISTRT_INT_CASES_(__VA_ARGS__)                                           \
    DISTRT_CASE_(kBool, uint8_t, __VA_ARGS__)                                \
    default:                                                                 \
      return InvalidArgumentError("cast: invalid dtype ", DTypeName(dtype)); \
  }

template <typename S>
Status CastFrom(const void* src, void* dst, DType dst_dtype, int64_t n) {
  const bool dst_bool = dst_dtype == DType::kBool;
  DISTRT_ALL_TYPES_(dst_dtype, CastLoop<S, T>(src, dst, n, dst_bool));
  return OkStatus();
}

Status RunCast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const TensorType& ot = ctx.output_types[0];
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ot, TensorType{ot.dtype, x.shape()}));
  if (x.dtype() == ot.dtype) return ctx.SetOutput(0, x);
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  return CastBuffer(x.raw(), x.dtype(), out->raw(), ot.dtype, x.num_elements(), ctx.pool);
}

Status VerifyCast(const VerifyContext& ctx) {
  if (ctx.inputs[0].shape != ctx.outputs[0].shape) {
    return InvalidArgumentError("cast changes the shape from ", ShapeToString(ctx.inputs[0].shape),
                                " to ", ShapeToString(ctx.outputs[0].shape));
  }
  return OkStatus();
}

}  // namespace

Status CastBuffer(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                  ThreadPool* pool) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, static_cast<size_t>(n) * DTypeSize(src_dtype));
    return OkStatus();
  }
  // A mixed-precision step casts every weight and gradient: these two
  // directions (the same rounding as Convert's) go 8 or 16 elements at a
  // time, over the pool.
  if (src_dtype == DType::kF32 && IsHalfFloat(dst_dtype)) {
    NarrowFromF32(static_cast<const float*>(src), dst, dst_dtype, n, pool);
    return OkStatus();
  }
  if (IsHalfFloat(src_dtype) && dst_dtype == DType::kF32) {
    WidenToF32(src, src_dtype, static_cast<float*>(dst), n, pool);
    return OkStatus();
  }
  if (src_dtype == DType::kBool) {  // normalise to 0/1 through uint8
    return CastFrom<uint8_t>(src, dst, dst_dtype, n);
  }
  DISTRT_ALL_TYPES_(src_dtype, return CastFrom<T>(src, dst, dst_dtype, n));
  return OkStatus();
}

void RegisterCastKernels(KernelRegistry& r) {
  KernelDef cast{"cast", 1, 1, 1, RunCast, VerifyCast};
  cast.half_native = true;  // converts every dtype itself
  r.Add(cast);
}

}  // namespace distrt

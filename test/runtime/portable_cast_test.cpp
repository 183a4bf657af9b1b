// The CUDA cast body (portable/cast.h), run on the host by HostFor, against
// the host kernel for every pair of dtypes, byte for byte, on the values
// where conversions differ: NaN, infinities, halves (truncation toward
// zero), the integer types' limits and one past them, values that overflow
// f16 or round in bf16/f32/f64, subnormals.
#include <gtest/gtest.h>

#include <limits>

#include "portable/cast.h"
#include "portable/hd.h"
#include "portable/host_launch.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

template <typename S>
Tensor CastWithBody(const Tensor& x, DType to) {
  Tensor y = Zeros(to, x.shape());
  portable::HostFor(x.num_elements(), portable::CastBody<S>{to, x.data<S>(), y.raw()});
  return y;
}

Tensor CastWithBody(const Tensor& x, DType to) {
  switch (x.dtype()) {
    case DType::kF32:
      return CastWithBody<float>(x, to);
    case DType::kF64:
      return CastWithBody<double>(x, to);
    case DType::kBF16:
      return CastWithBody<bf16_t>(x, to);
    case DType::kF16:
      return CastWithBody<f16_t>(x, to);
    case DType::kI64:
      return CastWithBody<int64_t>(x, to);
    case DType::kI32:
      return CastWithBody<int32_t>(x, to);
    case DType::kI16:
      return CastWithBody<int16_t>(x, to);
    case DType::kI8:
      return CastWithBody<int8_t>(x, to);
    default:  // u8, bool: bytes
      return CastWithBody<uint8_t>(x, to);
  }
}

// The packed body between f32, bf16 and f16 (what cuda/cast.cu launches
// for those pairs), or null for another pair.
template <typename S, typename D>
Tensor PackCast(const Tensor& x, DType to) {
  Tensor y = Zeros(to, x.shape());
  const int64_t n = x.num_elements();
  portable::HostFor((n + portable::kPack - 1) / portable::kPack,
                    portable::FloatCastPackBody<S, D>{x.data<S>(), static_cast<D*>(y.raw()), n});
  return y;
}

template <typename S>
Tensor PackCastFrom(const Tensor& x, DType to) {
  switch (to) {
    case DType::kF32:
      return PackCast<S, float>(x, to);
    case DType::kBF16:
      return PackCast<S, bf16_t>(x, to);
    default:
      return PackCast<S, f16_t>(x, to);
  }
}

Tensor PackCast(const Tensor& x, DType to) {
  switch (x.dtype()) {
    case DType::kF32:
      return PackCastFrom<float>(x, to);
    case DType::kBF16:
      return PackCastFrom<bf16_t>(x, to);
    default:
      return PackCastFrom<f16_t>(x, to);
  }
}

}  // namespace

TEST(PortableCast, FloatPacksMatchHostKernel) {
  // Edge values (NaN, infinities, overflow of f16, subnormals, ties) and
  // random ones, of a count that leaves a partial last pack.
  const DType floats[] = {DType::kF32, DType::kBF16, DType::kF16};
  for (DType from : floats) {
    for (const Tensor& x : {CastEdgeValues(from), RandomOf(from, {301}, 22, 300.0)}) {
      for (DType to : floats) {
        if (to == from) continue;
        SCOPED_TRACE(StrCat(DTypeName(from), " -> ", DTypeName(to)));
        ExpectSameBytes(PackCast(x, to), Run1("cast", {x}, {to, x.shape()}));
      }
    }
  }
}

TEST(PortableCast, EveryPairMatchesHostKernel) {
  for (DType from : AllDTypesForTest()) {
    const Tensor x = CastEdgeValues(from);
    for (DType to : AllDTypesForTest()) {
      if (to == from) continue;  // the kernels share the input's buffer, no body runs
      SCOPED_TRACE(StrCat(DTypeName(from), " -> ", DTypeName(to)));
      ExpectSameBytes(CastWithBody(x, to), Run1("cast", {x}, {to, x.shape()}));
    }
  }
}

TEST(PortableCast, RandomValuesMatchHostKernel) {
  for (DType from : {DType::kF32, DType::kBF16, DType::kI64}) {
    const Tensor x = RandomOf(from, {300}, 21, 300.0);
    for (DType to : AllDTypesForTest()) {
      if (to == from) continue;
      SCOPED_TRACE(StrCat(DTypeName(from), " -> ", DTypeName(to)));
      ExpectSameBytes(CastWithBody(x, to), Run1("cast", {x}, {to, x.shape()}));
    }
  }
}

}  // namespace testing
}  // namespace distrt

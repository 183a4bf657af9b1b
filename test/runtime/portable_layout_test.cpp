// The CUDA data-movement bodies (portable/layout.h), run on the host by
// HostFor, against the host kernels: transpose, expand, slice (negative and
// large steps), concat (negative axis, empty inputs), pad (constant with a
// value, reflect, edge, negative pads) and range, on elements of 1, 2, 4
// and 8 bytes; MakeCopyMap's merging, widening and refusal of too many dims.
#include <gtest/gtest.h>

#include <numeric>

#include "kernel_util.h"  // CastBuffer, Strides
#include "portable/host_launch.h"
#include "portable/layout.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::CopyDim;
using portable::CopyMap;
using portable::HostFor;

// One dtype of each element size.
const DType kSizes[] = {DType::kBool, DType::kBF16, DType::kF32, DType::kI64};

// Runs the copy of `dims` from x into y as the CUDA launcher would:
// MakeCopyMap on the real buffers, then CopyBody of the unit it picked.
void Copy(const std::vector<CopyDim>& dims, int64_t src_base, int64_t dst_base, const Tensor& x,
          Tensor& y, size_t* unit_out = nullptr) {
  CopyMap map;
  size_t unit;
  ASSERT_TRUE(portable::MakeCopyMap(dims, src_base, dst_base, DTypeSize(x.dtype()), x.raw(),
                                    y.raw(), &map, &unit));
  if (unit_out) *unit_out = unit;
  ForCopyUnitHost(unit, [&](auto tag) {
    using U = decltype(tag);
    HostFor(map.count, portable::CopyBody<U>{static_cast<const U*>(x.raw()),
                                             static_cast<U*>(y.raw()), map});
  });
}

Tensor Transposed(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape()[static_cast<size_t>(p)]);
  const std::vector<int64_t> is = Strides(x.shape()), os = Strides(out);
  std::vector<CopyDim> dims;
  for (size_t k = 0; k < perm.size(); ++k) dims.push_back({out[k], is[perm[k]], os[k]});
  Tensor y = Zeros(x.dtype(), out);
  Copy(dims, 0, 0, x, y);
  return y;
}

TEST(PortableLayout, TransposeMatchesHostKernel) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{2, 3, 4, 5}, {0, 2, 1, 3}},  // inner dim kept: rows move widened
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{6, 8}, {1, 0}},
      {{2, 1, 3, 1}, {3, 2, 1, 0}},  // size-1 dims dropped
      {{4, 3, 8}, {1, 0, 2}},
      {{}, {}},                      // a scalar
      {{3, 0, 2}, {2, 0, 1}},        // empty
  };
  for (DType dt : kSizes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(c.shape)));
      const Tensor x = RandomOf(dt, c.shape, 31);
      Shape out;
      for (int64_t p : c.perm) out.push_back(c.shape[static_cast<size_t>(p)]);
      ExpectSameBytes(Transposed(x, c.perm),
                      Run1("transpose", {x}, {dt, out}, {{"perm", AttrInts(c.perm)}}));
    }
  }
}

TEST(PortableLayout, ExpandMatchesHostKernel) {
  const std::pair<Shape, Shape> cases[] = {
      {{3, 1}, {2, 3, 4}}, {{1, 4}, {3, 4}}, {{5}, {2, 1, 5}}, {{1}, {7}}, {{2, 1, 3}, {2, 5, 3}}};
  for (DType dt : kSizes) {
    for (const auto& [in, out] : cases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(in), " -> ", ShapeToString(out)));
      const Tensor x = RandomOf(dt, in, 32);
      const size_t lead = out.size() - in.size();
      const std::vector<int64_t> is = Strides(in), os = Strides(out);
      std::vector<CopyDim> dims;
      for (size_t d = 0; d < out.size(); ++d) {
        const int64_t src = d < lead || in[d - lead] == 1 ? 0 : is[d - lead];
        dims.push_back({out[d], src, os[d]});
      }
      Tensor y = Zeros(dt, out);
      Copy(dims, 0, 0, x, y);
      ExpectSameBytes(y, Run1("expand", {x}, {dt, out}));
    }
  }
}

TEST(PortableLayout, SliceMatchesHostKernel) {
  struct Case {
    Shape in;
    std::vector<int64_t> starts, ends, steps;
    Shape out;
  };
  const Case cases[] = {
      {{4, 6}, {1, 2}, {3, 6}, {1, 1}, {2, 4}},
      {{4, 6}, {3, 5}, {-1, -1}, {-1, -2}, {4, 3}},  // negative steps walk back
      {{5, 8, 3}, {0, 1, 0}, {5, 8, 3}, {2, 3, 1}, {3, 3, 3}},
      {{2, 16}, {0, 4}, {2, 12}, {1, 1}, {2, 8}},    // contiguous rows: widened
      {{3, 4}, {1, 0}, {1, 4}, {1, 1}, {0, 4}},      // empty
  };
  for (DType dt : kSizes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(c.in), " -> ", ShapeToString(c.out)));
      const Tensor x = RandomOf(dt, c.in, 33);
      const std::vector<int64_t> is = Strides(c.in), os = Strides(c.out);
      std::vector<CopyDim> dims;
      int64_t base = 0;
      for (size_t d = 0; d < c.in.size(); ++d) {
        if (c.out[d] > 0) base += c.starts[d] * is[d];
        dims.push_back({c.out[d], is[d] * c.steps[d], os[d]});
      }
      Tensor y = Zeros(dt, c.out);
      Copy(dims, base, 0, x, y);
      ExpectSameBytes(y, Run1("slice", {x}, {dt, c.out},
                              {{"starts", AttrInts(c.starts)},
                               {"ends", AttrInts(c.ends)},
                               {"steps", AttrInts(c.steps)}}));
    }
  }
}

TEST(PortableLayout, ConcatMatchesHostKernel) {
  for (DType dt : kSizes) {
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " axis ", axis));
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      std::vector<Tensor> ins;
      Shape out = {2, 3, 4};
      out[ax] = 0;
      for (int64_t k : {2, 0, 3, 1}) {  // an empty input among them
        Shape s = {2, 3, 4};
        s[ax] = k;
        ins.push_back(RandomOf(dt, s, 34 + static_cast<uint32_t>(k)));
        out[ax] += k;
      }
      Tensor y = Zeros(dt, out);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < 3; ++d) {
        if (d < ax) outer *= out[d];
        if (d > ax) inner *= out[d];
      }
      int64_t col = 0;
      for (const Tensor& in : ins) {  // as kernels_layout.cpp: two dims per input
        const int64_t row = in.dim(static_cast<int>(ax)) * inner;
        if (row > 0) Copy({{outer, row, out[ax] * inner}, {row, 1, 1}}, 0, col, in, y);
        col += row;
      }
      ExpectSameBytes(y, Run1("concat", ins, {dt, out}, {{"axis", AttrInt(axis)}}));
    }
  }
}

TEST(PortableLayout, PadMatchesHostKernel) {
  struct Case {
    const char* mode;
    Shape in;
    std::vector<int64_t> pads;
  };
  const Case cases[] = {
      {"constant", {2, 3}, {1, 2, 0, 1}},
      {"constant", {2, 5}, {0, -1, 1, -2}},  // negative pads crop
      {"reflect", {3, 4}, {2, 5, 1, 6}},     // pads longer than the dim wrap
      {"reflect", {1, 4}, {2, 1, 0, 0}},
      {"edge", {2, 3, 2}, {1, 0, 2, 0, 3, 1}},
      {"constant", {0, 3}, {1, 0, 1, 0}},   // nothing but padding
      {"edge", {}, {}},                     // a scalar
  };
  for (DType dt : kSizes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", c.mode, " ", ShapeToString(c.in)));
      const Tensor x = RandomOf(dt, c.in, 35);
      const size_t r = c.in.size();
      portable::PadMap map;
      map.rank = static_cast<int>(r);
      map.mode = std::string(c.mode) == "constant" ? portable::PadMode::kConstant
                 : std::string(c.mode) == "reflect" ? portable::PadMode::kReflect
                                                    : portable::PadMode::kEdge;
      Shape out(r);
      const std::vector<int64_t> is = Strides(c.in);
      for (size_t d = 0; d < r; ++d) {
        out[d] = c.in[d] + c.pads[d] + c.pads[d + r];
        map.out_dims[d] = out[d];
        map.in_dims[d] = c.in[d];
        map.in_strides[d] = is[d];
        map.begin[d] = c.pads[d];
      }
      const double value = 1.75;
      uint8_t fill[8] = {0};
      ASSERT_TRUE(CastBuffer(&value, DType::kF64, fill, dt, 1).ok());
      Tensor y = Zeros(dt, out);
      ForCopyUnitHost(DTypeSize(dt), [&](auto tag) {
        using U = decltype(tag);
        portable::PadBody<U> body{static_cast<const U*>(x.raw()), static_cast<U*>(y.raw()), U{},
                                  map};
        std::memcpy(&body.fill, fill, sizeof(U));
        HostFor(y.num_elements(), body);
      });
      ExpectSameBytes(y, Run1("pad", {x}, {dt, out},
                              {{"pads", AttrInts(c.pads)},
                               {"mode", AttrString(c.mode)},
                               {"value", AttrFloat(value)}}));
    }
  }
}

template <typename T>
void CheckRange(T start, T limit, T delta) {
  SCOPED_TRACE(StrCat(DTypeName(DTypeOf<T>::value), " ", +start, " ", +limit, " ", +delta));
  const Tensor s = Tensor::Scalar(start), l = Tensor::Scalar(limit), d = Tensor::Scalar(delta);
  // The length, computed independently (the host kernel fails unless the
  // declared one is right).
  const double span = static_cast<double>(limit) - static_cast<double>(start);
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(span / delta)));
  const Tensor want = Run1("range", {s, l, d}, {DTypeOf<T>::value, {n}});
  Tensor y = Zeros(DTypeOf<T>::value, {n});
  portable::ErrorSlot slot{0, 0, 0};
  HostFor(n, portable::RangeBody<T>{&start, &limit, &delta, y.data<T>(), n, &slot});
  EXPECT_EQ(slot.code, 0);
  ExpectSameBytes(y, want);
  // A declared length the scalars do not give is reported.
  if (n > 0) {
    Tensor z = Zeros(DTypeOf<T>::value, {n - 1});
    HostFor(n - 1, portable::RangeBody<T>{&start, &limit, &delta, z.data<T>(), n - 1, &slot});
    if (n > 1) {
      EXPECT_EQ(slot.code, static_cast<int64_t>(portable::DeviceErrorCode::kRangeCount));
      EXPECT_EQ(slot.value, n);
      EXPECT_EQ(slot.bound, n - 1);
    }
  }
}

TEST(PortableLayout, RangeMatchesHostKernel) {
  CheckRange<float>(0.5f, 7.25f, 0.75f);
  CheckRange<float>(3.0f, -2.0f, -0.5f);
  CheckRange<double>(-1.0, 1.0, 0.1);
  CheckRange<int64_t>(-7, 20, 3);
  CheckRange<int64_t>(10, -3, -4);
  CheckRange<int32_t>(5, 5, 1);  // empty
  CheckRange<int16_t>(100, -50, -7);
  // A zero delta is reported.
  const int32_t zero = 0, one = 1;
  int32_t y[2];
  portable::ErrorSlot slot{0, 0, 0};
  HostFor(2, portable::RangeBody<int32_t>{&one, &one, &zero, y, 2, &slot});
  EXPECT_EQ(slot.code, static_cast<int64_t>(portable::DeviceErrorCode::kRangeDeltaZero));
}

TEST(PortableLayout, CopyMapMergesWidensAndRefuses) {
  CopyMap map;
  size_t unit;
  // A contiguous [4, 6] f32 block into a [4, 10] row pitch at column 2:
  // rows of 6 floats are 24 bytes, so 8-byte units (2 floats).
  ASSERT_TRUE(portable::MakeCopyMap({{4, 6, 10}, {6, 1, 1}}, 0, 2, 4, nullptr, nullptr, &map,
                                    &unit));
  EXPECT_EQ(unit, 8u);
  EXPECT_EQ(map.rank, 2);
  EXPECT_EQ(map.dims[1], 3);
  EXPECT_EQ(map.dst_base, 1);
  EXPECT_EQ(map.count, 12);
  // A whole contiguous tensor merges to one dim and moves in 16-byte units.
  ASSERT_TRUE(portable::MakeCopyMap({{2, 12, 12}, {3, 4, 4}, {4, 1, 1}}, 0, 0, 4, nullptr,
                                    nullptr, &map, &unit));
  EXPECT_EQ(map.rank, 1);
  EXPECT_EQ(unit, 16u);
  EXPECT_EQ(map.count, 6);
  // A misaligned buffer keeps the element.
  alignas(16) uint8_t buf[64] = {};
  ASSERT_TRUE(portable::MakeCopyMap({{8, 1, 1}}, 0, 0, 4, buf + 4, buf, &map, &unit));
  EXPECT_EQ(unit, 4u);
  // Nine dims that cannot merge (a transpose of 2s) are refused.
  std::vector<CopyDim> nine;
  for (int d = 0; d < 9; ++d) nine.push_back({2, int64_t{1} << d, int64_t{1} << (8 - d)});
  EXPECT_FALSE(portable::MakeCopyMap(nine, 0, 0, 4, nullptr, nullptr, &map, &unit));
}

}  // namespace
}  // namespace testing
}  // namespace distrt

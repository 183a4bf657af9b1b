// The CUDA gather_elements / scatter_elements / one_hot bodies
// (portable/elements.h), run on the host by HostFor with sequential
// policies, against the host kernels: every axis (negative too), indices
// smaller than data outside the axis, i64 and i32 indices with negative
// ones, duplicates (the last position wins without a reduction; "add"
// sums), several dtypes, empty indices, and out-of-range indices (zeros /
// dropped updates and a reported error where the host returns OutOfRange).
#include <gtest/gtest.h>

#include "portable/elements.h"
#include "portable/host_launch.h"
#include "portable/index.h"  // SequentialAdd
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::ElementsMap;
using portable::ErrorSlot;
using portable::HostFor;

ElementsMap MapOf(const Shape& data, const Shape& idx, int64_t axis) {
  ElementsMap m;
  m.rank = static_cast<int>(data.size());
  m.axis = static_cast<int>(axis < 0 ? axis + m.rank : axis);
  m.dim = data[static_cast<size_t>(m.axis)];
  int64_t stride = 1;
  for (int d = m.rank - 1; d >= 0; --d) {
    m.idx_dims[d] = idx[d];
    m.data_strides[d] = stride;
    stride *= data[d];
  }
  return m;
}

Tensor Indices(DType dt, const Shape& shape, const std::vector<int64_t>& v) {
  return dt == DType::kI64 ? I64(shape, v) : I32(shape, std::vector<int32_t>(v.begin(), v.end()));
}

// Indices in [-dim, dim) for every position, many repeating.
std::vector<int64_t> SomeIndices(int64_t n, int64_t dim, int64_t salt) {
  std::vector<int64_t> v;
  for (int64_t j = 0; j < n; ++j) v.push_back((j * 5 + salt) % (2 * dim) - dim);
  return v;
}

template <typename F>
void ForIndex(DType dt, F&& f) {
  if (dt == DType::kI64) f(int64_t{}); else f(int32_t{});
}

template <typename F>
void ForUnit(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: ADD_FAILURE() << "no unit of " << bytes;
  }
}

Tensor GatherElementsWithBody(const Tensor& data, const Tensor& idx, int64_t axis,
                              ErrorSlot* slot) {
  Tensor y = Zeros(data.dtype(), idx.shape());
  const ElementsMap m = MapOf(data.shape(), idx.shape(), axis);
  ForUnit(DTypeSize(data.dtype()), [&](auto utag) {
    using U = decltype(utag);
    ForIndex(idx.dtype(), [&](auto itag) {
      using I = decltype(itag);
      HostFor(idx.num_elements(),
              portable::GatherElementsBody<U, I>{static_cast<const U*>(data.raw()),
                                                 idx.data<I>(), static_cast<U*>(y.raw()), m,
                                                 slot});
    });
  });
  return y;
}

// scatter_elements "none" (two passes) or "add", as the CUDA kernel runs
// them.
Tensor ScatterElementsWithBody(const Tensor& data, const Tensor& idx, const Tensor& upd,
                               int64_t axis, bool add, ErrorSlot* slot) {
  Tensor y = Zeros(data.dtype(), data.shape());
  if (data.byte_size() > 0) std::memcpy(y.raw(), data.raw(), data.byte_size());
  const ElementsMap m = MapOf(data.shape(), idx.shape(), axis);
  const int64_t n = idx.num_elements();
  if (add) {
    auto run = [&](auto ttag) {
      using T = decltype(ttag);
      ForIndex(idx.dtype(), [&](auto itag) {
        using I = decltype(itag);
        HostFor(n, portable::ScatterAddElementsBody<T, I, portable::SequentialAdd>{
                       upd.data<T>(), idx.data<I>(), y.data<T>(), m, slot});
      });
    };
    switch (data.dtype()) {
      case DType::kF32: run(float{}); break;
      case DType::kF64: run(double{}); break;
      case DType::kI64: run(int64_t{}); break;
      case DType::kI32: run(int32_t{}); break;
      default: ADD_FAILURE() << "no add for " << DTypeName(data.dtype());
    }
    return y;
  }
  std::vector<long long> winner(static_cast<size_t>(data.num_elements()), -1);
  ForUnit(DTypeSize(data.dtype()), [&](auto utag) {
    using U = decltype(utag);
    ForIndex(idx.dtype(), [&](auto itag) {
      using I = decltype(itag);
      HostFor(n, portable::ScatterWinnerBody<I, portable::SequentialMax>{idx.data<I>(),
                                                                         winner.data(), m, slot});
      HostFor(n, portable::ScatterWriteBody<U, I>{static_cast<const U*>(upd.raw()), idx.data<I>(),
                                                  winner.data(), static_cast<U*>(y.raw()), m});
    });
  });
  return y;
}

struct Case {
  Shape data;
  int64_t axis;
  Shape idx;
};

const Case kCases[] = {
    {{4, 5}, 0, {3, 5}},        // more updates than data along the axis: duplicates
    {{4, 5}, 1, {4, 7}},
    {{4, 5}, -1, {2, 3}},       // indices smaller than data elsewhere
    {{3, 4, 6}, 1, {2, 9, 5}},  // axis in the middle
    {{3, 4, 6}, -3, {5, 4, 6}},
    {{6}, 0, {10}},
    {{4, 5}, 0, {0, 5}},        // no indices
};

TEST(PortableElements, GatherElementsMatchesHostKernel) {
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF64, DType::kI32, DType::kBool}) {
      for (const Case& c : kCases) {
        SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(c.data), " axis ", c.axis, " ",
                            ShapeToString(c.idx), " ", DTypeName(idt)));
        const Tensor data = RandomOf(dt, c.data, 31);
        const int64_t dim = c.data[static_cast<size_t>(c.axis < 0 ? c.axis + c.data.size() : c.axis)];
        const Tensor idx = Indices(idt, c.idx, SomeIndices(NumElements(c.idx), dim, 3));
        ErrorSlot slot{0, 0, 0};
        ExpectSameBytes(GatherElementsWithBody(data, idx, c.axis, &slot),
                        Run1("gather_elements", {data, idx}, {dt, c.idx},
                             {{"axis", AttrInt(c.axis)}}));
        EXPECT_EQ(slot.code, 0);
      }
    }
  }
}

TEST(PortableElements, ScatterElementsNoneAndAddMatchHostKernel) {
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI64,
                     DType::kI32}) {
      for (const Case& c : kCases) {
        for (bool add : {false, true}) {
          // The CUDA kernel leaves 16-bit "add" to the host (f32 sums).
          if (add && (dt == DType::kBF16 || dt == DType::kF16)) continue;
          SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(c.data), " axis ", c.axis, " ",
                              ShapeToString(c.idx), " ", DTypeName(idt), add ? " add" : " none"));
          const Tensor data = RandomOf(dt, c.data, 32);
          const Tensor upd = RandomOf(dt, c.idx, 33);
          const int64_t dim =
              c.data[static_cast<size_t>(c.axis < 0 ? c.axis + c.data.size() : c.axis)];
          const Tensor idx = Indices(idt, c.idx, SomeIndices(NumElements(c.idx), dim, 1));
          ErrorSlot slot{0, 0, 0};
          ExpectSameBytes(
              ScatterElementsWithBody(data, idx, upd, c.axis, add, &slot),
              Run1("scatter_elements", {data, idx, upd}, data.type(),
                   {{"axis", AttrInt(c.axis)}, {"reduction", AttrString(add ? "add" : "none")}}));
          EXPECT_EQ(slot.code, 0);
        }
      }
    }
  }
}

TEST(PortableElements, ScatterElementsLastDuplicateWins) {
  // Independently of the host kernel: positions 0, 2 and 3 all target 1.
  const Tensor data = F32({4}, {0, 0, 0, 0});
  const Tensor idx = I64({4}, {1, 0, -3, 1});
  const Tensor upd = F32({4}, {10, 20, 30, 40});
  ErrorSlot slot{0, 0, 0};
  const Tensor y = ScatterElementsWithBody(data, idx, upd, 0, false, &slot);
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{20, 40, 0, 0}));
  const Tensor s = ScatterElementsWithBody(data, idx, upd, 0, true, &slot);
  EXPECT_EQ(s.ToVector<float>(), (std::vector<float>{20, 80, 0, 0}));
}

TEST(PortableElements, OutOfRangeIndicesAreReported) {
  const Tensor data = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  for (int64_t bad : {int64_t{3}, int64_t{-4}, int64_t{1} << 40}) {
    SCOPED_TRACE(bad);
    const Tensor idx = I64({2, 2}, {0, bad, -1, 2});
    std::vector<Tensor> outs;
    EXPECT_EQ(RunOp("gather_elements", {data, idx}, {{DType::kF32, {2, 2}}},
                    {{"axis", AttrInt(1)}}, &outs).code(),
              StatusCode::kOutOfRange);
    ErrorSlot slot{0, 0, 0};
    const Tensor g = GatherElementsWithBody(data, idx, 1, &slot);
    EXPECT_EQ(g.ToVector<float>(), (std::vector<float>{1, 0, 6, 6}));
    EXPECT_EQ(slot.code, static_cast<int64_t>(portable::DeviceErrorCode::kGatherElementsIndex));
    EXPECT_EQ(slot.value, bad);
    EXPECT_EQ(slot.bound, 3);
    const Tensor upd = F32({2, 2}, {10, 20, 30, 40});
    EXPECT_EQ(RunOp("scatter_elements", {data, idx, upd}, {data.type()}, {{"axis", AttrInt(1)}},
                    &outs).code(),
              StatusCode::kOutOfRange);
    for (bool add : {false, true}) {
      ErrorSlot s{0, 0, 0};
      const Tensor y = ScatterElementsWithBody(data, idx, upd, 1, add, &s);
      EXPECT_EQ(y.ToVector<float>(),
                add ? (std::vector<float>{11, 2, 3, 4, 5, 76}) : (std::vector<float>{10, 2, 3, 4, 5, 40}));
      EXPECT_EQ(s.code, static_cast<int64_t>(portable::DeviceErrorCode::kScatterElementsIndex));
      EXPECT_EQ(s.value, bad);
    }
  }
}

Tensor OneHotWithBody(const Tensor& idx, const Tensor& values, int64_t depth, int64_t axis) {
  const int64_t rank = idx.rank();
  if (axis < 0) axis += rank + 1;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= idx.dim(static_cast<int>(d));
  Shape out = idx.shape();
  out.insert(out.begin() + axis, depth);
  Tensor y = Zeros(values.dtype(), out);
  ForUnit(DTypeSize(values.dtype()), [&](auto utag) {
    using U = decltype(utag);
    ForIndex(idx.dtype(), [&](auto itag) {
      using I = decltype(itag);
      HostFor(outer * depth * inner,
              portable::OneHotBody<U, I>{idx.data<I>(), static_cast<const U*>(values.raw()),
                                         static_cast<U*>(y.raw()), depth, inner});
    });
  });
  return y;
}

TEST(PortableElements, OneHotMatchesHostKernel) {
  // In range, negative, and out of range both ways (a row of `off`).
  const std::vector<int64_t> ids = {0, 3, -1, -4, 4, -5, 2, 1, 7, -2, 0, 3};
  const Tensor f32 = F32({2}, {-1.5f, 2.0f});
  const Tensor i64 = I64({2}, {0, 1});
  Tensor bf16_values = Zeros(DType::kBF16, {2});
  ASSERT_TRUE(CastBuffer(f32.raw(), DType::kF32, bf16_values.raw(), DType::kBF16, 2).ok());
  const Tensor& bf16 = bf16_values;
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (const Tensor* values : {&f32, &i64, &bf16}) {
      for (const Shape& shape : {Shape{12}, Shape{3, 4}, Shape{2, 3, 2}, Shape{0, 4}}) {
        const Tensor idx = Indices(idt, shape, std::vector<int64_t>(ids.begin(),
                                                                    ids.begin() + NumElements(shape)));
        for (int64_t axis = -1; axis <= static_cast<int64_t>(shape.size()); ++axis) {
          SCOPED_TRACE(StrCat(DTypeName(values->dtype()), " ", ShapeToString(shape), " axis ",
                              axis, " ", DTypeName(idt)));
          Shape out = shape;
          out.insert(out.begin() + (axis < 0 ? axis + shape.size() + 1 : axis), 4);
          ExpectSameBytes(OneHotWithBody(idx, *values, 4, axis),
                          Run1("one_hot", {idx, *values}, {values->dtype(), out},
                               {{"depth", AttrInt(4)}, {"axis", AttrInt(axis)}}));
        }
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

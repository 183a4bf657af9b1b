// The CUDA gather / scatter_add bodies (portable/index.h), run on the host
// by HostFor, against the host kernels: axes (negative too), i64 and i32
// indices with negative ones, slices moved in widened units, duplicate
// indices, 16-bit floats and integers, and out-of-range indices (zeros /
// dropped updates and a reported error where the host returns OutOfRange).
#include <gtest/gtest.h>

#include "portable/host_launch.h"
#include "portable/index.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::ErrorSlot;
using portable::HostFor;

struct View {
  int64_t outer = 1, dim = 0, inner = 1, n = 0;
  Shape out;
};

View ViewOf(const Shape& data, const Shape& idx, int64_t axis) {
  View v;
  const int64_t r = static_cast<int64_t>(data.size());
  if (axis < 0) axis += r;
  for (int64_t d = 0; d < r; ++d) {
    if (d < axis) v.outer *= data[d];
    if (d > axis) v.inner *= data[d];
  }
  v.dim = data[axis];
  v.n = NumElements(idx);
  v.out.assign(data.begin(), data.begin() + axis);
  v.out.insert(v.out.end(), idx.begin(), idx.end());
  v.out.insert(v.out.end(), data.begin() + axis + 1, data.end());
  return v;
}

Tensor Indices(DType dt, const Shape& shape, const std::vector<int64_t>& v) {
  return dt == DType::kI64 ? I64(shape, v) : I32(shape, std::vector<int32_t>(v.begin(), v.end()));
}

// gather through the body with the copy unit the CUDA kernel would pick for
// `unit_bytes` (a multiple of the element that divides the slice).
Tensor GatherWithBody(const Tensor& data, const Tensor& idx, int64_t axis, size_t unit,
                      ErrorSlot* slot) {
  const View v = ViewOf(data.shape(), idx.shape(), axis);
  Tensor y = Zeros(data.dtype(), v.out);
  const int64_t units = v.inner * static_cast<int64_t>(DTypeSize(data.dtype())) /
                        static_cast<int64_t>(unit);
  ForCopyUnitHost(unit, [&](auto utag) {
    using U = decltype(utag);
    auto run = [&](auto itag) {
      using I = decltype(itag);
      HostFor(v.outer * v.n * units,
              portable::GatherBody<U, I>{static_cast<const U*>(data.raw()), idx.data<I>(),
                                         static_cast<U*>(y.raw()), v.n, v.dim, units, slot});
    };
    if (idx.dtype() == DType::kI64) run(int64_t{}); else run(int32_t{});
  });
  return y;
}

TEST(PortableIndex, GatherMatchesHostKernel) {
  struct Case {
    DType dt;
    Shape data;
    int64_t axis;
    Shape idx;
    size_t unit;  // bytes per move
  };
  const Case cases[] = {
      {DType::kF32, {10, 8}, 0, {2, 3}, 16},   // embedding rows, 16-byte units
      {DType::kF32, {10, 8}, 0, {2, 3}, 4},
      {DType::kF32, {4, 5, 3}, 1, {6}, 4},
      {DType::kBF16, {4, 5, 3}, -1, {2, 2}, 2},
      {DType::kF16, {6, 4}, 0, {5}, 8},
      {DType::kI64, {3, 7}, -1, {4}, 8},
      {DType::kBool, {5, 4}, 0, {3}, 4},
      {DType::kF64, {5}, 0, {}, 8},           // a scalar index
      {DType::kF32, {5, 4}, 0, {0}, 4},       // no indices
  };
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(StrCat(DTypeName(c.dt), " ", ShapeToString(c.data), " axis ", c.axis,
                          " unit ", c.unit, " ", DTypeName(idt)));
      const Tensor data = RandomOf(c.dt, c.data, 41);
      const View v = ViewOf(c.data, c.idx, c.axis);
      std::vector<int64_t> ids;
      for (int64_t j = 0; j < v.n; ++j) ids.push_back((j * 7 + 3) % (2 * v.dim) - v.dim);
      const Tensor idx = Indices(idt, c.idx, ids);
      ErrorSlot slot{0, 0, 0};
      ExpectSameBytes(GatherWithBody(data, idx, c.axis, c.unit, &slot),
                      Run1("gather", {data, idx}, {c.dt, v.out}, {{"axis", AttrInt(c.axis)}}));
      EXPECT_EQ(slot.code, 0);
    }
  }
}

TEST(PortableIndex, GatherOutOfRangeWritesZerosAndReports) {
  const Tensor data = RandomOf(DType::kF32, {4, 3}, 42);
  for (int64_t bad : {int64_t{4}, int64_t{-5}, int64_t{1} << 40}) {
    SCOPED_TRACE(bad);
    const Tensor idx = I64({3}, {1, bad, -1});
    std::vector<Tensor> outs;
    Status st = RunOp("gather", {data, idx}, {{DType::kF32, {3, 3}}}, {}, &outs);
    EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
    ErrorSlot slot{0, 0, 0};
    const Tensor y = GatherWithBody(data, idx, 0, 4, &slot);
    EXPECT_EQ(slot.code, static_cast<int64_t>(portable::DeviceErrorCode::kGatherIndex));
    EXPECT_EQ(slot.value, bad);
    EXPECT_EQ(slot.bound, 4);
    const float* d = data.data<float>();
    const float* g = y.data<float>();
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(g[c], d[3 + c]);
      EXPECT_EQ(g[3 + c], 0.0f);
      EXPECT_EQ(g[6 + c], d[9 + c]);
    }
  }
}

template <typename T>
Tensor ScatterAddWithBody(const Tensor& base, const Tensor& idx, const Tensor& upd, int64_t axis,
                          ErrorSlot* slot) {
  const View v = ViewOf(base.shape(), idx.shape(), axis);
  Tensor y = base.Clone();
  auto run = [&](auto itag) {
    using I = decltype(itag);
    HostFor(v.outer * v.n * v.inner,
            portable::ScatterAddBody<T, I, portable::SequentialAdd>{
                upd.data<T>(), idx.data<I>(), y.data<T>(), v.n, v.dim, v.inner, slot});
  };
  if (idx.dtype() == DType::kI64) run(int64_t{}); else run(int32_t{});
  return y;
}

// HostFor adds in index order, as the host kernel does: equal bytes, f16 and
// bf16 rounding once per addition included.
template <typename T>
void CheckScatterAdd(DType dt) {
  struct Case {
    Shape base;
    int64_t axis;
    Shape idx;
  };
  const Case cases[] = {{{6, 4}, 0, {9}}, {{3, 5, 2}, 1, {2, 4}}, {{4, 3}, -1, {7}},
                        {{5}, 0, {}},     {{5, 2}, 0, {0}}};
  for (DType idt : {DType::kI64, DType::kI32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(StrCat(DTypeName(dt), " ", ShapeToString(c.base), " axis ", c.axis, " ",
                          DTypeName(idt)));
      const Tensor base = RandomOf(dt, c.base, 43);
      const View v = ViewOf(c.base, c.idx, c.axis);
      std::vector<int64_t> ids;  // duplicates and negatives
      for (int64_t j = 0; j < v.n; ++j) ids.push_back((j * 5) % 3 - (j % 2) * v.dim);
      const Tensor idx = Indices(idt, c.idx, ids);
      const Tensor upd = RandomOf(dt, v.out, 44);
      ErrorSlot slot{0, 0, 0};
      ExpectSameBytes(ScatterAddWithBody<T>(base, idx, upd, c.axis, &slot),
                      Run1("scatter_add", {base, idx, upd}, {dt, c.base},
                           {{"axis", AttrInt(c.axis)}}));
      EXPECT_EQ(slot.code, 0);
    }
  }
}

TEST(PortableIndex, ScatterAddMatchesHostKernel) {
  CheckScatterAdd<float>(DType::kF32);
  CheckScatterAdd<double>(DType::kF64);
  CheckScatterAdd<bf16_t>(DType::kBF16);
  CheckScatterAdd<f16_t>(DType::kF16);
  CheckScatterAdd<int64_t>(DType::kI64);
  CheckScatterAdd<int32_t>(DType::kI32);
}

TEST(PortableIndex, ScatterAddOutOfRangeDropsAndReports) {
  const Tensor base = RandomOf(DType::kF32, {4, 2}, 45);
  const Tensor idx = I32({3}, {0, 7, 0});
  const Tensor upd = RandomOf(DType::kF32, {3, 2}, 46);
  std::vector<Tensor> outs;
  Status st = RunOp("scatter_add", {base, idx, upd}, {{DType::kF32, {4, 2}}}, {}, &outs);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
  ErrorSlot slot{0, 0, 0};
  const Tensor y = ScatterAddWithBody<float>(base, idx, upd, 0, &slot);
  EXPECT_EQ(slot.code, static_cast<int64_t>(portable::DeviceErrorCode::kScatterAddIndex));
  EXPECT_EQ(slot.value, 7);
  EXPECT_EQ(slot.bound, 4);
  const float *b = base.data<float>(), *u = upd.data<float>(), *g = y.data<float>();
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(g[c], (b[c] + u[c]) + u[4 + c]);
    for (int r = 1; r < 4; ++r) EXPECT_EQ(g[r * 2 + c], b[r * 2 + c]);
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt

// The CUDA top_k body (portable/top_k.h), run on the host by HostRows (one
// lane), against the host kernel's stable sort: largest and smallest,
// every axis, k from 0 to the whole axis, many ties, NaN (largest in both
// directions), infinities, -0 and +0, f32 f64 bf16 f16 i64 i32, and an
// empty axis.
#include <gtest/gtest.h>

#include "portable/host_launch.h"
#include "portable/top_k.h"
#include "portable_test_util.h"

namespace distrt {
namespace testing {
namespace {

Tensor TopKWithBody(const Tensor& x, int64_t axis, int64_t k, bool smallest) {
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x.dim(static_cast<int>(d));
    if (d > axis) inner *= x.dim(static_cast<int>(d));
  }
  const int64_t n = x.dim(static_cast<int>(axis));
  Shape out = x.shape();
  out[static_cast<size_t>(axis)] = k;
  Tensor y = Zeros(DType::kI64, out);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    portable::HostRows(outer * inner, portable::TopKBody<T>{x.data<T>(), y.data<int64_t>(), n,
                                                            inner, k, smallest});
  };
  ForNumericHost(x.dtype(), "top_k", run);
  return y;
}

void ExpectMatchesHost(const Tensor& x, int64_t axis, int64_t k, bool smallest) {
  SCOPED_TRACE(StrCat(DTypeName(x.dtype()), " ", ShapeToString(x.shape()), " axis ", axis, " k ",
                      k, smallest ? " smallest" : " largest"));
  Shape out = x.shape();
  out[static_cast<size_t>(axis < 0 ? axis + x.rank() : axis)] = k;
  ExpectSameBytes(TopKWithBody(x, axis, k, smallest),
                  Run1("top_k", {x}, {DType::kI64, out},
                       {{"axis", AttrInt(axis)}, {"k", AttrInt(k)},
                        {"smallest", AttrInt(smallest)}}));
}

// Random values from a handful (many ties), of dtype dt.
Tensor Tied(DType dt, const Shape& shape, uint32_t seed) {
  Tensor r = RandomOf(DType::kI64, shape, seed);
  Tensor f = Zeros(DType::kF64, shape);
  for (int64_t i = 0; i < r.num_elements(); ++i) {
    f.data<double>()[i] = static_cast<double>(r.data<int64_t>()[i] % 4) * 0.5;
  }
  Tensor t = Zeros(dt, shape);
  EXPECT_TRUE(CastBuffer(f.raw(), DType::kF64, t.raw(), dt, f.num_elements()).ok());
  return t;
}

TEST(PortableTopK, TiesEveryAxisAndKMatchHostKernel) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI64,
                   DType::kI32}) {
    const Tensor tied = Tied(dt, {3, 9, 4}, 21);
    const Tensor random = RandomOf(dt, {3, 9, 4}, 22);
    for (const Tensor* x : {&tied, &random}) {
      for (int64_t axis : {0, 1, -1}) {
        const int64_t n = x->dim(static_cast<int>(axis < 0 ? axis + 3 : axis));
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{2}, n}) {
          for (bool smallest : {false, true}) ExpectMatchesHost(*x, axis, k, smallest);
        }
      }
    }
  }
}

TEST(PortableTopK, NanInfinityAndSignedZeroMatchHostKernel) {
  const Tensor x = F32({2, 8}, {1.0f, NAN, -0.0f, INFINITY, 0.0f, NAN, -INFINITY, 1.0f,  //
                                NAN, NAN, NAN, 2.0f, -INFINITY, 0.0f, -0.0f, INFINITY});
  for (int64_t k : {1, 3, 5, 8}) {
    for (bool smallest : {false, true}) {
      ExpectMatchesHost(x, 1, k, smallest);
      Tensor d = Zeros(DType::kF64, x.shape());
      ASSERT_TRUE(CastBuffer(x.raw(), DType::kF32, d.raw(), DType::kF64, 16).ok());
      ExpectMatchesHost(d, -1, k, smallest);
    }
  }
  // Independently of the host: NaN ranks as +infinity, ties in index order.
  const Tensor y = TopKWithBody(x, 1, 4, false);
  EXPECT_EQ(y.ToVector<int64_t>(), (std::vector<int64_t>{1, 3, 5, 0, 0, 1, 2, 7}));
  const Tensor s = TopKWithBody(x, 1, 3, true);
  EXPECT_EQ(s.ToVector<int64_t>(), (std::vector<int64_t>{6, 2, 4, 4, 5, 6}));
}

TEST(PortableTopK, EmptyAxisMatchesHostKernel) {
  const Tensor x = Zeros(DType::kF32, {3, 0});
  ExpectMatchesHost(x, 1, 0, false);
  const Tensor rows = Zeros(DType::kF32, {0, 5});
  ExpectMatchesHost(rows, 1, 2, true);
}

}  // namespace
}  // namespace testing
}  // namespace distrt

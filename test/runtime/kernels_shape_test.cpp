// Data-movement kernels: transpose, reshape, expand, concat, slice, gather,
// gather_elements, scatter_elements, gather_nd, scatter_nd, det, one_hot,
// pad, range.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

TEST(Transpose, AllPermutationsOfRank3) {
  const Shape s = {2, 3, 4};
  Tensor x = Iota(s);
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& p : perms) {
    Shape out = {s[p[0]], s[p[1]], s[p[2]]};
    std::vector<float> want(24);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) {
          int64_t idx[3] = {i, j, k};
          int64_t o = (idx[p[0]] * out[1] + idx[p[1]]) * out[2] + idx[p[2]];
          want[o] = static_cast<float>((i * 3 + j) * 4 + k);
        }
    SCOPED_TRACE(ShapeToString(p));
    ExpectF32(Run1("transpose", {x}, {DType::kF32, out}, {{"perm", AttrInts(p)}}), out, want);
  }
}

// Extents of 8 and more take the tiled path (tiles of 32, partial at the
// edges); every permutation of a rank-4 shape, in 4- and 8-byte types.
TEST(Transpose, TiledAllPermutationsOfRank4) {
  const Shape s = {3, 40, 9, 35};
  const int64_t n = NumElements(s);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  std::vector<int64_t> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[static_cast<size_t>(i)] = i * 7 + 3;
  Tensor x64 = I64(s, src);
  Tensor x32 = Iota(s);
  do {
    Shape out;
    for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
    std::vector<int64_t> want(static_cast<size_t>(n));
    int64_t idx[4];
    for (idx[0] = 0; idx[0] < s[0]; ++idx[0])
      for (idx[1] = 0; idx[1] < s[1]; ++idx[1])
        for (idx[2] = 0; idx[2] < s[2]; ++idx[2])
          for (idx[3] = 0; idx[3] < s[3]; ++idx[3]) {
            int64_t o = 0, in = 0;
            for (int d = 0; d < 4; ++d) {
              o = o * out[static_cast<size_t>(d)] + idx[perm[static_cast<size_t>(d)]];
              in = in * s[static_cast<size_t>(d)] + idx[d];
            }
            want[static_cast<size_t>(o)] = in;
          }
    SCOPED_TRACE(ShapeToString(perm));
    std::vector<int64_t> got64 =
        Vec<int64_t>(Run1("transpose", {x64}, {DType::kI64, out}, {{"perm", AttrInts(perm)}}));
    std::vector<float> got32 =
        Vec<float>(Run1("transpose", {x32}, {DType::kF32, out}, {{"perm", AttrInts(perm)}}));
    ASSERT_EQ(got64.size(), want.size());
    ASSERT_EQ(got32.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got64[i], want[i] * 7 + 3) << "i64 element " << i;
      ASSERT_EQ(got32[i], static_cast<float>(want[i])) << "f32 element " << i;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Transpose, ByteTypesAndUnitDims) {
  Tensor x = I64({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Vec<int64_t>(Run1("transpose", {x}, {DType::kI64, {3, 1, 2, 1}},
                              {{"perm", AttrInts({3, 2, 1, 0})}})),
            (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  Tensor b = Bool({2, 2}, {1, 0, 0, 0});
  Tensor bt = Run1("transpose", {b}, {DType::kBool, {2, 2}}, {{"perm", AttrInts({1, 0})}});
  EXPECT_EQ(bt.data<uint8_t>()[0], 1);
  EXPECT_EQ(bt.data<uint8_t>()[2], 0);
  std::vector<Tensor> out;
  Status st = RunOp("transpose", {x}, {{DType::kI64, {3, 1, 2, 1}}},
                    {{"perm", AttrInts({3, 3, 1, 0})}}, &out);
  EXPECT_NE(st.message().find("not a permutation"), std::string::npos);
}

TEST(Reshape, KeepsDataChecksCount) {
  Tensor x = Iota({2, 6});
  ExpectF32(Run1("reshape", {x}, {DType::kF32, {3, 2, 2}}), {3, 2, 2}, Vec<float>(x));
  std::vector<Tensor> out;
  Status st = RunOp("reshape", {x}, {{DType::kF32, {5}}}, {}, &out);
  EXPECT_NE(st.message().find("cannot reshape"), std::string::npos);
}

TEST(Expand, BroadcastsToOutputShape) {
  Tensor x = F32({3, 1}, {1, 2, 3});
  ExpectF32(Run1("expand", {x}, {DType::kF32, {2, 3, 2}}), {2, 3, 2},
            {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  EXPECT_EQ(Vec<int32_t>(Run1("expand", {I32({}, {7})}, {DType::kI32, {3}})),
            (std::vector<int32_t>{7, 7, 7}));
  std::vector<Tensor> out;
  EXPECT_FALSE(RunOp("expand", {x}, {{DType::kF32, {3, 4, 2}}}, {}, &out).ok());  // 3 vs 4
  EXPECT_FALSE(RunOp("expand", {F32({2}, {1, 2})}, {{DType::kF32, {3}}}, {}, &out).ok());
}

TEST(Concat, AlongEachAxisAndDtypes) {
  Tensor a = Iota({2, 2}), b = Iota({2, 3}, 1, 10);
  ExpectF32(Run1("concat", {a, b}, {DType::kF32, {2, 5}}, {{"axis", AttrInt(1)}}), {2, 5},
            {0, 1, 10, 11, 12, 2, 3, 13, 14, 15});
  Tensor c = Iota({1, 2}, 1, 100);
  ExpectF32(Run1("concat", {a, c, a}, {DType::kF32, {5, 2}}, {{"axis", AttrInt(0)}}), {5, 2},
            {0, 1, 2, 3, 100, 101, 0, 1, 2, 3});
  EXPECT_EQ(Vec<int64_t>(Run1("concat", {I64({2}, {1, 2}), I64({0}, {}), I64({1}, {3})},
                              {DType::kI64, {3}}, {{"axis", AttrInt(0)}})),
            (std::vector<int64_t>{1, 2, 3}));
  std::vector<Tensor> out;
  Status st = RunOp("concat", {a, b}, {{DType::kF32, {4, 2}}}, {{"axis", AttrInt(0)}}, &out);
  EXPECT_NE(st.message().find("does not match input 0"), std::string::npos) << st.message();
}

TEST(Slice, StepsAndNegativeSteps) {
  Tensor x = Iota({4, 5});
  // rows 1..3, cols 0,2,4
  ExpectF32(
      Run1("slice", {x}, {DType::kF32, {2, 3}},
           {{"starts", AttrInts({1, 0})}, {"ends", AttrInts({3, 5})}, {"steps", AttrInts({1, 2})}}),
      {2, 3}, {5, 7, 9, 10, 12, 14});
  // Reverse both dims fully: ends -1 with a negative step runs past 0.
  std::vector<float> rev;
  for (int i = 3; i >= 0; --i)
    for (int j = 4; j >= 0; --j) rev.push_back(static_cast<float>(i * 5 + j));
  ExpectF32(Run1("slice", {x}, {DType::kF32, {4, 5}},
                 {{"starts", AttrInts({3, 4})},
                  {"ends", AttrInts({-1, -1})},
                  {"steps", AttrInts({-1, -1})}}),
            {4, 5}, rev);
  // Step -2 from col 4 down to (exclusive) 0: cols 4, 2.
  ExpectF32(
      Run1(
          "slice", {x}, {DType::kF32, {1, 2}},
          {{"starts", AttrInts({2, 4})}, {"ends", AttrInts({3, 0})}, {"steps", AttrInts({1, -2})}}),
      {1, 2}, {14, 12});
  // Empty result and steps defaulting to 1.
  ExpectF32(Run1("slice", {x}, {DType::kF32, {0, 5}},
                 {{"starts", AttrInts({2, 0})}, {"ends", AttrInts({2, 5})}}),
            {0, 5}, {});
  std::vector<Tensor> out;
  Status st = RunOp("slice", {x}, {{DType::kF32, {2, 5}}},
                    {{"starts", AttrInts({3, 0})}, {"ends", AttrInts({5, 5})}}, &out);
  EXPECT_NE(st.message().find("reaches outside"), std::string::npos) << st.message();
}

TEST(Gather, NegativeIndicesAxesAndIndexTypes) {
  Tensor data = Iota({3, 4});
  ExpectF32(
      Run1("gather", {data, I64({2}, {-1, 0})}, {DType::kF32, {2, 4}}, {{"axis", AttrInt(0)}}),
      {2, 4}, {8, 9, 10, 11, 0, 1, 2, 3});
  ExpectF32(Run1("gather", {data, I32({2, 2}, {3, -4, 1, 1})}, {DType::kF32, {3, 2, 2}},
                 {{"axis", AttrInt(1)}}),
            {3, 2, 2}, {3, 0, 1, 1, 7, 4, 5, 5, 11, 8, 9, 9});
  // Scalar index drops the axis.
  ExpectF32(Run1("gather", {data, I64({}, {-2})}, {DType::kF32, {4}}, {{"axis", AttrInt(0)}}), {4},
            {4, 5, 6, 7});
  // Integer data (embedding-style lookups of token ids).
  EXPECT_EQ(Vec<int64_t>(Run1("gather", {I64({4}, {10, 20, 30, 40}), I64({3}, {3, 3, -4})},
                              {DType::kI64, {3}}, {{"axis", AttrInt(0)}})),
            (std::vector<int64_t>{40, 40, 10}));
  std::vector<Tensor> out;
  Status st =
      RunOp("gather", {data, I64({1}, {3})}, {{DType::kF32, {1, 4}}}, {{"axis", AttrInt(0)}}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("gather index 3"), std::string::npos);
  st = RunOp("gather", {data, I64({1}, {-4})}, {{DType::kF32, {1, 4}}}, {{"axis", AttrInt(0)}},
             &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
}

TEST(GatherElements, PicksOneElementPerIndexAlongEitherAxis) {
  Tensor data = Iota({3, 4});  // data[i][j] = 4 * i + j
  ExpectF32(Run1("gather_elements", {data, I64({3, 2}, {3, -1, 0, 1, 2, 2})},
                 {DType::kF32, {3, 2}}, {{"axis", AttrInt(1)}}),
            {3, 2}, {3, 3, 4, 5, 10, 10});
  // Along axis 0, with fewer columns than data: result[i][j] = data[idx][j].
  ExpectF32(Run1("gather_elements", {data, I32({2, 3}, {2, 0, 1, -1, 1, 0})},
                 {DType::kF32, {2, 3}}, {{"axis", AttrInt(0)}}),
            {2, 3}, {8, 1, 6, 8, 5, 2});
  std::vector<Tensor> out;
  Status st = RunOp("gather_elements", {data, I64({1, 1}, {4})}, {{DType::kF32, {1, 1}}},
                    {{"axis", AttrInt(1)}}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("gather_elements index 4"), std::string::npos) << st.message();
  st = RunOp("gather_elements", {data, I64({4}, {0, 0, 0, 0})}, {{DType::kF32, {4}}},
             {{"axis", AttrInt(0)}}, &out);
  EXPECT_NE(st.message().find("must have the rank of data"), std::string::npos) << st.message();
}

TEST(GatherND, PicksSlicesAtIndexTuples) {
  Tensor data = Iota({2, 3, 4});  // data[i][j][k] = 12 i + 4 j + k
  // Whole rows: tuples of length 2 pick data[i][j][:].
  ExpectF32(Run1("gather_nd", {data, I64({2, 2}, {1, 2, 0, -3})}, {DType::kF32, {2, 4}}),
            {2, 4}, {20, 21, 22, 23, 0, 1, 2, 3});
  // Single elements.
  ExpectF32(Run1("gather_nd", {data, I32({1, 3}, {1, 0, 3})}, {DType::kF32, {1}}), {1}, {15});
  // batch_dims 1: tuple b indexes data[b].
  ExpectF32(Run1("gather_nd", {data, I64({2, 1, 2}, {2, 1, 0, 3})}, {DType::kF32, {2, 1}},
                 {{"batch_dims", AttrInt(1)}}),
            {2, 1}, {9, 15});
  std::vector<Tensor> out;
  Status st = RunOp("gather_nd", {data, I64({1, 1}, {2})}, {{DType::kF32, {1, 3, 4}}}, {}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("gather_nd index 2"), std::string::npos) << st.message();
}

TEST(ScatterND, ReplacesOrCombinesSlicesInTupleOrder) {
  Tensor data = F32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = I64({3, 1}, {2, 0, 2});
  Tensor upd = F32({3, 2}, {10, 20, 30, 40, 50, 60});
  auto run = [&](const char* reduction) {
    return Run1("scatter_nd", {data, idx, upd}, {DType::kF32, {4, 2}},
                {{"reduction", AttrString(reduction)}});
  };
  // none: the last write to a repeated index wins.
  ExpectF32(run("none"), {4, 2}, {30, 40, 3, 4, 50, 60, 7, 8});
  ExpectF32(run("add"), {4, 2}, {31, 42, 3, 4, 65, 86, 7, 8});
  ExpectF32(run("mul"), {4, 2}, {30, 80, 3, 4, 2500, 7200, 7, 8});
  ExpectF32(run("max"), {4, 2}, {30, 40, 3, 4, 50, 60, 7, 8});
  ExpectF32(run("min"), {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<Tensor> out;
  Status st = RunOp("scatter_nd", {data, idx, F32({3}, {1, 2, 3})}, {{DType::kF32, {4, 2}}}, {},
                    &out);
  EXPECT_NE(st.message().find("scatter_nd updates are f32[3], expected f32[3, 2]"),
            std::string::npos)
      << st.message();
}

TEST(Det, DeterminantsOfABatchOfMatrices) {
  // [[1, 2], [3, 4]] -> -2; a permutation matrix -> -1; a singular one -> 0;
  // diag(2, 3) with a zero pivot first needs a row swap.
  Tensor x = F32({4, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4, 0, 2, 3, 0});
  ExpectF32(Run1("det", {x}, {DType::kF32, {4}}), {4}, {-2, -1, 0, -6});
  // 3x3: 2 (5 * 9 - 6 * 8) - 0 + 1 (4 * 8 - 5 * 7) = -6 - 3 = -9.
  Tensor y = F64({3, 3}, {2, 0, 1, 4, 5, 6, 7, 8, 9});
  EXPECT_NEAR(Vec<double>(Run1("det", {y}, {DType::kF64, {}}))[0], -9.0, 1e-12);
}

TEST(ScatterElements, ReplacesOrCombinesInIndexOrder) {
  // ONNX's example: replace along axis 0.
  ExpectF32(Run1("scatter_elements",
                 {F32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), I64({2, 3}, {1, 0, 2, 0, 2, 1}),
                  F32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})},
                 {DType::kF32, {3, 3}}, {{"axis", AttrInt(0)}}),
            {3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f});
  Tensor data = F32({1, 5}, {1, 2, 3, 4, 5});
  auto run = [&](const char* reduction, Tensor idx, Tensor upd) {
    return Run1("scatter_elements", {data, idx, upd}, {DType::kF32, {1, 5}},
                {{"axis", AttrInt(1)}, {"reduction", AttrString(reduction)}});
  };
  ExpectF32(run("add", I64({1, 2}, {1, 1}), F32({1, 2}, {1.1f, 2.1f})), {1, 5},
            {1, 2 + 1.1f + 2.1f, 3, 4, 5});
  ExpectF32(run("mul", I64({1, 2}, {1, -4}), F32({1, 2}, {1.5f, 3})), {1, 5},
            {1, 2 * 1.5f * 3, 3, 4, 5});
  ExpectF32(run("max", I64({1, 2}, {1, -1}), F32({1, 2}, {0, 9})), {1, 5}, {1, 2, 3, 4, 9});
  ExpectF32(run("min", I64({1, 2}, {1, -1}), F32({1, 2}, {0, 9})), {1, 5}, {1, 0, 3, 4, 5});
  EXPECT_EQ(Vec<int64_t>(Run1("scatter_elements",
                              {I64({4}, {1, 2, 3, 4}), I32({2}, {3, 0}), I64({2}, {7, 8})},
                              {DType::kI64, {4}}, {{"axis", AttrInt(0)}})),
            (std::vector<int64_t>{8, 2, 3, 7}));
  std::vector<Tensor> out;
  Status st = RunOp("scatter_elements", {data, I64({1, 1}, {5}), F32({1, 1}, {0})},
                    {{DType::kF32, {1, 5}}}, {{"axis", AttrInt(1)}}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  st = RunOp("scatter_elements", {data, I64({1, 1}, {0}), F32({1, 1}, {0})},
             {{DType::kF32, {1, 5}}}, {{"axis", AttrInt(1)}, {"reduction", AttrString("sub")}},
             &out);
  EXPECT_NE(st.message().find("reduction must be"), std::string::npos) << st.message();
}

TEST(OneHot, NewAxisNegativeAndOutOfRangeIndices) {
  // -1 counts from the end (depth - 1); 5 is outside [-4, 4): all off.
  ExpectF32(Run1("one_hot", {I64({3}, {0, -1, 5}), F32({2}, {0, 1})}, {DType::kF32, {3, 4}},
                 {{"depth", AttrInt(4)}, {"axis", AttrInt(-1)}}),
            {3, 4}, {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0});
  EXPECT_EQ(Vec<int64_t>(Run1("one_hot", {I32({2}, {1, 3}), I64({2}, {-2, 7})},
                              {DType::kI64, {4, 2}}, {{"depth", AttrInt(4)}, {"axis", AttrInt(0)}})),
            (std::vector<int64_t>{-2, -2, 7, -2, -2, -2, -2, 7}));
  std::vector<Tensor> out;
  Status st = RunOp("one_hot", {I64({1}, {0}), F32({3}, {0, 1, 2})}, {{DType::kF32, {1, 4}}},
                    {{"depth", AttrInt(4)}}, &out);
  EXPECT_NE(st.message().find("2 elements"), std::string::npos) << st.message();
}

TEST(Pad, ConstantReflectEdge) {
  Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  // pads: dim0 begin 1, dim1 begin 2, dim0 end 0, dim1 end 1
  ExpectF32(Run1("pad", {x}, {DType::kF32, {3, 6}},
                 {{"pads", AttrInts({1, 2, 0, 1})},
                  {"mode", AttrString("constant")},
                  {"value", AttrFloat(9)}}),
            {3, 6}, {9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9});
  ExpectF32(Run1("pad", {x}, {DType::kF32, {2, 7}},
                 {{"pads", AttrInts({0, 2, 0, 2})}, {"mode", AttrString("reflect")}}),
            {2, 7}, {3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4});
  ExpectF32(Run1("pad", {x}, {DType::kF32, {4, 5}},
                 {{"pads", AttrInts({1, 1, 1, 1})}, {"mode", AttrString("edge")}}),
            {4, 5}, {1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 4, 4, 5, 6, 6});
  ExpectF32(Run1("pad", {x}, {DType::kF32, {3, 3}},
                 {{"pads", AttrInts({1, 0, 0, 0})}, {"mode", AttrString("reflect")}}),
            {3, 3}, {4, 5, 6, 1, 2, 3, 4, 5, 6});
}

TEST(Pad, NegativePadsCropAndIntegers) {
  Tensor x = Iota({3, 4});
  // pads = [-1, -1, 0, -1]: drop row 0, column 0 and the last column.
  ExpectF32(Run1("pad", {x}, {DType::kF32, {2, 2}}, {{"pads", AttrInts({-1, -1, 0, -1})}}), {2, 2},
            {5, 6, 9, 10});
  // Mixed: crop the start, pad the end.
  ExpectF32(Run1("pad", {x}, {DType::kF32, {3, 5}},
                 {{"pads", AttrInts({0, -2, 0, 3})}, {"value", AttrFloat(-1)}}),
            {3, 5}, {2, 3, -1, -1, -1, 6, 7, -1, -1, -1, 10, 11, -1, -1, -1});
  EXPECT_EQ(Vec<int64_t>(Run1("pad", {I64({3}, {1, 2, 3})}, {DType::kI64, {5}},
                              {{"pads", AttrInts({1, 1})}, {"value", AttrFloat(7)}})),
            (std::vector<int64_t>{7, 1, 2, 3, 7}));
  std::vector<Tensor> out;
  EXPECT_FALSE(RunOp("pad", {x}, {{DType::kF32, {3, 4}}}, {{"pads", AttrInts({0, 0})}}, &out).ok());
}

TEST(Range, FloatAndIntegerLengths) {
  ExpectF32(Run1("range", {F32({}, {1}), F32({}, {2}), F32({}, {0.25f})}, {DType::kF32, {4}}), {4},
            {1, 1.25f, 1.5f, 1.75f});
  EXPECT_EQ(
      Vec<int64_t>(Run1("range", {I64({}, {10}), I64({}, {4}), I64({}, {-3})}, {DType::kI64, {2}})),
      (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(
      Vec<int32_t>(Run1("range", {I32({}, {0}), I32({}, {7}), I32({}, {3})}, {DType::kI32, {3}})),
      (std::vector<int32_t>{0, 3, 6}));
  EXPECT_EQ(
      Run1("range", {I64({}, {5}), I64({}, {1}), I64({}, {1})}, {DType::kI64, {0}}).num_elements(),
      0);
  std::vector<Tensor> out;
  Status st =
      RunOp("range", {I64({}, {0}), I64({}, {7}), I64({}, {3})}, {{DType::kI64, {2}}}, {}, &out);
  EXPECT_NE(st.message().find("declares the output as i64[2]"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace distrt

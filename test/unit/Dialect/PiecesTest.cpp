//===- PiecesTest.cpp - how dimensions split over mesh axes -----*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/MLIRContext.h"
#include <gtest/gtest.h>

using namespace distopt::dist;

namespace {

class PiecesTest : public ::testing::Test {
protected:
  PiecesTest() { ctx.loadDialect<DistDialect>(); }
  ShardingAttr sharding(std::vector<Placement> ps) {
    return ShardingAttr::get(&ctx, mlir::FlatSymbolRefAttr::get(&ctx, "mesh"),
                             ps);
  }
  mlir::MLIRContext ctx;
};

TEST_F(PiecesTest, EvenSplit) {
  for (int64_t i = 0; i < 4; ++i) {
    Piece p = splitPiece(16, 4, i);
    EXPECT_EQ(p.offset, 4 * i);
    EXPECT_EQ(p.size, 4);
  }
}

TEST_F(PiecesTest, UnevenSplitPutsLargerPiecesFirst) {
  // 10 over 4: 3, 3, 2, 2.
  int64_t expected[][2] = {{0, 3}, {3, 3}, {6, 2}, {8, 2}};
  for (int64_t i = 0; i < 4; ++i) {
    Piece p = splitPiece(10, 4, i);
    EXPECT_EQ(p.offset, expected[i][0]) << "piece " << i;
    EXPECT_EQ(p.size, expected[i][1]) << "piece " << i;
  }
}

TEST_F(PiecesTest, MorePartsThanElementsGivesEmptyPieces) {
  EXPECT_EQ(splitPiece(2, 4, 1).size, 1);
  EXPECT_EQ(splitPiece(2, 4, 2).size, 0);
  EXPECT_EQ(splitPiece(2, 4, 3).offset, 2);
}

TEST_F(PiecesTest, EarlierAxisIsMajor) {
  // Dimension 0 of extent 8 split by both axes of a 2x2 mesh: axis 0 takes
  // halves, axis 1 splits each half again.
  ShardingAttr s = sharding({Placement::shard(0), Placement::shard(0)});
  std::vector<int64_t> sizes{2, 2};
  EXPECT_EQ(localPiece(8, 0, s, sizes, {0, 0}).offset, 0);
  EXPECT_EQ(localPiece(8, 0, s, sizes, {0, 1}).offset, 2);
  EXPECT_EQ(localPiece(8, 0, s, sizes, {1, 0}).offset, 4);
  EXPECT_EQ(localPiece(8, 0, s, sizes, {1, 1}).offset, 6);
  EXPECT_EQ(localPiece(8, 0, s, sizes, {1, 1}).size, 2);
}

TEST_F(PiecesTest, NestedUnevenSplit) {
  // 7 over (2 then 2): 4 | 3, then 2,2 | 2,1.
  ShardingAttr s = sharding({Placement::shard(0), Placement::shard(0)});
  std::vector<int64_t> sizes{2, 2};
  EXPECT_EQ(localPiece(7, 0, s, sizes, {1, 0}).offset, 4);
  EXPECT_EQ(localPiece(7, 0, s, sizes, {1, 0}).size, 2);
  EXPECT_EQ(localPiece(7, 0, s, sizes, {1, 1}).offset, 6);
  EXPECT_EQ(localPiece(7, 0, s, sizes, {1, 1}).size, 1);
  EXPECT_EQ(groupPieceSizes(7, 0, s, 1, sizes, {1, 0}),
            (llvm::SmallVector<int64_t>{2, 1}));
  EXPECT_EQ(groupPieceSizes(7, 0, s, 1, sizes, {0, 1}),
            (llvm::SmallVector<int64_t>{2, 2}));
}

TEST_F(PiecesTest, LocalShapeWithoutRankMarksUnevenDimsDynamic) {
  ShardingAttr s = sharding({Placement::shard(0), Placement::shard(1)});
  std::vector<int64_t> sizes{2, 4};
  auto shape = localShape({8, 10}, s, sizes, std::nullopt);
  EXPECT_EQ(shape[0], 4);
  EXPECT_TRUE(mlir::ShapedType::isDynamic(shape[1]));
  std::vector<int64_t> coords{1, 3};
  auto exact = localShape({8, 10}, s, sizes, llvm::ArrayRef<int64_t>(coords));
  EXPECT_EQ(exact[1], 2);
}

TEST_F(PiecesTest, PartialAndReplicatedDoNotSplit) {
  ShardingAttr s = sharding(
      {Placement::partial(ReductionKind::Sum), Placement::replicate()});
  std::vector<int64_t> sizes{2, 4};
  auto shape = localShape({8, 10}, s, sizes, std::nullopt);
  EXPECT_EQ(shape[0], 8);
  EXPECT_EQ(shape[1], 10);
}

} // namespace

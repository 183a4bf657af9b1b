//===- Pieces.cpp - how dimensions split over mesh axes ---------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/Pieces.h"

using namespace mlir;
using namespace distopt::dist;

Piece distopt::dist::splitPiece(int64_t extent, int64_t parts, int64_t index) {
  int64_t base = extent / parts, extra = extent % parts;
  Piece p;
  p.size = base + (index < extra ? 1 : 0);
  p.offset = index * base + std::min(index, extra);
  return p;
}

/// Piece `index` of `extent` split over an axis with placement `pl`: the
/// given sizes, or as even as possible.
static Piece pieceOf(const Placement &pl, int64_t extent, int64_t parts,
                     int64_t index) {
  if (!pl.hasSizes())
    return splitPiece(extent, parts, index);
  ArrayRef<int64_t> sizes = pl.sizes.asArrayRef();
  Piece p;
  for (int64_t i = 0; i < index && i < static_cast<int64_t>(sizes.size()); ++i)
    p.offset += sizes[i];
  p.size = index < static_cast<int64_t>(sizes.size()) ? sizes[index] : 0;
  return p;
}

Piece distopt::dist::localPiece(int64_t extent, int64_t dim,
                                ShardingAttr sharding,
                                ArrayRef<int64_t> meshSizes,
                                ArrayRef<int64_t> coords) {
  Piece p{0, extent};
  for (auto [axis, pl] : llvm::enumerate(sharding.getPlacements())) {
    if (!pl.isShardOf(dim))
      continue;
    Piece sub = pieceOf(pl, p.size, meshSizes[axis], coords[axis]);
    p.offset += sub.offset;
    p.size = sub.size;
  }
  return p;
}

SmallVector<int64_t> distopt::dist::groupPieceSizes(int64_t extent, int64_t dim,
                                                    ShardingAttr sharding,
                                                    int64_t axis,
                                                    ArrayRef<int64_t> meshSizes,
                                                    ArrayRef<int64_t> coords) {
  // The extent left after the axes before `axis` took their split.
  int64_t parent = extent;
  for (auto [a, pl] : llvm::enumerate(sharding.getPlacements())) {
    if (static_cast<int64_t>(a) == axis)
      break;
    if (pl.isShardOf(dim))
      parent = pieceOf(pl, parent, meshSizes[a], coords[a]).size;
  }
  const Placement &pl = sharding.getPlacements()[axis];
  SmallVector<int64_t> sizes;
  for (int64_t i = 0; i < meshSizes[axis]; ++i)
    sizes.push_back(pieceOf(pl, parent, meshSizes[axis], i).size);
  return sizes;
}

/// The explicit sizes splitting `dim`, if an axis gives them.
static std::optional<ArrayRef<int64_t>> givenSizes(int64_t dim,
                                                   ShardingAttr sharding) {
  for (const Placement &pl : sharding.getPlacements())
    if (pl.isShardOf(dim) && pl.hasSizes())
      return pl.sizes.asArrayRef();
  return std::nullopt;
}

bool distopt::dist::splitsEvenly(int64_t extent, int64_t dim,
                                 ShardingAttr sharding,
                                 ArrayRef<int64_t> meshSizes) {
  if (auto sizes = givenSizes(dim, sharding))
    return llvm::all_equal(*sizes);
  int64_t n = numPieces(dim, sharding, meshSizes);
  return extent % n == 0;
}

int64_t distopt::dist::numPieces(int64_t dim, ShardingAttr sharding,
                                 ArrayRef<int64_t> meshSizes) {
  int64_t n = 1;
  for (auto [axis, pl] : llvm::enumerate(sharding.getPlacements()))
    if (pl.isShardOf(dim))
      n *= meshSizes[axis];
  return n;
}

SmallVector<int64_t>
distopt::dist::localShape(ArrayRef<int64_t> globalShape, ShardingAttr sharding,
                          ArrayRef<int64_t> meshSizes,
                          std::optional<ArrayRef<int64_t>> coords) {
  SmallVector<int64_t> shape(globalShape);
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    if (ShapedType::isDynamic(shape[d]))
      continue;
    int64_t n = numPieces(d, sharding, meshSizes);
    if (n == 1)
      continue;
    if (coords)
      shape[d] = localPiece(shape[d], d, sharding, meshSizes, *coords).size;
    else if (splitsEvenly(shape[d], d, sharding, meshSizes))
      shape[d] /= n;
    else
      shape[d] = ShapedType::kDynamic;
  }
  return shape;
}

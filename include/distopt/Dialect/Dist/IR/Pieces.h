//===- Pieces.h - how dimensions split over mesh axes -----------*- C++ -*-===//
//
// A dimension of extent n split over an axis of size k gives k pieces whose
// sizes differ by at most one, larger first: piece i has n/k + (i < n%k).
// When several axes shard one dimension, the one earlier in the mesh is major:
// its piece is split again over the next axis.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_IR_PIECES_H
#define DISTOPT_DIALECT_DIST_IR_PIECES_H

#include "distopt/Dialect/Dist/IR/DistAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include <optional>

namespace distopt::dist {

struct Piece {
  int64_t offset = 0;
  int64_t size = 0;
};

/// Piece `index` of `extent` split into `parts`.
Piece splitPiece(int64_t extent, int64_t parts, int64_t index);

/// The piece of dimension `dim` a device with `coords` holds.
Piece localPiece(int64_t extent, int64_t dim, ShardingAttr sharding,
                 llvm::ArrayRef<int64_t> meshSizes,
                 llvm::ArrayRef<int64_t> coords);

/// Extents of every member's piece along `dim` in the group over `axis`, for
/// the device at `coords` (other coordinates fixed). The sharding must have
/// `axis` as the innermost axis sharding `dim`.
llvm::SmallVector<int64_t> groupPieceSizes(int64_t extent, int64_t dim,
                                           ShardingAttr sharding, int64_t axis,
                                           llvm::ArrayRef<int64_t> meshSizes,
                                           llvm::ArrayRef<int64_t> coords);

/// True if every split of `dim` divides evenly, so all devices hold pieces of
/// one size.
bool splitsEvenly(int64_t extent, int64_t dim, ShardingAttr sharding,
                  llvm::ArrayRef<int64_t> meshSizes);

/// Local shape: with `coords` the device's exact shape; without, dimensions
/// that split unevenly become dynamic.
llvm::SmallVector<int64_t>
localShape(llvm::ArrayRef<int64_t> globalShape, ShardingAttr sharding,
           llvm::ArrayRef<int64_t> meshSizes,
           std::optional<llvm::ArrayRef<int64_t>> coords);

/// Number of pieces dimension `dim` is split into.
int64_t numPieces(int64_t dim, ShardingAttr sharding,
                  llvm::ArrayRef<int64_t> meshSizes);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_IR_PIECES_H

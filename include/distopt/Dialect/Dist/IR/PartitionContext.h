//===- PartitionContext.h - what an op sees while it is partitioned -*- C++
//-*-===//
#ifndef DISTOPT_DIALECT_DIST_IR_PARTITIONCONTEXT_H
#define DISTOPT_DIALECT_DIST_IR_PARTITIONCONTEXT_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "mlir/IR/Builders.h"
#include <optional>

namespace distopt::dist {

/// Handed to ShardingRuleOpInterface::partitionOp: the builder positioned where
/// the local op goes, the mesh, and (when partitioning for one rank) that
/// rank's coordinates.
class PartitionContext {
public:
  PartitionContext(mlir::OpBuilder &builder, MeshOp mesh,
                   std::optional<llvm::SmallVector<int64_t>> coords)
      : builder(builder), mesh(mesh), coords(std::move(coords)),
        meshSizes(mesh.getAxisSizes()) {}

  mlir::OpBuilder &builder;
  MeshOp mesh;
  /// Set when partitioning for one rank: every shape and offset is concrete.
  std::optional<llvm::SmallVector<int64_t>> coords;
  llvm::SmallVector<int64_t> meshSizes;

  /// The per-device type of a tensor of type `global` with `sharding`.
  mlir::RankedTensorType localType(mlir::RankedTensorType global,
                                   ShardingAttr sharding) const;

  /// Offset of this device's piece along `dim`; fails (with a diagnostic at
  /// `loc`) when it depends on the rank and no rank is known.
  mlir::FailureOr<int64_t> pieceOffset(mlir::Location loc,
                                       mlir::RankedTensorType global,
                                       ShardingAttr sharding,
                                       int64_t dim) const;
};

/// The default partitioning: the same op on local operands, with local result
/// types.
llvm::LogicalResult
partitionByCloning(mlir::Operation *op, PartitionContext &ctx,
                   mlir::ValueRange localOperands,
                   llvm::ArrayRef<ShardingAttr> resultShardings,
                   llvm::SmallVectorImpl<mlir::Value> &localResults);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_IR_PARTITIONCONTEXT_H

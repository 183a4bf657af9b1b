//===- PartitionContext.cpp - what an op sees while partitioned -*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/PartitionContext.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace distopt::dist;

RankedTensorType PartitionContext::localType(RankedTensorType global,
                                             ShardingAttr sharding) const {
  std::optional<ArrayRef<int64_t>> c;
  if (coords)
    c = ArrayRef<int64_t>(*coords);
  return global.clone(localShape(global.getShape(), sharding, meshSizes, c));
}

FailureOr<int64_t> PartitionContext::pieceOffset(Location loc,
                                                 RankedTensorType global,
                                                 ShardingAttr sharding,
                                                 int64_t dim) const {
  if (numPieces(dim, sharding, meshSizes) == 1)
    return 0;
  if (!coords)
    return emitError(loc) << "the offset of this device's piece of dimension "
                          << dim << " depends on the rank; partition for one "
                          << "rank (dist-partition{rank=N}) to see it";
  return localPiece(global.getDimSize(dim), dim, sharding, meshSizes, *coords)
      .offset;
}

LogicalResult
distopt::dist::partitionByCloning(Operation *op, PartitionContext &ctx,
                                  ValueRange localOperands,
                                  ArrayRef<ShardingAttr> resultShardings,
                                  SmallVectorImpl<Value> &localResults) {
  IRMapping mapping;
  mapping.map(op->getOperands(), localOperands);
  Operation *clone = ctx.builder.clone(*op, mapping);
  for (auto [res, sharding] : llvm::zip(clone->getResults(), resultShardings))
    if (auto global = dyn_cast<RankedTensorType>(res.getType()))
      res.setType(ctx.localType(global, sharding));
  clone->removeAttr(kShardingAttr);
  llvm::append_range(localResults, clone->getResults());
  return success();
}

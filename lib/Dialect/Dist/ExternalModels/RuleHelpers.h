//===- RuleHelpers.h - pieces shared by the external models -----*- C++ -*-===//
#ifndef DISTOPT_DIALECT_DIST_EXTERNALMODELS_RULEHELPERS_H
#define DISTOPT_DIALECT_DIST_EXTERNALMODELS_RULEHELPERS_H

#include "distopt/Dialect/Dist/IR/PartitionContext.h"
#include "distopt/Dialect/Dist/IR/ShardingRule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace distopt::dist::external {

/// Element-wise over the first `numData` operands, which broadcast against
/// the result as in numpy (extent-1 dimensions that broadcast take no
/// factor). Later operands (tosa's shift and zero points) are in no factor.
OpShardingRule broadcastRule(mlir::Operation *op, unsigned numData);

/// True if `v` is a constant zero: a scalar, or a tensor splat of zero.
bool isZeroConstant(mlir::Value v);

/// The rule of a constant-like op producing `value`: a splat may be split
/// anywhere (each device makes its own smaller splat); any other constant
/// stays whole, so its users take a local slice of the replicated value.
OpShardingRule constantRule(mlir::Operation *op, mlir::Attribute value);

/// The local value of a constant: `value` itself if the shard is the whole
/// tensor, a resized splat otherwise. Fails with a diagnostic when the local
/// shape is not static (an uneven split in the SPMD program).
mlir::FailureOr<mlir::TypedAttr> localConstantValue(mlir::Operation *op,
                                                    PartitionContext &ctx,
                                                    mlir::Attribute value,
                                                    ShardingAttr sharding);

} // namespace distopt::dist::external

#endif // DISTOPT_DIALECT_DIST_EXTERNALMODELS_RULEHELPERS_H

//===- ExternalModels.h - sharding rules for upstream dialects --*- C++ -*-===//
//
// ShardingRuleOpInterface attached from outside to ops of upstream MLIR
// dialects, so the distopt passes work on IR other frameworks produce:
// every linalg structured op (rule read off its indexing maps, iterator
// types and payload), tensor.empty, tosa element-wise ops, matmul,
// reductions and transpose, and arith/math element-wise ops on tensors.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_EXTERNALMODELS_EXTERNALMODELS_H
#define DISTOPT_DIALECT_DIST_EXTERNALMODELS_EXTERNALMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace distopt::dist {

/// linalg structured ops (named ops, generic, fill, reduce, ...).
void registerLinalgShardingRules(mlir::DialectRegistry &registry);
/// tensor.empty.
void registerTensorShardingRules(mlir::DialectRegistry &registry);
/// tosa element-wise ops, matmul, reductions, transpose, const.
void registerTosaShardingRules(mlir::DialectRegistry &registry);
/// arith element-wise ops and constants, math element-wise ops.
void registerArithShardingRules(mlir::DialectRegistry &registry);

/// All of the above. The models attach when their dialect loads; the
/// dialects themselves are not added to `registry`.
void registerExternalModels(mlir::DialectRegistry &registry);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_EXTERNALMODELS_EXTERNALMODELS_H

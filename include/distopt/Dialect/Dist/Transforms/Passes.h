//===- Passes.h - distopt's sharding passes ---------------------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "distopt/CostModel/MachineProfile.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace distopt::nn {
class NNDialect;
} // namespace distopt::nn

namespace distopt::dist {

#define GEN_PASS_DECL
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"

/// The passes with a machine profile already loaded (the tools load the
/// --machine profile once); null means the `machine` option's.
std::unique_ptr<mlir::Pass> createDistPropagateSharding(
    std::shared_ptr<const cost::MachineProfile> machine);
std::unique_ptr<mlir::Pass>
createDistReshardToCollectives(DistReshardToCollectivesOptions options,
                               std::shared_ptr<const cost::MachineProfile> machine);

#define GEN_PASS_REGISTRATION
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H

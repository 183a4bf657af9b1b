//===- Propagation.h - propagated placements, read not written --*- C++ -*-===//
//
// What dist-propagate-sharding would decide, for passes that need to know
// before the real propagation runs (ZeRO takes the dimension the rest of
// the plan leaves whole): the module is read, never changed, and not
// copied.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_PROPAGATION_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_PROPAGATION_H

#include "distopt/CostModel/MachineProfile.h"
#include "distopt/Dialect/Dist/IR/DistAttrs.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <vector>

namespace distopt::dist {

/// The placement per mesh axis that propagating `module`'s annotations
/// gives each of `values`, in order (Replicate where propagation leaves a
/// value open, as the pass writes it; empty for a value outside the
/// module's functions or a module with no mesh). Failure, diagnosed: the
/// module's mesh or annotations are malformed.
mlir::FailureOr<std::vector<llvm::SmallVector<Placement>>>
propagatedPlacements(mlir::ModuleOp module, llvm::ArrayRef<mlir::Value> values,
                     std::shared_ptr<const cost::MachineProfile> machine);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_PROPAGATION_H

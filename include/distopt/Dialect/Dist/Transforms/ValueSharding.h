//===- ValueSharding.h - read and write the sharding of a value -*- C++ -*-===//
//
// After propagation every tensor value has a sharding: op results in the
// op's `dist.sharding` array, function arguments in their `dist.sharding`
// argument attribute. A value without one is replicated.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_VALUESHARDING_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_VALUESHARDING_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "mlir/IR/Value.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace distopt::dist {

/// The sharding of `v`, or `fallback` (normally the replicated sharding).
ShardingAttr getValueSharding(mlir::Value v, ShardingAttr fallback);

/// Records `sharding` for `v` (an op result or a function argument).
void setValueSharding(mlir::Value v, ShardingAttr sharding);

/// The cause recorded for `v` by propagation, or "".
llvm::StringRef getValueCause(mlir::Value v);

/// "[R, S(1)]": the placements of a sharding without its mesh.
std::string placementsStr(ShardingAttr sharding);

/// Sets attribute `name` to `values[i]` on each result `i` of `func` whose
/// value is non-null, rebuilding the result attributes once (one
/// setResultAttr per result is quadratic in the results of a training step).
void setResultAttrs(mlir::FunctionOpInterface func, llvm::StringRef name,
                    llvm::ArrayRef<mlir::Attribute> values);

/// A loop over microbatches (nn.microbatch_loop: no operands, one region of
/// one block whose terminator yields one value per result) sums what its body
/// yields: a sum of pieces (or of partial values) is laid out as they are,
/// so each result shares the sharding of the value yielded in its place.
/// For such a result, that yielded value; else null.
mlir::Value yieldedFor(mlir::Value v);
/// For a use by such a loop's terminator, the loop's result; else null.
mlir::Value loopResultOf(mlir::OpOperand &use);

/// A short description of where `op` is: its op name and location.
std::string describeOp(mlir::Operation *op);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_VALUESHARDING_H

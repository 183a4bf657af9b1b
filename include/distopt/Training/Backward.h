//===- Backward.h - reverse-mode differentiation of nn IR -------*- C++ -*-===//
//
// One walk over a function's ops in reverse, calling each op's gradient rule
// (GradientOpInterface): from the gradients of some values (the seeds: the
// loss's gradient with respect to the model output) to the gradients of the
// values asked for (trainable parameters). Only ops between the two are
// differentiated; integer and boolean paths (masks, shape arithmetic) carry
// no gradient and need no rule. See docs/training.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_BACKWARD_H
#define DISTOPT_TRAINING_BACKWARD_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace distopt {

/// Emits the gradients of `wrt` at `builder`'s insertion point, given the
/// gradients of the seed values. The result has one entry per `wrt` value,
/// null where the seeds do not depend on it. An op on a path from `wrt` to
/// a seed without a gradient rule is an error naming its node.
///
/// A value read by several ops gets the sum of their gradients. With
/// `scatterLookups`, a lookup's term (nn.gather's rows scattered into
/// zeros) is scattered straight into the other term instead: a tied
/// embedding costs no zero table and no add over the vocabulary. Without
/// it every term stays a term of an nn.add (a pipeline's microbatch loop
/// sums each stage's term apart).
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGradients(mlir::OpBuilder &builder,
               llvm::ArrayRef<std::pair<mlir::Value, mlir::Value>> seeds,
               llvm::ArrayRef<mlir::Value> wrt, bool scatterLookups = true);

} // namespace distopt

#endif // DISTOPT_TRAINING_BACKWARD_H

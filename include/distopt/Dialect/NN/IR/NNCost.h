//===- NNCost.h - how much work an nn op does -------------------*- C++ -*-===//
//
// Rough sizes the planners weigh with: balancing pipeline stages and the
// report's roofline estimate read the same numbers.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_NN_IR_NNCOST_H
#define DISTOPT_DIALECT_NN_IR_NNCOST_H

#include "mlir/IR/Operation.h"

namespace distopt::nn {

/// Floating-point operations of `op`: 2·M·N·K for products and
/// convolutions, one per result element otherwise; 0 for dynamic shapes.
double estimateFlops(mlir::Operation *op);

/// Bytes of a statically shaped tensor type (0 otherwise); sub-byte
/// elements count as one byte.
int64_t tensorBytes(mlir::Type type);

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_NNCOST_H

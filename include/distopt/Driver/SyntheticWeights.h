//===- SyntheticWeights.h - values for weights that have none ---*- C++ -*-===//
//
// Hand-written .mlir models name weights without a file. To run them, each
// such weight gets deterministic pseudo-random values (a function of its name
// and element index), written to one file the weights then refer to, so every
// compilation of the same model - single-device or partitioned - reads the
// same numbers.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_SYNTHETICWEIGHTS_H
#define DISTOPT_DRIVER_SYNTHETICWEIGHTS_H

#include "mlir/IR/BuiltinOps.h"

namespace distopt {

/// Writes values for every nn.weight without a file into
/// `<dir>/synthetic-weights.bin` and points the weights at it.
mlir::LogicalResult materializeSyntheticWeights(mlir::ModuleOp module,
                                                llvm::StringRef dir);

} // namespace distopt

#endif // DISTOPT_DRIVER_SYNTHETICWEIGHTS_H

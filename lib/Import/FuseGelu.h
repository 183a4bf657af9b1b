//===- FuseGelu.h - the exact GELU written out, as one nn.gelu --*- C++ -*-===//
#ifndef DISTOPT_LIB_IMPORT_FUSEGELU_H
#define DISTOPT_LIB_IMPORT_FUSEGELU_H

#include "mlir/IR/Block.h"

namespace distopt::onnximport {

/// Replaces every x * 0.5 * (1 + erf(x / sqrt(2))) in `body` (the exact
/// GELU as PyTorch exports it before opset 20, and with the factors in any
/// order, x * (1 / sqrt(2)) for the division) by one nn.gelu, when the
/// intermediate values have no other use. Returns how many it replaced; the
/// caller erases the dead ops.
unsigned fuseErfGelu(mlir::Block &body);

} // namespace distopt::onnximport

#endif // DISTOPT_LIB_IMPORT_FUSEGELU_H

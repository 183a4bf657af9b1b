//===- Passes.h - distopt's sharding passes ---------------------*- C++ -*-===//
#ifndef DIST_TRANSFORMS_PASSES_H
#define DIST_TRANSFORMS_PASSES_H

#include "dist/IR/DistDialect.h"
#include "dist/IR/DistOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace distopt::nn {
class NNDialect;
} // namespace distopt::nn

namespace distopt::dist {

#define GEN_PASS_DECL
#include "dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dist/Transforms/Passes.h.inc"

} // namespace distopt::dist

#endif // DIST_TRANSFORMS_PASSES_H

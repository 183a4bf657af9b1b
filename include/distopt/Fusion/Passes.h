//===- Passes.h - fusion for a target's kernels -----------------*- C++ -*-===//
//
// dist-fuse-for-target: the fused forms a target description
// (TargetDescription.h) accepts, written as nn.fused_matmul. See Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_FUSION_PASSES_H
#define DISTOPT_FUSION_PASSES_H

#include "distopt/Dialect/NN/IR/NNDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace distopt {

#define GEN_PASS_DECL
#include "distopt/Fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "distopt/Fusion/Passes.h.inc"

} // namespace distopt

#endif // DISTOPT_FUSION_PASSES_H

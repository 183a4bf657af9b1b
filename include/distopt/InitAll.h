//===- InitAll.h - register distopt with an MLIR context --------*- C++ -*-===//
//
// The entry points other compilers call to use distopt: register the dialects
// (and the dialects the passes emit or read) and the passes. The pipeline of
// the whole compile is distopt::buildCompilePipeline
// (distopt/Driver/CompilePipeline.h).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_INITALL_H
#define DISTOPT_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace distopt {

/// Adds the dist and nn dialects, plus func, to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every distopt pass (dist-apply-plan, dist-build-training-step,
/// dist-propagate-sharding, ..., and dist-pipeline, the whole compile) with
/// MLIR's global pass registry, so textual pipelines and `-dist-*` flags
/// parse.
void registerAllPasses();

} // namespace distopt

#endif // DISTOPT_INITALL_H

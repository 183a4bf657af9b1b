//===- InitAll.h - register distopt with an MLIR context --------*- C++ -*-===//
//
// The entry points other compilers call to use distopt: register the dialects
// (and the dialects the passes emit or read), the passes, and the named
// pipelines.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_INITALL_H
#define DISTOPT_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace distopt {

/// Adds the dist and nn dialects, plus func, to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every distopt pass and the `dist-pipeline` pipeline with MLIR's
/// global pass registry (so `-dist-propagate-sharding` etc. parse).
void registerAllPasses();

/// Options of the whole sharding flow.
struct PipelineOptions {
  /// Partition for this rank; -1 gives the SPMD program.
  int64_t rank = -1;
};

/// Appends propagate → insert reshards → partition → collectives → cleanup.
void buildShardingPipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options);

} // namespace distopt

#endif // DISTOPT_INITALL_H

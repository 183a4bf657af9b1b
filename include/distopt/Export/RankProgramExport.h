//===- RankProgramExport.h - partitioned IR to rank programs ----*- C++ -*-===//
//
// Turns the module one rank runs (after dist-partition{rank=N} and
// dist-reshard-to-collectives) into distrt's protobuf rank program: values,
// weight slices, constants, inputs/outputs with their slices, and
// instructions with concrete communication groups.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_EXPORT_RANKPROGRAMEXPORT_H
#define DISTOPT_EXPORT_RANKPROGRAMEXPORT_H

#include "distrt/proto/rank_program.pb.h"
#include "mlir/IR/BuiltinOps.h"

namespace distopt {

struct ExportOptions {
  /// Directory that relative weight files are resolved against (the model's
  /// directory). Weight paths in the program are made absolute.
  std::string weightDir;
  /// Pipeline stage of this rank's program (0 without pipelining).
  int stage = 0;
  /// The stage's schedule: (microbatch, forward?) in order. Empty without
  /// pipelining.
  std::vector<std::pair<int64_t, bool>> schedule;
  int64_t microbatches = 1;
  int64_t numStages = 1;
  std::string scheduleKind;
};

/// Exports the function `@main` (or the module's only function) of a module
/// partitioned for `rank`. Reports errors as diagnostics and fails.
mlir::FailureOr<distrt::proto::RankProgram>
exportRankProgram(mlir::ModuleOp module, int64_t rank,
                  const ExportOptions &options);

} // namespace distopt

#endif // DISTOPT_EXPORT_RANKPROGRAMEXPORT_H

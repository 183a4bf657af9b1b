//===- CompileFlags.h - the command-line flags every tool shares -*- C++
//-*-===//
//
// --mesh, --plan, --strict-plan, --dim, --train, --machine, --devices,
// --memory-budget, --emit-plan and --debug-diagnostics mean the same in
// dist-opt, dist-run and dist-train: they are declared once, here.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_COMPILEFLAGS_H
#define DISTOPT_DRIVER_COMPILEFLAGS_H

#include "distopt/Driver/Compilation.h"

#include "llvm/Support/CommandLine.h"

namespace distopt {

/// The category the shared flags are in (tools add their own to it).
llvm::cl::OptionCategory &compileFlagsCategory();

/// Whether the user asked for the IR around each diagnostic.
bool debugDiagnosticsFlag();

/// Whether --mesh, --plan or --train was given.
bool meshOrPlanGiven();

/// The --train flag's value ("" when absent).
llvm::StringRef trainConfigFlag();

/// --mesh and the --plan values joined by ';', as given (a checkpoint
/// records them).
std::string meshFlagText();
std::string planFlagText();

/// --plan auto and the flags that go with it, as given (the AutoPlan
/// library reads them; see docs/auto-plan.md).
struct AutoPlanFlags {
  bool requested = false; // --plan auto
  int64_t devices = 0;    // --devices (0: not given)
  std::string memoryBudget, emitPlan;
  /// --auto-trials: finalists to train and measure (0: none); with
  /// --auto-trial-steps timed steps each.
  int64_t trials = 0, trialSteps = 3;
};
AutoPlanFlags autoPlanFlags();

/// CompileOptions from the flags (with --plan auto, no plan yet): the mesh, the
/// plans and the training config (parsed, with errors as diagnostics on `ctx`)
/// and the dimension bindings.
mlir::FailureOr<CompileOptions> compileOptionsFromFlags(mlir::MLIRContext &ctx);

} // namespace distopt

#endif // DISTOPT_DRIVER_COMPILEFLAGS_H

//===- CompileFlags.h - the command-line flags every tool shares -*- C++ -*-===//
//
// --mesh, --plan, --strict-plan, --dim and --debug-diagnostics mean the same
// in dist-opt, dist-run and dist-train: they are declared once, here.
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

/// Whether --mesh or --plan was given.
bool meshOrPlanGiven();

/// CompileOptions from the flags: the mesh, the plans (parsed, with errors
/// as diagnostics on `ctx`) and the dimension bindings.
mlir::FailureOr<CompileOptions> compileOptionsFromFlags(mlir::MLIRContext &ctx);

} // namespace distopt

#endif // DISTOPT_DRIVER_COMPILEFLAGS_H

//===- ToolDiagnostics.h - diagnostics as the tools print them --*- C++ -*-===//
//
// A mistake in a plan or a model is a few lines: the message, and where —
// the plan file's line (shown, with a caret), the ONNX node's name, or the
// tool's flag. The IR around it (MLIR's "see current operation" dump) only
// with `--debug-diagnostics`.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DRIVER_TOOLDIAGNOSTICS_H
#define DISTOPT_DRIVER_TOOLDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace distopt {

class ToolDiagnostics {
public:
  /// Takes over the printing of `ctx`'s diagnostics until destroyed.
  /// `tool` prefixes diagnostics that have no location.
  ToolDiagnostics(mlir::MLIRContext &ctx, llvm::StringRef tool, bool debug,
                  llvm::raw_ostream &os = llvm::errs());
  ~ToolDiagnostics();

  /// How many errors were printed.
  int errorCount() const { return errors; }

private:
  void print(mlir::Diagnostic &diag, bool isNote);

  mlir::MLIRContext &ctx;
  std::string tool;
  llvm::raw_ostream &os;
  llvm::SourceMgr sources;
  llvm::StringMap<unsigned> bufferOf;
  mlir::DiagnosticEngine::HandlerID handler;
  int errors = 0;
};

} // namespace distopt

#endif // DISTOPT_DRIVER_TOOLDIAGNOSTICS_H

//===- CompilerTestContext.h - what the compiler's unit tests share -*- C++
//-*-===//
//
// An MLIR context with every distopt dialect loaded, its diagnostics
// collected instead of printed (for a test's failure message, and an error
// count), and a scratch directory removed with the context.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TEST_UNIT_SUPPORT_COMPILERTESTCONTEXT_H
#define DISTOPT_TEST_UNIT_SUPPORT_COMPILERTESTCONTEXT_H

#include "distopt/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace distopt::testing {

class CompilerTestContext {
public:
  /// `scratchPrefix` names the scratch directory; `allSeverities` keeps the
  /// text of warnings and notes too, not only of errors.
  explicit CompilerTestContext(llvm::StringRef scratchPrefix,
                               bool allSeverities = false)
      : allSeverities(allSeverities) {
    registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        ctx.get(), [this](mlir::Diagnostic &d) {
          bool error = d.getSeverity() == mlir::DiagnosticSeverity::Error;
          if (error) {
            // A failure must say why.
            EXPECT_FALSE(d.str().empty());
            ++errors;
          }
          if (error || this->allSeverities)
            diagnostics += d.str() + "\n";
          return mlir::success();
        });
    if (llvm::sys::fs::createUniqueDirectory(scratchPrefix, dir))
      ADD_FAILURE() << "cannot create a scratch directory";
  }
  ~CompilerTestContext() { llvm::sys::fs::remove_directories(dir); }
  CompilerTestContext(const CompilerTestContext &) = delete;
  CompilerTestContext &operator=(const CompilerTestContext &) = delete;

  mlir::MLIRContext &context() { return *ctx; }

  /// Forgets the diagnostics so far (before the next case).
  void clearDiagnostics() {
    diagnostics.clear();
    errors = 0;
  }

  /// Writes `text` to the file `name` in the scratch directory; its path.
  std::string writeScratchFile(llvm::StringRef name, llvm::StringRef text) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec) << "cannot write " << path.str().str();
    os << text;
    return path.str().str();
  }

  std::string diagnostics;
  int errors = 0;
  llvm::SmallString<128> dir;

private:
  bool allSeverities;
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

} // namespace distopt::testing

#endif // DISTOPT_TEST_UNIT_SUPPORT_COMPILERTESTCONTEXT_H

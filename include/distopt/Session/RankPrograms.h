//===- RankPrograms.h - a compilation's programs for the runtime -*- C++
//-*-===//
//
// One program per rank of a compiled model, exported to distrt's format and
// checked before anything runs (PointToPointCheck.h).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SESSION_RANKPROGRAMS_H
#define DISTOPT_SESSION_RANKPROGRAMS_H

#include "distopt/Driver/Compilation.h"

#include "distrt/program.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace distopt {

using Programs = std::vector<std::shared_ptr<const distrt::Program>>;

/// One program per rank of a (sharded) compilation, exported to distrt's
/// format and checked: every send has its receive.
llvm::Expected<Programs> exportPrograms(Compilation &compilation);

/// Compiles `modelPath` into one program per rank of the mesh in `options`
/// (one program without a mesh). Weights without a file (hand-written .mlir)
/// get deterministic synthetic values written under `options.workDir`.
llvm::Expected<Programs> compilePrograms(mlir::MLIRContext &ctx,
                                         llvm::StringRef modelPath,
                                         const CompileOptions &options);

/// Writes `programs` as a package into `dir` (created if needed):
/// `rank-<N>.pb` per rank and `package.pb` naming them with the mesh and
/// the global inputs and outputs (docs/rank-program.md).
llvm::Error savePackage(const Programs &programs, llvm::StringRef dir);

/// Microbatches the programs' pipeline schedule runs (1 without one).
int64_t microbatchesOf(const Programs &programs);

} // namespace distopt

#endif // DISTOPT_SESSION_RANKPROGRAMS_H

//===- WritableTarget.h - can a path be written before the run? -*- C++ -*-===//
//
// The tools check where they will write (a checkpoint, a trained model, a
// run's outputs) before they compute anything, so a bad path costs nothing.
// The one check they share: the directory a new file or folder goes into.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SUPPORT_WRITABLETARGET_H
#define DISTOPT_SUPPORT_WRITABLETARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace distopt {

/// Checks that `path` can be created: its parent directory (with
/// `missingParentsAllowed`, the nearest ancestor that exists, since the
/// writer creates the rest) is a writable directory. The error reads
/// "<cannot>: <parent> does not exist" (or "is not a directory", "is not
/// writable"), e.g.
/// cannot = "cannot save a checkpoint in ck".
llvm::Error checkWritableParent(llvm::StringRef path,
                                const llvm::Twine &cannot,
                                bool missingParentsAllowed);

} // namespace distopt

#endif // DISTOPT_SUPPORT_WRITABLETARGET_H

//===- CheckpointFiles.h - the file operations of a save --------*- C++ -*-===//
//
// A save writes every file whole and durable, then swaps the finished
// directory into place (docs/checkpoints.md, "Saving"). These are those
// operations, done with POSIX calls; a caller that wants them to fail or to
// stop the process at a chosen point (the tests of an interrupted or failed
// save, test/tools/checkpoint-faults) passes a subclass to saveCheckpoint.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_CHECKPOINT_CHECKPOINTFILES_H
#define DISTOPT_CHECKPOINT_CHECKPOINTFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace distopt {

class CheckpointFiles {
public:
  virtual ~CheckpointFiles();
  /// Writes `parts` one after another into a new file at `path` and fsyncs
  /// it.
  virtual llvm::Error writeFile(const std::string &path,
                                llvm::ArrayRef<llvm::StringRef> parts);
  /// Makes a directory's entries (new files, renames) durable.
  virtual void syncDirectory(llvm::StringRef dir);
  /// Puts the finished directory `tmp` where `dir` is: swapped atomically
  /// with an existing checkpoint (renameat2 RENAME_EXCHANGE), which is then
  /// deleted; renamed when `dir` does not exist.
  virtual llvm::Error replaceDirectory(llvm::StringRef tmp,
                                       llvm::StringRef dir);
};

} // namespace distopt

#endif // DISTOPT_CHECKPOINT_CHECKPOINTFILES_H

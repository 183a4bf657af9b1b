//===- WritableTarget.cpp - can a path be written before the run? ---------===//
#include "distopt/Support/WritableTarget.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <string>

namespace fs = llvm::sys::fs;

llvm::Error distopt::checkWritableParent(llvm::StringRef path,
                                         const llvm::Twine &cannot,
                                         bool missingParentsAllowed) {
  while (path.size() > 1 && path.ends_with("/"))
    path = path.drop_back();
  std::string parent = llvm::sys::path::parent_path(path).str();
  if (missingParentsAllowed)
    while (!parent.empty() && !fs::exists(parent))
      parent = llvm::sys::path::parent_path(parent).str();
  if (parent.empty())
    parent = ".";
  if (!fs::exists(parent))
    return llvm::createStringError(cannot + ": " + parent +
                                   " does not exist");
  if (!fs::is_directory(parent))
    return llvm::createStringError(cannot + ": " + parent +
                                   " is not a directory");
  if (fs::access(parent, fs::AccessMode::Write))
    return llvm::createStringError(cannot + ": " + parent +
                                   " is not writable");
  return llvm::Error::success();
}

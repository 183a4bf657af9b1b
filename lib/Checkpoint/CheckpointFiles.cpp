//===- CheckpointFiles.cpp - the file operations of a save ----------------===//
#include "distopt/Checkpoint/CheckpointFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace distopt;
using llvm::Error;
using llvm::StringRef;
using llvm::Twine;

static Error fail(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

CheckpointFiles::~CheckpointFiles() = default;

Error CheckpointFiles::writeFile(const std::string &path,
                                 llvm::ArrayRef<StringRef> parts) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail("cannot create " + path + ": " + std::strerror(errno));
  for (StringRef part : parts) {
    const char *at = part.data();
    size_t left = part.size();
    while (left > 0) {
      ssize_t n = ::write(fd, at, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        std::string why = std::strerror(errno);
        ::close(fd);
        return fail("cannot write " + path + ": " + why);
      }
      at += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return fail("cannot write " + path + ": " + std::strerror(errno));
  return Error::success();
}

void CheckpointFiles::syncDirectory(StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

Error CheckpointFiles::replaceDirectory(StringRef tmp, StringRef dir) {
  std::string t = tmp.str(), d = dir.str();
  if (!llvm::sys::fs::exists(d)) {
    if (::rename(t.c_str(), d.c_str()) != 0)
      return fail("cannot rename " + t + " to " + d + ": " +
                  std::strerror(errno));
  } else {
#ifdef RENAME_EXCHANGE
    if (::renameat2(AT_FDCWD, t.c_str(), AT_FDCWD, d.c_str(),
                    RENAME_EXCHANGE) == 0) {
      llvm::sys::fs::remove_directories(t);
      syncDirectory(llvm::sys::path::parent_path(d).empty()
                        ? "."
                        : llvm::sys::path::parent_path(d));
      return Error::success();
    }
#endif
    // Without an atomic exchange: the old one moves aside first, so a
    // crash in between leaves it (as <dir>.old-<pid>), never half of each.
    std::string old = d + ".old-" + std::to_string(::getpid());
    if (::rename(d.c_str(), old.c_str()) != 0)
      return fail("cannot rename " + d + " to " + old + ": " +
                  std::strerror(errno));
    if (::rename(t.c_str(), d.c_str()) != 0)
      return fail("cannot rename " + t + " to " + d + ": " +
                  std::strerror(errno));
    llvm::sys::fs::remove_directories(old);
  }
  StringRef parent = llvm::sys::path::parent_path(d);
  syncDirectory(parent.empty() ? "." : parent);
  return Error::success();
}

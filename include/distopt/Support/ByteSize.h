//===- ByteSize.h - memory sizes as users write them ------------*- C++ -*-===//
#ifndef DISTOPT_SUPPORT_BYTESIZE_H
#define DISTOPT_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace distopt {

/// "80GiB", "512MiB", "1.5GB", "4096" (bytes): binary units KiB..TiB,
/// decimal KB..TB, B (--memory-budget).
llvm::Expected<int64_t> parseByteSize(llvm::StringRef text);

} // namespace distopt

#endif // DISTOPT_SUPPORT_BYTESIZE_H

//===- ModelReader.h - parse an ONNX file without copying weights -*- C++ -*-===//
//
// The generated protobuf classes would copy every initializer's raw_data into
// memory. The reader walks the wire format instead: each initializer is parsed
// without its raw_data field, whose position in the (memory-mapped) file is
// recorded; everything else is parsed normally.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_IMPORT_MODELREADER_H
#define DISTOPT_LIB_IMPORT_MODELREADER_H

#include "onnx/onnx_pb.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <vector>

namespace distopt::onnximport {

/// Where an initializer's raw_data lies in the model file (if it has any).
struct RawDataRef {
  bool present = false;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct LoadedModel {
  onnx::ModelProto model;                // initializers without raw_data
  std::vector<RawDataRef> rawData;       // one per graph initializer
  std::unique_ptr<llvm::MemoryBuffer> file; // the mapped model file
};

/// Parses the model at `path`; a clear error for unreadable, truncated or
/// malformed files.
llvm::Expected<LoadedModel> readModel(llvm::StringRef path);

} // namespace distopt::onnximport

#endif // DISTOPT_LIB_IMPORT_MODELREADER_H

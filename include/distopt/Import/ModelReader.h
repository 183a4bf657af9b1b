//===- ModelReader.h - parse an ONNX file without copying weights -*- C++
//-*-===//
//
// The generated protobuf classes would copy every initializer's raw_data into
// memory. The reader walks the protobuf wire format of the memory-mapped file
// instead: ModelProto field 7 (graph) -> GraphProto field 5 (initializer) ->
// TensorProto field 9 (raw_data). Each initializer is parsed with the
// generated classes *without* its raw_data field, whose position in the file
// is recorded; every other field of the model is parsed normally.
//
// Used by the importer; public so that tests and tools can check offsets.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_IMPORT_MODELREADER_H
#define DISTOPT_IMPORT_MODELREADER_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <vector>

namespace distopt::onnximport {

/// Where an initializer's raw_data lies in the model file, if it has any.
struct RawDataRef {
  bool present = false;
  uint64_t offset = 0; // byte offset of the first data byte in the file
  uint64_t length = 0; // number of data bytes
};

struct LoadedModel {
  onnx::ModelProto model;          // initializers hold no raw_data
  std::vector<RawDataRef> rawData; // one per graph initializer, same order
  std::unique_ptr<llvm::MemoryBuffer> file; // the (mapped) model file

  /// The raw_data bytes of initializer `i` (empty if it has none), read from
  /// the mapped file.
  llvm::ArrayRef<char> rawBytes(size_t i) const;
};

/// Parses the model at `path`; a clear error for unreadable, truncated or
/// malformed files.
llvm::Expected<LoadedModel> readModel(llvm::StringRef path);

/// Parses a model already in memory; `name` is used in messages.
llvm::Expected<LoadedModel>
readModelFromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                    llvm::StringRef name);

} // namespace distopt::onnximport

#endif // DISTOPT_IMPORT_MODELREADER_H

//===- CheckpointFormat.h - a sharded checkpoint's files --------*- C++ -*-===//
//
// The on-disk form of a training checkpoint (docs/checkpoints.md): one
// safetensors file per writing rank holding that rank's pieces, and
// index.json mapping each global tensor to its pieces, with the run's
// metadata and per-file and per-piece CRC-32s. This file writes and parses
// both (the parsers read user files, so every malformation is an error
// naming what is wrong), and does the box arithmetic that copies the part
// of a saved piece a rank needs into its own slice. Dtypes are written by
// their checkpoint names in the dtype table (distrt/dtype.h).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_CHECKPOINT_CHECKPOINTFORMAT_H
#define DISTOPT_CHECKPOINT_CHECKPOINTFORMAT_H

#include "distrt/dtype.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distopt::checkpoint {

/// CRC-32 (the IEEE polynomial of zlib and Python's zlib.crc32), continued
/// from `crc`.
uint32_t crc32(uint32_t crc, const void *data, size_t bytes);
/// The CRC-32 of A followed by B from the CRC-32s of A and of B (B being
/// `secondBytes` long), without reading either: a piece's checksum from its
/// blocks', a file's from its parts'.
uint32_t crc32Combine(uint32_t first, uint32_t second, uint64_t secondBytes);

/// One entry of a safetensors header. `begin`/`end` are relative to the
/// data section (after the 8-byte length and the JSON), as the format says.
struct SafetensorsEntry {
  std::string name;
  distrt::DType dtype = distrt::DType::kUnspecified;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// The 8-byte little-endian length followed by the JSON header, padded with
/// spaces to a multiple of 8 bytes; `metadata` becomes "__metadata__".
std::string writeSafetensorsHeader(
    const std::vector<SafetensorsEntry> &entries,
    const std::vector<std::pair<std::string, std::string>> &metadata);

/// Parses the JSON header of a file whose data section holds `dataBytes`
/// bytes: each entry's dtype, shape and range must agree (bytes = elements
/// * size, inside the data section, no two overlapping). `where` prefixes
/// messages.
llvm::Expected<std::vector<SafetensorsEntry>>
parseSafetensorsHeader(llvm::StringRef json, uint64_t dataBytes,
                       llvm::StringRef where);

/// A piece of a global tensor in one file: the box starting at `offsets`
/// of shape `shape`, stored row-major at bytes [begin, end) of `file`
/// (offsets from the start of the file).
struct Piece {
  std::string file;
  std::vector<int64_t> offsets, shape;
  uint64_t begin = 0, end = 0;
  uint32_t crc32 = 0;
  /// CRC-32 of each kChecksumBlock bytes of [begin, end) (the last block
  /// shorter): a reader that needs some rows reads and checks only the
  /// blocks holding them.
  std::vector<uint32_t> blockCrc32;
};

/// Bytes per block of a piece's block checksums.
inline constexpr uint64_t kChecksumBlock = uint64_t(1) << 16;

/// The block CRCs of `bytes` bytes at `data`.
std::vector<uint32_t> blockChecksums(const char *data, uint64_t bytes);

struct TensorEntry {
  std::string name;
  distrt::DType dtype = distrt::DType::kUnspecified;
  std::vector<int64_t> shape;
  std::vector<Piece> pieces;
};

struct FileEntry {
  std::string name;
  int64_t rank = 0;                    // the rank that wrote it
  uint64_t bytes = 0;                  // the file's size
  uint64_t headerEnd = 0;              // 8 + the JSON header's length
  uint32_t headerCrc32 = 0, crc32 = 0; // of bytes [0, headerEnd), of all
};

/// index.json.
/// An f16 run's loss scaler (LossScaler.h), saved so a resumed run goes on
/// with the same scale, counters and count of applied updates.
struct ScalerRecord {
  double scale = 1.0;
  int64_t cleanSteps = 0, hysteresisLeft = 0, appliedSteps = 0;
};

struct Index {
  int64_t version = 1;
  int64_t step = 0; // steps completed: a resumed run starts at this step
  std::string modelFile, fingerprint;
  std::string mesh, plan;
  int64_t ranks = 1;
  std::string configFile, configText;
  /// Where the batches came from ("data", "tokens" or "random") and how far
  /// the run read (tokens: next token; else the next step).
  std::string dataSource;
  int64_t dataPosition = 0;
  /// "loss_scaler" (runs with an f16 loss scale only).
  std::optional<ScalerRecord> scaler;
  std::vector<FileEntry> files;
  std::vector<TensorEntry> tensors;
};

std::string writeIndex(const Index &index);

/// Parses and checks index.json: known format and version, every field of
/// its type, every piece inside its tensor and in a listed file, byte
/// ranges of the right size inside the file, and the pieces of each tensor
/// covering it exactly once. Messages start with `where` and name the
/// tensor, piece and file.
llvm::Expected<Index> parseIndex(llvm::StringRef text, llvm::StringRef where);

/// A fingerprint (FNV-1a 64, hex) of tensors' names, dtypes and shapes in
/// name order: equal for the same model and optimizer on any mesh.
std::string fingerprint(
    std::vector<std::tuple<std::string, distrt::DType, std::vector<int64_t>>>
        tensors);

/// Whether boxes (offsets, shape) a and b share an element.
bool boxesOverlap(llvm::ArrayRef<int64_t> aOffsets,
                  llvm::ArrayRef<int64_t> aShape,
                  llvm::ArrayRef<int64_t> bOffsets,
                  llvm::ArrayRef<int64_t> bShape);

/// Copies the elements of box `src` (row-major at `srcData`, global offsets
/// `srcOffsets`) that lie inside box `dst` into `dstData`, each element
/// `elementSize` bytes; returns how many elements it copied.
int64_t copyOverlap(const void *srcData, llvm::ArrayRef<int64_t> srcOffsets,
                    llvm::ArrayRef<int64_t> srcShape, void *dstData,
                    llvm::ArrayRef<int64_t> dstOffsets,
                    llvm::ArrayRef<int64_t> dstShape, size_t elementSize);

} // namespace distopt::checkpoint

#endif // DISTOPT_CHECKPOINT_CHECKPOINTFORMAT_H

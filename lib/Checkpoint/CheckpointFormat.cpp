//===- CheckpointFormat.cpp - a sharded checkpoint's files ----------------===//
#include "distopt/Checkpoint/CheckpointFormat.h"
#include "distrt/tensor.h"

#include <zlib.h>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

using namespace distopt;
using namespace distopt::checkpoint;
namespace json = llvm::json;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

static llvm::Error fail(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

uint32_t checkpoint::crc32(uint32_t crc, const void *data, size_t bytes) {
  // llvm::crc32 takes an ArrayRef sized by size_t; split nothing.
  return llvm::crc32(
      crc, llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), bytes));
}

uint32_t checkpoint::crc32Combine(uint32_t first, uint32_t second,
                                  uint64_t secondBytes) {
  return static_cast<uint32_t>(
      crc32_combine(first, second, static_cast<z_off_t>(secondBytes)));
}

/// Elements of `shape`, or -1 when the product leaves [0, 2^62) (a
/// malformed file must not overflow the checks).
static int64_t elementsOf(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > (int64_t(1) << 62) / d)
      return -1;
    n *= d;
  }
  return n;
}

static json::Array toArray(llvm::ArrayRef<int64_t> v) {
  json::Array a;
  for (int64_t x : v)
    a.push_back(x);
  return a;
}

std::string checkpoint::writeSafetensorsHeader(
    const std::vector<SafetensorsEntry> &entries,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  json::Object root;
  if (!metadata.empty()) {
    json::Object meta;
    for (const auto &[k, v] : metadata)
      meta[k] = v;
    root["__metadata__"] = std::move(meta);
  }
  for (const SafetensorsEntry &e : entries)
    root[e.name] = json::Object{
        {"dtype", distrt::CheckpointDTypeName(e.dtype)},
        {"shape", toArray(e.shape)},
        {"data_offsets", json::Array{int64_t(e.begin), int64_t(e.end)}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(root));
  os.flush();
  // Padding keeps the data section 8-byte aligned (safetensors allows
  // trailing spaces in the header).
  while ((text.size() + 8) % 8)
    text += ' ';
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text;
}

/// A non-negative integer array, or an error naming `what`.
static Expected<std::vector<int64_t>> intArray(const json::Value *v,
                                               const Twine &what) {
  const json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a)
    return fail(what + " must be an array of non-negative integers");
  std::vector<int64_t> out;
  for (const json::Value &x : *a) {
    std::optional<int64_t> i = x.getAsInteger();
    if (!i || *i < 0)
      return fail(what + " must be an array of non-negative integers");
    out.push_back(*i);
  }
  return out;
}

Expected<std::vector<SafetensorsEntry>>
checkpoint::parseSafetensorsHeader(StringRef text, uint64_t dataBytes,
                                   StringRef where) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail(where + ": the safetensors header is not JSON: " +
                llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(where + ": the safetensors header is not a JSON object");
  std::vector<SafetensorsEntry> out;
  for (const auto &[key, value] : *root) {
    if (key == "__metadata__") {
      const json::Object *meta = value.getAsObject();
      bool strings = meta && llvm::all_of(*meta, [](const auto &kv) {
                       return kv.second.getAsString().has_value();
                     });
      if (!strings)
        return fail(where + ": __metadata__ must map strings to strings");
      continue;
    }
    std::string at = (where + ": tensor '" + key.str() + "'").str();
    const json::Object *o = value.getAsObject();
    if (!o)
      return fail(at + " is not an object");
    SafetensorsEntry e;
    e.name = key.str();
    std::optional<StringRef> dtype = o->getString("dtype");
    if (!dtype || !distrt::ParseCheckpointDType(dtype->str(), &e.dtype).ok())
      return fail(at + ": unknown or missing dtype");
    auto shape = intArray(o->get("shape"), at + ": shape");
    if (!shape)
      return shape.takeError();
    e.shape = std::move(*shape);
    auto range = intArray(o->get("data_offsets"), at + ": data_offsets");
    if (!range)
      return range.takeError();
    if (range->size() != 2 || (*range)[0] > (*range)[1] ||
        static_cast<uint64_t>((*range)[1]) > dataBytes)
      return fail(at + ": data_offsets must be [begin, end] inside the " +
                  Twine(dataBytes) + " data bytes");
    e.begin = (*range)[0];
    e.end = (*range)[1];
    int64_t n = elementsOf(e.shape);
    if (n < 0 || e.end - e.begin !=
                     static_cast<uint64_t>(n) * distrt::DTypeSize(e.dtype))
      return fail(at + ": data_offsets hold " + Twine(e.end - e.begin) +
                  " bytes, not those of " +
                  distrt::CheckpointDTypeName(e.dtype) +
                  distrt::ShapeToString(e.shape));
    out.push_back(std::move(e));
  }
  std::vector<const SafetensorsEntry *> byBegin;
  for (const SafetensorsEntry &e : out)
    byBegin.push_back(&e);
  llvm::sort(byBegin, [](auto *a, auto *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byBegin.size(); ++i)
    if (byBegin[i]->begin < byBegin[i - 1]->end)
      return fail(where + ": tensors '" + byBegin[i - 1]->name + "' and '" +
                  byBegin[i]->name + "' overlap in the data section");
  return out;
}

std::vector<uint32_t> checkpoint::blockChecksums(const char *data,
                                                 uint64_t bytes) {
  std::vector<uint32_t> out;
  for (uint64_t at = 0; at < bytes; at += kChecksumBlock)
    out.push_back(crc32(0, data + at, std::min(kChecksumBlock, bytes - at)));
  return out;
}

std::string checkpoint::writeIndex(const Index &index) {
  json::Object files;
  for (const FileEntry &f : index.files)
    files[f.name] = json::Object{{"rank", f.rank},
                                 {"bytes", int64_t(f.bytes)},
                                 {"header_bytes", int64_t(f.headerEnd)},
                                 {"header_crc32", int64_t(f.headerCrc32)},
                                 {"crc32", int64_t(f.crc32)}};
  json::Object tensors;
  for (const TensorEntry &t : index.tensors) {
    json::Array pieces;
    for (const Piece &p : t.pieces)
      pieces.push_back(json::Object{
          {"file", p.file},
          {"offsets", toArray(p.offsets)},
          {"shape", toArray(p.shape)},
          {"bytes", json::Array{int64_t(p.begin), int64_t(p.end)}},
          {"crc32", int64_t(p.crc32)},
          {"block_crc32", toArray(std::vector<int64_t>(p.blockCrc32.begin(),
                                                       p.blockCrc32.end()))}});
    tensors[t.name] =
        json::Object{{"dtype", distrt::CheckpointDTypeName(t.dtype)},
                     {"shape", toArray(t.shape)},
                     {"pieces", std::move(pieces)}};
  }
  json::Object root{{"format", "distopt-checkpoint"},
                    {"version", index.version},
                    {"checksum_block_bytes", int64_t(kChecksumBlock)},
                    {"step", index.step},
                    {"model", json::Object{{"file", index.modelFile},
                                           {"fingerprint", index.fingerprint}}},
                    {"mesh", index.mesh},
                    {"plan", index.plan},
                    {"ranks", index.ranks},
                    {"train_config", json::Object{{"file", index.configFile},
                                                  {"text", index.configText}}},
                    {"data", json::Object{{"source", index.dataSource},
                                          {"position", index.dataPosition}}},
                    {"files", std::move(files)},
                    {"tensors", std::move(tensors)}};
  if (index.scaler)
    root["loss_scaler"] =
        json::Object{{"scale", index.scaler->scale},
                     {"clean_steps", index.scaler->cleanSteps},
                     {"hysteresis_left", index.scaler->hysteresisLeft},
                     {"applied_steps", index.scaler->appliedSteps}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  os.flush();
  return text;
}

namespace {
/// Reads index.json's fields; the first problem becomes the error.
class IndexReader {
public:
  explicit IndexReader(StringRef where) : where(where.str()) {}

  llvm::Error problem(const Twine &what) { return fail(where + ": " + what); }
  Expected<const json::Object *> object(const json::Object &o, StringRef key,
                                        const Twine &at) {
    const json::Object *v = o.getObject(key);
    if (!v)
      return problem(at + "'" + key + "' must be an object");
    return v;
  }
  Expected<std::string> string(const json::Object &o, StringRef key,
                               const Twine &at) {
    std::optional<StringRef> v = o.getString(key);
    if (!v)
      return problem(at + "'" + key + "' must be a string");
    return v->str();
  }
  Expected<int64_t> integer(const json::Object &o, StringRef key,
                            const Twine &at, int64_t min, int64_t max) {
    std::optional<int64_t> v = o.getInteger(key);
    if (!v || *v < min || *v > max)
      return problem(at + "'" + key + "' must be an integer in [" + Twine(min) +
                     ", " + Twine(max) + "]");
    return *v;
  }
  Expected<std::vector<int64_t>> ints(const json::Object &o, StringRef key,
                                      const Twine &at) {
    auto v = intArray(o.get(key), at + "'" + key + "'");
    if (!v)
      return problem(llvm::toString(v.takeError()));
    return v;
  }

private:
  std::string where;
};
} // namespace

// Unwraps an Expected into `var`, returning its error from the function.
#define TRY(var, expr)                                                         \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.takeError();                                             \
  auto var = std::move(*var##OrErr)

Expected<Index> checkpoint::parseIndex(StringRef text, StringRef where) {
  constexpr int64_t kMax = int64_t(1) << 62;
  constexpr int64_t kCrcMax = 0xffffffffll;
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail(where + ": not JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(where + ": not a JSON object");
  IndexReader r(where);
  Index index;
  std::optional<StringRef> format = root->getString("format");
  if (!format || *format != "distopt-checkpoint")
    return r.problem("'format' must be \"distopt-checkpoint\"");
  TRY(version, r.integer(*root, "version", "", 1, kMax));
  if (version != 1)
    return r.problem("version " + Twine(version) +
                     " is not one this build reads (1)");
  TRY(block, r.integer(*root, "checksum_block_bytes", "", 1, kMax));
  if (static_cast<uint64_t>(block) != kChecksumBlock)
    return r.problem("checksum_block_bytes " + Twine(block) +
                     " is not the block size this build reads (" +
                     Twine(kChecksumBlock) + ")");
  TRY(step, r.integer(*root, "step", "", 0, kMax));
  index.step = step;
  TRY(model, r.object(*root, "model", ""));
  TRY(modelFile, r.string(*model, "file", "model: "));
  TRY(fp, r.string(*model, "fingerprint", "model: "));
  index.modelFile = modelFile;
  index.fingerprint = fp;
  TRY(mesh, r.string(*root, "mesh", ""));
  TRY(plan, r.string(*root, "plan", ""));
  TRY(ranks, r.integer(*root, "ranks", "", 1, kMax));
  index.mesh = mesh;
  index.plan = plan;
  index.ranks = ranks;
  TRY(config, r.object(*root, "train_config", ""));
  TRY(configFile, r.string(*config, "file", "train_config: "));
  TRY(configText, r.string(*config, "text", "train_config: "));
  index.configFile = configFile;
  index.configText = configText;
  TRY(data, r.object(*root, "data", ""));
  TRY(source, r.string(*data, "source", "data: "));
  TRY(position, r.integer(*data, "position", "data: ", 0, kMax));
  index.dataSource = source;
  index.dataPosition = position;
  if (root->get("loss_scaler")) {
    TRY(scaler, r.object(*root, "loss_scaler", ""));
    std::optional<double> scale = scaler->getNumber("scale");
    if (!scale || !(*scale > 0) || !std::isfinite(*scale))
      return r.problem("loss_scaler: 'scale' must be a positive number");
    TRY(clean, r.integer(*scaler, "clean_steps", "loss_scaler: ", 0, kMax));
    TRY(left, r.integer(*scaler, "hysteresis_left", "loss_scaler: ", 0, kMax));
    TRY(applied, r.integer(*scaler, "applied_steps", "loss_scaler: ", 0, step));
    index.scaler = ScalerRecord{*scale, clean, left, applied};
  }

  TRY(files, r.object(*root, "files", ""));
  std::map<std::string, const FileEntry *> fileByName;
  index.files.reserve(files->size());
  for (const auto &[key, value] : *files) {
    std::string at = "file '" + key.str() + "': ";
    const json::Object *f = value.getAsObject();
    if (!f)
      return r.problem(at + "not an object");
    FileEntry e;
    e.name = key.str();
    if (e.name.empty() || e.name.find('/') != std::string::npos ||
        e.name.find('\\') != std::string::npos || e.name == "." ||
        e.name == "..")
      return r.problem(at + "a file name must not name a directory");
    TRY(rank, r.integer(*f, "rank", at, 0, kMax));
    TRY(bytes, r.integer(*f, "bytes", at, 8, kMax));
    TRY(headerEnd, r.integer(*f, "header_bytes", at, 8, bytes));
    TRY(headerCrc, r.integer(*f, "header_crc32", at, 0, kCrcMax));
    TRY(crc, r.integer(*f, "crc32", at, 0, kCrcMax));
    e.rank = rank;
    e.bytes = bytes;
    e.headerEnd = headerEnd;
    e.headerCrc32 = static_cast<uint32_t>(headerCrc);
    e.crc32 = static_cast<uint32_t>(crc);
    index.files.push_back(std::move(e));
  }
  for (const FileEntry &f : index.files)
    fileByName[f.name] = &f;

  TRY(tensors, r.object(*root, "tensors", ""));
  for (const auto &[key, value] : *tensors) {
    std::string at = "tensor '" + key.str() + "': ";
    const json::Object *t = value.getAsObject();
    if (!t)
      return r.problem(at + "not an object");
    TensorEntry e;
    e.name = key.str();
    TRY(dtype, r.string(*t, "dtype", at));
    if (!distrt::ParseCheckpointDType(dtype, &e.dtype).ok())
      return r.problem(at + "unknown dtype '" + dtype + "'");
    TRY(shape, r.ints(*t, "shape", at));
    e.shape = shape;
    int64_t total = elementsOf(e.shape);
    if (total < 0)
      return r.problem(at + "shape " + distrt::ShapeToString(e.shape) +
                       " is too large");
    const json::Array *pieces = t->getArray("pieces");
    if (!pieces || pieces->empty())
      return r.problem(at + "'pieces' must be a non-empty array");
    int64_t covered = 0;
    for (size_t i = 0; i < pieces->size(); ++i) {
      std::string pat = at + "piece " + std::to_string(i) + ": ";
      const json::Object *p = (*pieces)[i].getAsObject();
      if (!p)
        return r.problem(pat + "not an object");
      Piece piece;
      TRY(file, r.string(*p, "file", pat));
      auto f = fileByName.find(file);
      if (f == fileByName.end())
        return r.problem(pat + "file '" + file + "' is not in 'files'");
      piece.file = file;
      TRY(offsets, r.ints(*p, "offsets", pat));
      TRY(pshape, r.ints(*p, "shape", pat));
      piece.offsets = offsets;
      piece.shape = pshape;
      if (piece.offsets.size() != e.shape.size() ||
          piece.shape.size() != e.shape.size())
        return r.problem(pat + "offsets and shape must have " +
                         Twine(e.shape.size()) + " dimension(s)");
      for (size_t d = 0; d < e.shape.size(); ++d)
        if (piece.offsets[d] > e.shape[d] ||
            piece.shape[d] > e.shape[d] - piece.offsets[d])
          return r.problem(
              pat + "the box at " + distrt::ShapeToString(piece.offsets) +
              " of shape " + distrt::ShapeToString(piece.shape) +
              " leaves the tensor's shape " + distrt::ShapeToString(e.shape));
      TRY(range, r.ints(*p, "bytes", pat));
      if (range.size() != 2 || range[0] > range[1] ||
          range[0] < static_cast<int64_t>(f->second->headerEnd) ||
          range[1] > static_cast<int64_t>(f->second->bytes))
        return r.problem(pat +
                         "'bytes' must be [begin, end] inside the data "
                         "section of '" +
                         file + "'");
      piece.begin = range[0];
      piece.end = range[1];
      int64_t n = elementsOf(piece.shape);
      if (piece.end - piece.begin !=
          static_cast<uint64_t>(n) * distrt::DTypeSize(e.dtype))
        return r.problem(pat + "'bytes' span " +
                         Twine(piece.end - piece.begin) +
                         " bytes, not those of " + dtype +
                         distrt::ShapeToString(piece.shape));
      TRY(crc, r.integer(*p, "crc32", pat, 0, kCrcMax));
      piece.crc32 = static_cast<uint32_t>(crc);
      TRY(blocks, r.ints(*p, "block_crc32", pat));
      uint64_t bytes = piece.end - piece.begin;
      if (blocks.size() != (bytes + kChecksumBlock - 1) / kChecksumBlock)
        return r.problem(pat + "'block_crc32' has " + Twine(blocks.size()) +
                         " checksum(s); " + Twine(bytes) + " bytes make " +
                         Twine((bytes + kChecksumBlock - 1) / kChecksumBlock) +
                         " blocks of " + Twine(kChecksumBlock));
      for (int64_t b : blocks) {
        if (b < 0 || b > kCrcMax)
          return r.problem(pat + "'block_crc32' holds " + Twine(b) +
                           ", not a CRC-32");
        piece.blockCrc32.push_back(static_cast<uint32_t>(b));
      }
      for (const Piece &other : e.pieces)
        if (boxesOverlap(other.offsets, other.shape, piece.offsets,
                         piece.shape) &&
            n > 0)
          return r.problem(pat + "overlaps another piece (at " +
                           distrt::ShapeToString(other.offsets) + " in '" +
                           other.file + "')");
      covered += n;
      e.pieces.push_back(std::move(piece));
    }
    // Disjoint pieces whose sizes add up to the tensor's cover it.
    if (covered != total)
      return r.problem(at + "the pieces hold " + Twine(covered) + " of its " +
                       Twine(total) + " elements (a piece is missing)");
    index.tensors.push_back(std::move(e));
  }
  return index;
}

std::string checkpoint::fingerprint(
    std::vector<std::tuple<std::string, distrt::DType, std::vector<int64_t>>>
        tensors) {
  llvm::sort(tensors);
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&](StringRef s) {
    for (char c : s) {
      h ^= static_cast<uint8_t>(c);
      h *= 0x100000001b3ull;
    }
  };
  for (const auto &[name, dtype, shape] : tensors) {
    add(name);
    add(" " + distrt::CheckpointDTypeName(dtype) +
        distrt::ShapeToString(shape) + "\n");
  }
  std::string out;
  llvm::raw_string_ostream(out) << llvm::format_hex_no_prefix(h, 16);
  return out;
}

bool checkpoint::boxesOverlap(llvm::ArrayRef<int64_t> aOffsets,
                              llvm::ArrayRef<int64_t> aShape,
                              llvm::ArrayRef<int64_t> bOffsets,
                              llvm::ArrayRef<int64_t> bShape) {
  for (size_t d = 0; d < aOffsets.size(); ++d)
    if (std::max(aOffsets[d], bOffsets[d]) >=
        std::min(aOffsets[d] + aShape[d], bOffsets[d] + bShape[d]))
      return false;
  return true;
}

int64_t checkpoint::copyOverlap(const void *srcData,
                                llvm::ArrayRef<int64_t> srcOffsets,
                                llvm::ArrayRef<int64_t> srcShape, void *dstData,
                                llvm::ArrayRef<int64_t> dstOffsets,
                                llvm::ArrayRef<int64_t> dstShape,
                                size_t elementSize) {
  const size_t rank = srcShape.size();
  if (!boxesOverlap(srcOffsets, srcShape, dstOffsets, dstShape))
    return 0;
  std::vector<int64_t> lo(rank), extent(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max(srcOffsets[d], dstOffsets[d]);
    extent[d] =
        std::min(srcOffsets[d] + srcShape[d], dstOffsets[d] + dstShape[d]) -
        lo[d];
  }
  // Row-major strides in elements.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  // The trailing dimensions both boxes hold whole form one contiguous run.
  size_t inner = rank;
  int64_t run = 1;
  while (inner > 0) {
    size_t d = inner - 1;
    run *= extent[d];
    inner = d;
    if (extent[d] != srcShape[d] || extent[d] != dstShape[d])
      break;
  }
  const auto *src = static_cast<const char *>(srcData);
  auto *dst = static_cast<char *>(dstData);
  std::vector<int64_t> idx(inner, 0);
  int64_t copied = 0;
  while (true) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t g = lo[d] + (d < inner ? idx[d] : 0);
      s += (g - srcOffsets[d]) * srcStride[d];
      t += (g - dstOffsets[d]) * dstStride[d];
    }
    std::memcpy(dst + t * elementSize, src + s * elementSize,
                run * elementSize);
    copied += run;
    size_t d = inner;
    while (d > 0 && ++idx[d - 1] == extent[d - 1])
      idx[--d] = 0;
    if (d == 0)
      return copied;
  }
}

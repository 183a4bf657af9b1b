//===- Checkpoint.cpp - save and resume sharded training state ------------===//
//
// Every process computes the same table of the programs' training-state
// slots (rank, tensor, box) from the programs alone, so the choice of which
// rank writes a replicated piece needs no communication; the processes only
// exchange their files' checksums (save) and their success (save and load)
// through Session::allGather.
//
//===----------------------------------------------------------------------===//
#include "distopt/Runner/Checkpoint.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace distopt;
using namespace distopt::checkpoint;
namespace json = llvm::json;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

static Error fail(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {
/// One rank's copy of (a piece of) one training-state tensor.
struct Slot {
  int rank = 0;
  const distrt::proto::Weight *weight = nullptr;
  distrt::DType dtype = distrt::DType::kUnspecified;
  std::vector<int64_t> global, offsets, sizes;
  bool writes = false; // the lowest rank holding this box writes it
};
} // namespace

static Expected<std::vector<Slot>> stateSlots(const Programs &programs) {
  std::vector<Slot> slots;
  std::set<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>
      seen;
  for (size_t r = 0; r < programs.size(); ++r) {
    const distrt::Program &p = *programs[r];
    for (const distrt::proto::Weight &w : p.proto().weights()) {
      if (!w.has_update() && !w.zeros())
        continue;
      const distrt::TensorType &type = p.value(p.ValueIndex(w.value())).type;
      distrt::SliceInfo s;
      distrt::Status st = distrt::ResolveSlice(w.slice(), type.shape, &s);
      if (!st.ok())
        return fail("rank " + Twine(r) + ", '" + w.name() +
                    "': " + st.ToString());
      Slot slot;
      slot.rank = static_cast<int>(r);
      slot.weight = &w;
      slot.dtype = type.dtype;
      slot.global.assign(s.global_shape.begin(), s.global_shape.end());
      slot.offsets.assign(s.offsets.begin(), s.offsets.end());
      slot.sizes.assign(s.sizes.begin(), s.sizes.end());
      slot.writes = seen.insert({w.name(), slot.offsets, slot.sizes}).second;
      slots.push_back(std::move(slot));
    }
  }
  return slots;
}

/// The model's training-state tensors: name -> (dtype, global shape), and
/// their fingerprint.
static std::map<std::string, std::pair<distrt::DType, std::vector<int64_t>>>
stateTensors(const std::vector<Slot> &slots, std::string *fp) {
  std::map<std::string, std::pair<distrt::DType, std::vector<int64_t>>> out;
  for (const Slot &s : slots)
    out.emplace(s.weight->name(), std::make_pair(s.dtype, s.global));
  std::vector<std::tuple<std::string, distrt::DType, std::vector<int64_t>>>
      list;
  for (const auto &[name, t] : out)
    list.emplace_back(name, t.first, t.second);
  *fp = fingerprint(std::move(list));
  return out;
}

static std::string fileName(int rank) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d.safetensors", rank);
  return buf;
}

static std::string join(StringRef dir, StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return p.str().str();
}

/// Writes `parts` one after another into a new file and fsyncs it.
static Error writeSynced(const std::string &path,
                         const std::vector<StringRef> &parts) {
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

/// Makes a directory's entries (new files, renames) durable.
static void syncDirectory(StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Test hook (docs/checkpoints.md): DISTOPT_CHECKPOINT_TEST_KILL=N makes the
/// process SIGKILL itself in its Nth save, after its first data file, to
/// show that an interrupted save leaves the previous checkpoint intact.
static void maybeKillForTest(int saveNumber) {
  const char *v = std::getenv("DISTOPT_CHECKPOINT_TEST_KILL");
  if (v && std::atoi(v) == saveNumber)
    std::raise(SIGKILL);
}

/// Test hook: DISTOPT_CHECKPOINT_TEST_FAIL_RANK=R makes writing rank R's
/// file fail, to show that one rank's failure fails the save everywhere and
/// leaves the previous checkpoint.
static Error maybeFailForTest(int rank, StringRef path) {
  const char *v = std::getenv("DISTOPT_CHECKPOINT_TEST_FAIL_RANK");
  if (v && *v && std::atoi(v) == rank)
    return fail("cannot write " + path +
                ": failure injected by DISTOPT_CHECKPOINT_TEST_FAIL_RANK");
  return Error::success();
}

/// Puts the finished `tmp` where `dir` is: swapped atomically with an
/// existing checkpoint (renameat2 RENAME_EXCHANGE), which is then deleted.
static Error swapIntoPlace(StringRef tmp, StringRef dir) {
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

/// Agrees on success: every process's error ("" for none) is exchanged;
/// the first one fails every process.
static Error agree(Session &session, Error mine, StringRef what) {
  std::string text = mine ? llvm::toString(std::move(mine)) : std::string();
  auto all = session.allGather(text);
  if (!all)
    return all.takeError();
  if (!text.empty())
    return fail(text);
  for (size_t p = 0; p < all->size(); ++p)
    if (!(*all)[p].empty())
      return fail(what + ": process " + Twine(p) + " failed: " + (*all)[p]);
  return Error::success();
}

Error distopt::saveCheckpoint(Session &session, const Programs &programs,
                              StringRef dir, const CheckpointMeta &meta,
                              CheckpointIO *io) {
  // "ck/" names the directory ck: the temporary one goes beside it.
  while (dir.size() > 1 && dir.ends_with("/"))
    dir = dir.drop_back();
  static int saves = 0;
  ++saves;
  auto t0 = std::chrono::steady_clock::now();
  auto slots = stateSlots(programs);
  if (!slots)
    return slots.takeError();
  bool root = session.processIndex() == 0;

  // The root names and creates the temporary directory.
  std::string tmp = dir.str() + ".tmp-" + std::to_string(::getpid());
  Error made = Error::success();
  if (root && llvm::sys::fs::exists(dir) &&
      !llvm::sys::fs::exists(join(dir, "index.json"))) {
    // The swap deletes what was there: only ever a checkpoint.
    std::error_code ec;
    llvm::sys::fs::directory_iterator it(dir, ec);
    if (ec || it != llvm::sys::fs::directory_iterator())
      made = fail(dir + " exists and is not a checkpoint (it has no "
                        "index.json); not replacing it");
  }
  if (root && !made) {
    llvm::sys::fs::remove_directories(tmp);
    if (std::error_code ec = llvm::sys::fs::create_directories(tmp))
      made = fail("cannot create " + tmp + ": " + ec.message());
  }
  auto names = session.allGather(root ? tmp : std::string());
  if (!names)
    return names.takeError();
  tmp = (*names)[0];
  if (Error e = agree(session, std::move(made), "saving a checkpoint"))
    return e;

  // Each rank this process runs writes the pieces it is the lowest holder
  // of. The message to the root lists each file and piece with its CRC.
  json::Array written;
  Error wrote = [&]() -> Error {
    auto local = session.localPersistent();
    if (!local)
      return local.takeError();
    std::map<const distrt::proto::Weight *, const Slot *> slotOf;
    for (const Slot &s : *slots)
      slotOf[s.weight] = &s;
    for (auto &[rank, pieces] : *local) {
      std::vector<SafetensorsEntry> entries;
      std::vector<std::pair<std::string, std::string>> metadata;
      std::vector<const distrt::PersistentTensor *> data;
      std::set<std::string> names;
      uint64_t at = 0;
      for (const distrt::PersistentTensor &t : pieces) {
        auto it = slotOf.find(t.weight);
        if (it == slotOf.end() || !it->second->writes)
          continue;
        const Slot &s = *it->second;
        SafetensorsEntry e;
        // A rank may hold several pieces of one tensor (the q, k and v
        // columns of a fused attention weight under tp): those after the
        // first get their offsets in their key.
        e.name = t.weight->name();
        if (!names.insert(e.name).second)
          e.name += "@" + distrt::ShapeToString(s.offsets);
        e.dtype = s.dtype;
        e.shape = s.sizes;
        e.begin = at;
        e.end = at + t.value.byte_size();
        at = e.end;
        entries.push_back(e);
        metadata.emplace_back(
            e.name, "tensor=" + t.weight->name() +
                        " offsets=" + distrt::ShapeToString(s.offsets) +
                        " global_shape=" + distrt::ShapeToString(s.global));
        data.push_back(&t);
      }
      if (entries.empty())
        continue;
      std::string header = writeSafetensorsHeader(entries, metadata);
      std::vector<StringRef> parts{header};
      json::Array pieceInfo;
      // One pass over the data: each 64 KiB block's CRC, and from those the
      // piece's and the file's.
      const uint32_t headerCrc = crc32(0, header.data(), header.size());
      uint32_t fileCrc = headerCrc;
      for (size_t i = 0; i < data.size(); ++i) {
        StringRef bytes(static_cast<const char *>(data[i]->value.raw()),
                        data[i]->value.byte_size());
        parts.push_back(bytes);
        uint32_t pieceCrc = 0;
        json::Array blocks;
        uint64_t summed = 0;
        for (uint32_t c : blockChecksums(bytes.data(), bytes.size())) {
          uint64_t n =
              std::min<uint64_t>(kChecksumBlock, bytes.size() - summed);
          pieceCrc = crc32Combine(pieceCrc, c, n);
          blocks.push_back(int64_t(c));
          summed += n;
        }
        fileCrc = crc32Combine(fileCrc, pieceCrc, bytes.size());
        pieceInfo.push_back(json::Object{
            {"name", data[i]->weight->name()},
            {"offsets",
             distrt::ShapeToString(slotOf[data[i]->weight]->offsets)},
            {"begin", int64_t(header.size() + entries[i].begin)},
            {"end", int64_t(header.size() + entries[i].end)},
            {"crc32", int64_t(pieceCrc)},
            {"blocks", std::move(blocks)}});
      }
      std::string name = fileName(rank);
      if (Error e = maybeFailForTest(rank, join(tmp, name)))
        return e;
      if (Error e = writeSynced(join(tmp, name), parts))
        return e;
      uint64_t bytes = header.size() + at;
      if (io)
        io->bytesPerRank.emplace_back(rank, bytes);
      written.push_back(json::Object{{"file", name},
                                     {"rank", rank},
                                     {"bytes", int64_t(bytes)},
                                     {"header_bytes", int64_t(header.size())},
                                     {"header_crc32", int64_t(headerCrc)},
                                     {"crc32", int64_t(fileCrc)},
                                     {"pieces", std::move(pieceInfo)}});
      maybeKillForTest(saves);
    }
    return Error::success();
  }();
  std::string message;
  if (wrote)
    message = "!" + llvm::toString(std::move(wrote));
  else
    llvm::raw_string_ostream(message) << json::Value(std::move(written));
  auto all = session.allGather(message);
  if (!all)
    return all.takeError();
  for (size_t p = 0; p < all->size(); ++p)
    if (StringRef((*all)[p]).starts_with("!")) {
      if (root)
        llvm::sys::fs::remove_directories(tmp);
      return fail("saving checkpoint " + dir + ": process " + Twine(p) + ": " +
                  StringRef((*all)[p]).drop_front());
    }

  // The root writes index.json and swaps the directory into place.
  Error placed = [&]() -> Error {
    if (!root)
      return Error::success();
    Index index;
    index.step = meta.step;
    index.modelFile = llvm::sys::path::filename(meta.modelFile).str();
    index.mesh = meta.mesh;
    index.plan = meta.plan;
    index.ranks = static_cast<int64_t>(programs.size());
    index.configFile = llvm::sys::path::filename(meta.configFile).str();
    index.configText = meta.configText;
    index.dataSource = meta.dataSource;
    index.dataPosition = meta.dataPosition;
    stateTensors(*slots, &index.fingerprint);
    // (file, tensor) -> the piece's byte range and CRC, from the messages.
    std::map<std::pair<std::string, std::string>, Piece> stored;
    for (const std::string &m : *all) {
      Expected<json::Value> v = json::parse(m);
      if (!v)
        return v.takeError();
      for (const json::Value &f : *v->getAsArray()) {
        const json::Object &o = *f.getAsObject();
        FileEntry e;
        e.name = o.getString("file")->str();
        e.rank = *o.getInteger("rank");
        e.bytes = *o.getInteger("bytes");
        e.headerEnd = *o.getInteger("header_bytes");
        e.headerCrc32 = static_cast<uint32_t>(*o.getInteger("header_crc32"));
        e.crc32 = static_cast<uint32_t>(*o.getInteger("crc32"));
        for (const json::Value &pv : *o.getArray("pieces")) {
          const json::Object &po = *pv.getAsObject();
          Piece piece;
          piece.file = e.name;
          piece.begin = *po.getInteger("begin");
          piece.end = *po.getInteger("end");
          piece.crc32 = static_cast<uint32_t>(*po.getInteger("crc32"));
          for (const json::Value &b : *po.getArray("blocks"))
            piece.blockCrc32.push_back(
                static_cast<uint32_t>(*b.getAsInteger()));
          stored[{e.name, po.getString("name")->str() + " " +
                              po.getString("offsets")->str()}] = piece;
        }
        index.files.push_back(std::move(e));
      }
    }
    std::map<std::string, size_t> tensorAt;
    for (const Slot &s : *slots) {
      if (!s.writes)
        continue;
      auto [it, added] =
          tensorAt.emplace(s.weight->name(), index.tensors.size());
      if (added) {
        TensorEntry t;
        t.name = s.weight->name();
        t.dtype = s.dtype;
        t.shape = s.global;
        index.tensors.push_back(std::move(t));
      }
      auto p =
          stored.find({fileName(s.rank), s.weight->name() + " " +
                                             distrt::ShapeToString(s.offsets)});
      if (p == stored.end())
        return fail("saving checkpoint " + dir + ": rank " + Twine(s.rank) +
                    " did not write its piece of '" + s.weight->name() + "'");
      Piece piece = p->second;
      piece.offsets = s.offsets;
      piece.shape = s.sizes;
      index.tensors[it->second].pieces.push_back(std::move(piece));
    }
    std::string text = writeIndex(index);
    if (io)
      io->indexBytes = text.size();
    if (Error e = writeSynced(join(tmp, "index.json"), {text}))
      return e;
    syncDirectory(tmp);
    return swapIntoPlace(tmp, dir);
  }();
  if (placed && root)
    llvm::sys::fs::remove_directories(tmp);
  if (Error e = agree(session, std::move(placed), "saving a checkpoint"))
    return e;
  if (io)
    io->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  return Error::success();
}

namespace {
/// The checkpoint's files this process opened: descriptor and checked
/// safetensors header.
struct OpenFile {
  int fd = -1;
  std::vector<SafetensorsEntry> entries;
};

class Reader {
public:
  Reader(StringRef dir, const Index &index) : dir(dir.str()) {
    for (const FileEntry &f : index.files)
      byName[f.name] = &f;
  }
  ~Reader() {
    for (auto &[name, f] : open)
      if (f.fd >= 0)
        ::close(f.fd);
  }

  /// Reads rows [r0, r1) (along dimension 0; a scalar is one row) of
  /// `piece` of `tensor`: the checksum blocks that hold them, each checked,
  /// into `out`, the rows starting at `*skip` in it. Counts the bytes read
  /// in `*bytes`.
  Error read(const TensorEntry &tensor, const Piece &piece, int64_t r0,
             int64_t r1, std::vector<char> *out, uint64_t *skip,
             uint64_t *bytes) {
    std::string path = join(dir, piece.file);
    auto file = get(piece.file, bytes);
    if (!file)
      return fail(llvm::toString(file.takeError()) + " (reading a piece of '" +
                  tensor.name + "')");
    const FileEntry &f = *byName[piece.file];
    bool listed = false;
    for (const SafetensorsEntry &e : (*file)->entries)
      listed |= (e.name == tensor.name ||
                 StringRef(e.name).starts_with(tensor.name + "@")) &&
                e.dtype == tensor.dtype && e.shape == piece.shape &&
                e.begin + f.headerEnd == piece.begin &&
                e.end + f.headerEnd == piece.end;
    if (!listed)
      return fail(path + ": its header does not list the piece of '" +
                  tensor.name + "' at " + distrt::ShapeToString(piece.offsets) +
                  " that index.json places there");
    uint64_t size = piece.end - piece.begin;
    uint64_t rows = piece.shape.empty() ? 1 : uint64_t(piece.shape[0]);
    uint64_t rowBytes = rows ? size / rows : 0;
    uint64_t first = r0 * rowBytes / kChecksumBlock;
    uint64_t last = rowBytes
                        ? (r1 * rowBytes + kChecksumBlock - 1) / kChecksumBlock
                        : first;
    uint64_t from = first * kChecksumBlock;
    uint64_t to = std::min(size, last * kChecksumBlock);
    out->resize(to - from);
    *skip = r0 * rowBytes - from;
    if (Error e = readAt((*file)->fd, path, out->data(), out->size(),
                         piece.begin + from))
      return e;
    *bytes += out->size();
    for (uint64_t b = first; b < last; ++b) {
      uint64_t at = b * kChecksumBlock - from;
      uint64_t n = std::min(kChecksumBlock, size - b * kChecksumBlock);
      uint32_t crc = crc32(0, out->data() + at, n);
      if (crc != piece.blockCrc32[b])
        return fail(path + ": the piece of '" + tensor.name + "' at " +
                    distrt::ShapeToString(piece.offsets) + " (bytes " +
                    Twine(piece.begin + b * kChecksumBlock) + ".." +
                    Twine(piece.begin + b * kChecksumBlock + n) +
                    ") fails its checksum (crc32 " + Twine(crc) +
                    ", index.json says " + Twine(piece.blockCrc32[b]) + ")");
    }
    return Error::success();
  }

private:
  static Error readAt(int fd, const std::string &path, char *to, size_t n,
                      uint64_t at) {
    while (n > 0) {
      ssize_t got = ::pread(fd, to, n, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return fail(path + ": cannot read " + Twine(n) + " bytes at " +
                    Twine(at) +
                    (got == 0 ? ": the file ends there"
                              : ": " + Twine(std::strerror(errno))));
      to += got;
      n -= static_cast<size_t>(got);
      at += static_cast<uint64_t>(got);
    }
    return Error::success();
  }

  Expected<OpenFile *> get(const std::string &name, uint64_t *bytes) {
    auto it = open.find(name);
    if (it != open.end())
      return &it->second;
    std::string path = join(dir, name);
    const FileEntry &f = *byName[name];
    OpenFile file;
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file.fd < 0)
      return fail(path + ": cannot open: " + std::strerror(errno));
    open[name] = file;
    std::vector<char> header(f.headerEnd);
    if (Error e = readAt(file.fd, path, header.data(), header.size(), 0))
      return std::move(e);
    *bytes += header.size();
    uint32_t crc = crc32(0, header.data(), header.size());
    if (crc != f.headerCrc32)
      return fail(path + ": the safetensors header fails its checksum (crc32 " +
                  Twine(crc) + ", index.json says " + Twine(f.headerCrc32) +
                  ")");
    uint64_t length = 0;
    for (int i = 0; i < 8; ++i)
      length |= uint64_t(static_cast<uint8_t>(header[i])) << (8 * i);
    if (length != f.headerEnd - 8)
      return fail(path + ": the safetensors header is " + Twine(length) +
                  " bytes, index.json says " + Twine(f.headerEnd - 8));
    auto entries =
        parseSafetensorsHeader(StringRef(header.data() + 8, header.size() - 8),
                               f.bytes - f.headerEnd, path);
    if (!entries)
      return entries.takeError();
    open[name].entries = std::move(*entries);
    return &open[name];
  }

  std::string dir;
  std::map<std::string, const FileEntry *> byName;
  std::map<std::string, OpenFile> open;
};
} // namespace

/// Checks that the checkpoint holds exactly the model's training state and
/// that its files are there with the sizes index.json gives.
static Error
checkMatches(const Index &index,
             const std::map<std::string, const TensorEntry *> &saved,
             StringRef dir, const std::vector<Slot> &slots) {
  std::string fp;
  auto model = stateTensors(slots, &fp);
  std::string where = "checkpoint " + dir.str();
  for (const auto &[name, t] : model) {
    auto it = saved.find(name);
    if (it == saved.end())
      return fail(where + " does not hold '" + name +
                  "', which the model trains (a checkpoint of another model "
                  "or optimizer?)");
    if (it->second->dtype != t.first || it->second->shape != t.second)
      return fail(where + " holds '" + name + "' as " +
                  safetensorsDType(it->second->dtype) +
                  distrt::ShapeToString(it->second->shape) +
                  ", the model's is " + safetensorsDType(t.first) +
                  distrt::ShapeToString(t.second));
  }
  for (const TensorEntry &t : index.tensors)
    if (!model.count(t.name))
      return fail(where + " holds '" + t.name +
                  "', which is not part of the model's training state (a "
                  "checkpoint of another model or optimizer?)");
  if (fp != index.fingerprint)
    return fail(where + ": the model fingerprint " + index.fingerprint +
                " in index.json differs from the model's " + fp);
  for (const FileEntry &f : index.files) {
    std::string path = join(dir, f.name);
    // The first tensor with a piece in the file, for the messages.
    std::string holds;
    for (const TensorEntry &t : index.tensors)
      for (const Piece &p : t.pieces)
        if (holds.empty() && p.file == f.name)
          holds = " (it holds a piece of '" + t.name + "')";
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return fail(path + " is missing; index.json lists it" + holds);
    if (static_cast<uint64_t>(st.st_size) != f.bytes)
      return fail(path + " holds " + Twine(uint64_t(st.st_size)) +
                  " bytes, index.json says " + Twine(f.bytes) +
                  ": truncated or overwritten" + holds);
  }
  return Error::success();
}

Expected<CheckpointMeta> distopt::loadCheckpoint(Session &session,
                                                 const Programs &programs,
                                                 StringRef dir,
                                                 CheckpointIO *io) {
  auto t0 = std::chrono::steady_clock::now();
  auto slots = stateSlots(programs);
  if (!slots)
    return slots.takeError();
  Index index;
  std::map<int, std::vector<distrt::PersistentTensor>> values;
  Error loaded = [&]() -> Error {
    std::string indexPath = join(dir, "index.json");
    auto buffer = llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail("cannot read " + indexPath + ": " +
                  buffer.getError().message());
    if (io)
      io->indexBytes = (*buffer)->getBufferSize();
    auto parsed = parseIndex((*buffer)->getBuffer(), indexPath);
    if (!parsed)
      return parsed.takeError();
    index = std::move(*parsed);
    std::map<std::string, const TensorEntry *> saved;
    for (const TensorEntry &t : index.tensors)
      saved[t.name] = &t;
    if (Error e = checkMatches(index, saved, dir, *slots))
      return e;
    Reader reader(dir, index);
    std::set<int> mine;
    for (int r : session.localRanks())
      mine.insert(r);
    // One tensor at a time over all of this process's ranks: a piece that
    // several of them need (the local backend runs every rank) is read
    // once, and only one tensor's pieces are held at a time.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Slot *>> byTensor;
    for (const Slot &s : *slots) {
      if (!mine.count(s.rank))
        continue;
      auto &list = byTensor[s.weight->name()];
      if (list.empty())
        order.push_back(s.weight->name());
      list.push_back(&s);
    }
    std::map<int, uint64_t> readBy;
    for (int r : mine)
      readBy[r] = 0;
    for (const std::string &name : order) {
      const TensorEntry &e = *saved[name];
      // Per piece, the rows (dimension 0) any of this process's ranks
      // needs: only those are read, once.
      struct Rows {
        int64_t r0 = -1, r1 = -1;
        std::vector<char> data;
        uint64_t skip = 0;
      };
      std::vector<Rows> rows(e.pieces.size());
      for (const Slot *s : byTensor[name])
        for (size_t i = 0; i < e.pieces.size(); ++i) {
          const Piece &p = e.pieces[i];
          if (!boxesOverlap(p.offsets, p.shape, s->offsets, s->sizes))
            continue;
          int64_t lo = 0, hi = 1;
          if (!p.shape.empty()) {
            lo = std::max<int64_t>(0, s->offsets[0] - p.offsets[0]);
            hi = std::min<int64_t>(p.shape[0],
                                   s->offsets[0] + s->sizes[0] - p.offsets[0]);
          }
          Rows &r = rows[i];
          r.r0 = r.r0 < 0 ? lo : std::min(r.r0, lo);
          r.r1 = std::max(r.r1, hi);
        }
      for (const Slot *s : byTensor[name]) {
        distrt::PersistentTensor t;
        t.weight = s->weight;
        distrt::Status st = distrt::Tensor::Allocate(
            s->dtype, distrt::Shape(s->sizes.begin(), s->sizes.end()),
            &t.value);
        if (!st.ok())
          return fail(st.ToString());
        int64_t copied = 0;
        for (size_t i = 0; i < e.pieces.size(); ++i) {
          const Piece &p = e.pieces[i];
          if (!boxesOverlap(p.offsets, p.shape, s->offsets, s->sizes))
            continue;
          Rows &r = rows[i];
          if (r.data.empty() && r.r1 > r.r0)
            if (Error err = reader.read(e, p, r.r0, r.r1, &r.data, &r.skip,
                                        &readBy[s->rank]))
              return err;
          // The rows read, as a box of their own.
          std::vector<int64_t> offsets = p.offsets, shape = p.shape;
          if (!shape.empty()) {
            offsets[0] += r.r0;
            shape[0] = r.r1 - r.r0;
          }
          copied +=
              copyOverlap(r.data.data() + r.skip, offsets, shape, t.value.raw(),
                          s->offsets, s->sizes, distrt::DTypeSize(s->dtype));
        }
        if (copied != t.value.num_elements())
          return fail("checkpoint " + dir + ": the pieces of '" + name +
                      "' cover " + Twine(copied) + " of the " +
                      Twine(t.value.num_elements()) + " elements rank " +
                      Twine(s->rank) + " needs");
        values[s->rank].push_back(std::move(t));
      }
    }
    if (io)
      for (const auto &[r, b] : readBy)
        io->bytesPerRank.emplace_back(r, b);
    return Error::success();
  }();
  // Nothing is written into any rank unless every process read its part.
  if (Error e = agree(session, std::move(loaded), "loading a checkpoint"))
    return std::move(e);
  for (auto &[rank, v] : values)
    if (Error e = session.writePersistent(rank, v))
      return std::move(e);
  if (io)
    io->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  CheckpointMeta meta;
  meta.step = index.step;
  meta.modelFile = index.modelFile;
  meta.mesh = index.mesh;
  meta.plan = index.plan;
  meta.configFile = index.configFile;
  meta.configText = index.configText;
  meta.dataSource = index.dataSource;
  meta.dataPosition = index.dataPosition;
  return meta;
}

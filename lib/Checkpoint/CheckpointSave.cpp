//===- CheckpointSave.cpp - save sharded training state -------------------===//
//
// Each process writes its ranks' pieces into a temporary directory, the
// root writes index.json from the checksums the others send it, and the
// finished directory replaces the previous checkpoint (CheckpointFiles).
//
//===----------------------------------------------------------------------===//
#include "CheckpointState.h"
#include "distopt/Support/WritableTarget.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>
#include <unistd.h>

using namespace distopt;
using namespace distopt::checkpoint;
namespace json = llvm::json;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

Error distopt::checkCheckpointTarget(StringRef dir) {
  while (dir.size() > 1 && dir.ends_with("/"))
    dir = dir.drop_back();
  if (llvm::sys::fs::exists(dir)) {
    if (!llvm::sys::fs::is_directory(dir))
      return fail(dir + " exists and is not a directory; a checkpoint is a "
                        "directory");
    if (!llvm::sys::fs::exists(joinPath(dir, "index.json"))) {
      // The swap deletes what was there: only ever a checkpoint.
      std::error_code ec;
      llvm::sys::fs::directory_iterator it(dir, ec);
      if (ec || it != llvm::sys::fs::directory_iterator())
        return fail(dir + " exists and is not a checkpoint (it has no "
                          "index.json); not replacing it");
    }
  }
  // The temporary directory goes beside `dir`, its missing parents made.
  return checkWritableParent(dir, "cannot save a checkpoint in " + dir,
                             /*missingParentsAllowed=*/true);
}

/// Removes `<dir>.tmp-<pid>` directories whose process is gone: what a run
/// killed in the middle of a save leaves. A live process's (another run
/// saving to the same place) is left alone.
static std::vector<std::string> removeStaleTemporaries(StringRef dir) {
  std::vector<std::string> removed;
  StringRef parent = llvm::sys::path::parent_path(dir);
  std::string prefix = llvm::sys::path::filename(dir).str() + ".tmp-";
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(parent.empty() ? "." : parent, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (!name.starts_with(prefix))
      continue;
    int pid = 0;
    if (name.drop_front(prefix.size()).getAsInteger(10, pid) || pid <= 0)
      continue;
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    if (!llvm::sys::fs::remove_directories(it->path()))
      removed.push_back(it->path());
  }
  return removed;
}

Error distopt::saveCheckpoint(Session &session, const Programs &programs,
                              StringRef dir, const CheckpointMeta &meta,
                              CheckpointIO *io, CheckpointFiles *files) {
  CheckpointFiles posix;
  if (!files)
    files = &posix;
  // "ck/" names the directory ck: the temporary one goes beside it.
  while (dir.size() > 1 && dir.ends_with("/"))
    dir = dir.drop_back();
  auto t0 = std::chrono::steady_clock::now();
  auto slots = stateSlots(programs);
  if (!slots)
    return slots.takeError();
  bool root = session.processIndex() == 0;

  // The root names and creates the temporary directory.
  std::string tmp = dir.str() + ".tmp-" + std::to_string(::getpid());
  Error made = Error::success();
  if (root)
    made = checkCheckpointTarget(dir);
  if (root && !made) {
    if (io)
      io->removedStale = removeStaleTemporaries(dir);
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
      std::string name = rankFileName(rank);
      if (Error e = files->writeFile(joinPath(tmp, name), parts))
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
    index.scaler = meta.scaler;
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
      auto p = stored.find(
          {rankFileName(s.rank),
           s.weight->name() + " " + distrt::ShapeToString(s.offsets)});
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
    if (Error e = files->writeFile(joinPath(tmp, "index.json"), {text}))
      return e;
    files->syncDirectory(tmp);
    return files->replaceDirectory(tmp, dir);
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

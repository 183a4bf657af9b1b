//===- CheckpointLoad.cpp - resume sharded training state -----------------===//
//
// Every process checks index.json and the files whole, reads only the
// checksum blocks its ranks' slices need, and writes into its ranks only
// once every process has read its part.
//
//===----------------------------------------------------------------------===//
#include "CheckpointState.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace distopt;
using namespace distopt::checkpoint;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

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
    std::string path = joinPath(dir, piece.file);
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
    std::string path = joinPath(dir, name);
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

/// A compute copy's box of its master, read in the master's dtype, becomes
/// the copy's dtype: rounded to nearest even, as the step rounds it.
static Error roundToCopy(const TensorEntry &master, const Slot &copy,
                         distrt::Tensor *value) {
  if (master.dtype == copy.dtype)
    return Error::success();
  if (master.dtype != distrt::DType::kF32 ||
      (copy.dtype != distrt::DType::kBF16 && copy.dtype != distrt::DType::kF16))
    return fail("compute copy '" + copy.weight->name() + "' is " +
                distrt::CheckpointDTypeName(copy.dtype) + " but its master '" +
                master.name + "' is stored as " +
                distrt::CheckpointDTypeName(master.dtype) +
                " (only an F32 master rounds to a BF16 or F16 copy)");
  distrt::Tensor rounded;
  distrt::Status st =
      distrt::Tensor::Allocate(copy.dtype, value->shape(), &rounded);
  if (!st.ok())
    return fail(st.ToString());
  const float *from = value->data<float>();
  uint16_t *to = rounded.data<uint16_t>();
  bool bf16 = copy.dtype == distrt::DType::kBF16;
  for (int64_t i = 0; i < value->num_elements(); ++i)
    to[i] = bf16 ? distrt::FloatToBF16(from[i]) : distrt::FloatToHalf(from[i]);
  *value = std::move(rounded);
  return Error::success();
}

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
                  distrt::CheckpointDTypeName(it->second->dtype) +
                  distrt::ShapeToString(it->second->shape) +
                  ", the model's is " + distrt::CheckpointDTypeName(t.first) +
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
    std::string path = joinPath(dir, f.name);
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
    std::string indexPath = joinPath(dir, "index.json");
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
      // A compute copy reads its box of its master's tensor.
      const std::string &name = s.copy ? s.weight->copy_of() : s.weight->name();
      if (!saved.count(name))
        return fail("checkpoint " + dir + " does not hold '" + name +
                    "', whose compute copy '" + s.weight->name() +
                    "' the model keeps");
      auto &list = byTensor[name];
      if (list.empty())
        order.push_back(name);
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
            e.dtype, distrt::Shape(s->sizes.begin(), s->sizes.end()), &t.value);
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
                          s->offsets, s->sizes, distrt::DTypeSize(e.dtype));
        }
        if (copied != t.value.num_elements())
          return fail("checkpoint " + dir + ": the pieces of '" + name +
                      "' cover " + Twine(copied) + " of the " +
                      Twine(t.value.num_elements()) + " elements rank " +
                      Twine(s->rank) + " needs");
        if (s->copy)
          if (Error err = roundToCopy(e, *s, &t.value))
            return err;
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
  meta.scaler = index.scaler;
  return meta;
}

// Loading and saving rank programs and packages.
#include "distrt/program.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>

#include "file_util.h"

namespace distrt {

TensorType FromProto(const proto::TensorType& t) {
  TensorType r;
  r.dtype = static_cast<DType>(t.dtype());
  r.shape.assign(t.shape().begin(), t.shape().end());
  return r;
}

void ToProto(const TensorType& t, proto::TensorType* out) {
  out->set_dtype(static_cast<proto::DType>(t.dtype));
  out->clear_shape();
  for (int64_t d : t.shape) out->add_shape(d);
}

int Program::ValueIndex(int32_t id) const {
  auto it = std::lower_bound(id_to_index_.begin(), id_to_index_.end(), std::make_pair(id, -1));
  if (it == id_to_index_.end() || it->first != id) return -1;
  return it->second;
}

std::string Program::DescribeValue(int index) const {
  if (index < 0 || index >= num_values()) return StrCat("<value index ", index, ">");
  const ValueInfo& v = value(index);
  std::string s = StrCat("%", v.id);
  if (!v.name.empty()) s += " '" + v.name + "'";
  return s + " " + v.type.ToString();
}

std::string Program::DescribeInstruction(int i) const {
  const proto::Instruction& inst = proto_.instructions(i);
  std::string s = StrCat("instruction ", i, " ('", inst.op(), "'");
  if (!inst.location().empty()) s += " at '" + inst.location() + "'";
  return s + ")";
}

Status ResolveSlice(const proto::Slice& slice, const Shape& local_shape, SliceInfo* out) {
  SliceInfo s;
  const size_t r = local_shape.size();
  if (slice.global_shape_size() == 0 && slice.offsets_size() == 0 && slice.sizes_size() == 0) {
    s.global_shape = local_shape;
    s.offsets.assign(r, 0);
    s.sizes = local_shape;
    *out = std::move(s);
    return OkStatus();
  }
  if (static_cast<size_t>(slice.global_shape_size()) != r ||
      static_cast<size_t>(slice.offsets_size()) != r ||
      static_cast<size_t>(slice.sizes_size()) != r) {
    return InvalidArgumentError("slice has global_shape/offsets/sizes of lengths ",
                                slice.global_shape_size(), "/", slice.offsets_size(), "/",
                                slice.sizes_size(), " but the value has rank ", r);
  }
  s.global_shape.assign(slice.global_shape().begin(), slice.global_shape().end());
  s.offsets.assign(slice.offsets().begin(), slice.offsets().end());
  s.sizes.assign(slice.sizes().begin(), slice.sizes().end());
  if (s.sizes != local_shape) {
    return InvalidArgumentError("slice sizes ", ShapeToString(s.sizes),
                                " differ from the value's shape ", ShapeToString(local_shape));
  }
  for (size_t d = 0; d < r; ++d) {
    if (s.global_shape[d] < 0 || s.offsets[d] < 0 || s.sizes[d] < 0 ||
        s.offsets[d] > s.global_shape[d] || s.sizes[d] > s.global_shape[d] - s.offsets[d]) {
      return OutOfRangeError("slice offsets ", ShapeToString(s.offsets), " + sizes ",
                             ShapeToString(s.sizes), " exceed global shape ",
                             ShapeToString(s.global_shape), " in dim ", d);
    }
  }
  *out = std::move(s);
  return OkStatus();
}

Status CheckChunkOrder(const proto::ChunkOrder& order, const Shape& global_shape) {
  const int64_t n = order.chunks_size();
  if (n == 0) return OkStatus();
  const int64_t rank = static_cast<int64_t>(global_shape.size());
  if (order.dim() < 0 || order.dim() >= rank) {
    return InvalidArgumentError("chunk_order dim ", order.dim(), " is outside rank ", rank);
  }
  const int64_t extent = global_shape[static_cast<size_t>(order.dim())];
  if (extent % n != 0) {
    return InvalidArgumentError("chunk_order cuts dim ", order.dim(), " (", extent, ") into ", n,
                                " chunks, which do not divide it");
  }
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t c : order.chunks()) {
    if (c < 0 || c >= n || seen[static_cast<size_t>(c)]) {
      return InvalidArgumentError("chunk_order chunks are not a permutation of 0..", n - 1);
    }
    seen[static_cast<size_t>(c)] = true;
  }
  return OkStatus();
}

Status ReorderChunks(const Tensor& global, const proto::ChunkOrder& order, bool to_program,
                     Tensor* out) {
  DISTRT_RETURN_IF_ERROR(CheckChunkOrder(order, global.shape()));
  DISTRT_RETURN_IF_ERROR(Tensor::Allocate(global.dtype(), global.shape(), out));
  const Shape& shape = global.shape();
  const size_t dim = static_cast<size_t>(order.dim());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = order.chunks_size();
  // Bytes of one chunk of one outer row, and of one whole outer row.
  const size_t chunk = static_cast<size_t>(shape[dim] / n * inner) * DTypeSize(global.dtype());
  const size_t row = chunk * static_cast<size_t>(n);
  const uint8_t* src = global.data<uint8_t>();
  uint8_t* dst = out->data<uint8_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      // Program position i holds global chunk chunks[i].
      const size_t program = static_cast<size_t>(i), original =
          static_cast<size_t>(order.chunks(static_cast<int>(i)));
      const size_t from = to_program ? original : program, to = to_program ? program : original;
      std::memcpy(dst + static_cast<size_t>(o) * row + to * chunk,
                  src + static_cast<size_t>(o) * row + from * chunk, chunk);
    }
  }
  return OkStatus();
}

namespace {

Status ParseMessage(const std::string& path, const std::string& bytes, const char* what,
                    google::protobuf::MessageLite* msg) {
  if (!msg->ParseFromString(bytes)) {
    return DataLossError("'", path, "' (", bytes.size(), " bytes) is not a valid ", what,
                         ": the file is truncated or corrupt");
  }
  return OkStatus();
}

Status CheckHeader(const std::string& path, uint32_t version, const std::string& producer,
                   uint32_t end_mark, size_t bytes, const char* what) {
  if (version != kFormatVersion) {
    return FailedPreconditionError("'", path, "': format_version ", version,
                                   " is not supported: this runtime reads format_version ",
                                   kFormatVersion, " (file written by producer '",
                                   producer.empty() ? "unknown" : producer, "')");
  }
  if (end_mark != kEndMark) {
    return DataLossError("'", path, "' (", bytes, " bytes): the ", what,
                         " has no end mark: the file is truncated (or its writer did not set "
                         "end_mark)");
  }
  return OkStatus();
}

}  // namespace

Status LoadProgram(const std::string& path, std::shared_ptr<const Program>* out) {
  std::string bytes;
  DISTRT_RETURN_IF_ERROR(ReadFileToString(path, &bytes));
  proto::RankProgram p;
  DISTRT_RETURN_IF_ERROR(ParseMessage(path, bytes, "rank program", &p));
  DISTRT_RETURN_IF_ERROR(CheckHeader(path, p.format_version(), p.producer(), p.end_mark(),
                                     bytes.size(), "rank program"));
  return Program::Create(std::move(p), path, DirName(path), out);
}

Status LoadPackage(const std::string& dir, Package* out) {
  const std::string path = JoinPath(dir, "package.pb");
  std::string bytes;
  DISTRT_RETURN_IF_ERROR(ReadFileToString(path, &bytes));
  Package pkg;
  pkg.dir = dir;
  DISTRT_RETURN_IF_ERROR(ParseMessage(path, bytes, "package", &pkg.proto));
  DISTRT_RETURN_IF_ERROR(CheckHeader(path, pkg.proto.format_version(), pkg.proto.producer(),
                                     pkg.proto.end_mark(), bytes.size(), "package"));
  const proto::Package& p = pkg.proto;
  if (p.world_size() <= 0 || p.program_files_size() != p.world_size()) {
    return InvalidArgumentError("'", path, "': world_size ", p.world_size(), " but ",
                                p.program_files_size(), " program files");
  }
  for (int r = 0; r < p.world_size(); ++r) {
    std::shared_ptr<const Program> prog;
    DISTRT_RETURN_IF_ERROR(LoadProgram(JoinPath(dir, p.program_files(r)), &prog));
    if (prog->rank() != r || prog->world_size() != p.world_size()) {
      return InvalidArgumentError("'", prog->source(), "' is listed as rank ", r, " of ",
                                  p.world_size(), " in '", path, "' but says rank ", prog->rank(),
                                  " of ", prog->world_size());
    }
    pkg.programs.push_back(std::move(prog));
  }
  *out = std::move(pkg);
  return OkStatus();
}

// The same program always makes the same bytes: an instruction's attributes
// are a protobuf map, whose default serialization order is the map's hash
// order and differs from process to process.
template <typename Message>
static bool SerializeDeterministically(const Message& message, std::string* bytes) {
  bytes->clear();
  bool ok;
  {  // The coded stream hands its last bytes to the string as it goes.
    google::protobuf::io::StringOutputStream stream(bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ok = message.SerializeToCodedStream(&coded) && !coded.HadError();
  }
  return ok;
}

Status SaveProgram(const proto::RankProgram& program, const std::string& path) {
  proto::RankProgram copy = program;
  if (copy.format_version() == 0) copy.set_format_version(kFormatVersion);
  copy.set_end_mark(kEndMark);
  std::string bytes;
  if (!SerializeDeterministically(copy, &bytes))
    return InternalError("cannot serialize rank program");
  return WriteStringToFile(path, bytes);
}

Status SavePackage(const proto::Package& package, const std::string& path) {
  proto::Package copy = package;
  if (copy.format_version() == 0) copy.set_format_version(kFormatVersion);
  copy.set_end_mark(kEndMark);
  std::string bytes;
  if (!SerializeDeterministically(copy, &bytes)) return InternalError("cannot serialize package");
  return WriteStringToFile(path, bytes);
}

}  // namespace distrt

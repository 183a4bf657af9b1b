//===- ModelReader.cpp - parse an ONNX file without copying weights -*- C++
//-*-===//
#include "distopt/Import/ModelReader.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

#include <climits>

using namespace distopt::onnximport;
using google::protobuf::io::CodedInputStream;
using WFL = google::protobuf::internal::WireFormatLite;

namespace {

constexpr int kModelGraph = 7;       // ModelProto.graph
constexpr int kGraphInitializer = 5; // GraphProto.initializer
constexpr int kTensorRawData = 9;    // TensorProto.raw_data

/// Walks the wire format of a whole model held in memory.
class Walker {
public:
  Walker(const uint8_t *base, size_t size, std::string name)
      : base(base), size(size), name(std::move(name)) {}

  llvm::Error run(LoadedModel &out) {
    std::string modelRest, graphRest;
    std::vector<onnx::TensorProto> initializers;
    bool sawGraph = false;
    if (llvm::Error err =
            fields(0, size,
                   [&](int field, int wire, size_t start, size_t payload,
                       size_t end) -> llvm::Error {
                     if (field == kModelGraph &&
                         wire == WFL::WIRETYPE_LENGTH_DELIMITED) {
                       sawGraph = true;
                       return graph(payload, end, graphRest, initializers,
                                    out.rawData);
                     }
                     append(modelRest, start, end);
                     return llvm::Error::success();
                   }))
      return err;
    if (!out.model.ParseFromString(modelRest))
      return fail(0, "malformed ModelProto fields");
    if (!sawGraph)
      return llvm::createStringError(name + ": the model has no graph");
    onnx::GraphProto *g = out.model.mutable_graph();
    if (!g->ParseFromString(graphRest))
      return fail(0, "malformed GraphProto fields");
    for (onnx::TensorProto &t : initializers)
      g->add_initializer()->Swap(&t);
    return llvm::Error::success();
  }

private:
  llvm::Error fail(size_t at, const llvm::Twine &what) {
    return llvm::createStringError(name + ": not a valid ONNX model (" + what +
                                   " at byte " + llvm::Twine(at) +
                                   "); the file may be truncated or corrupt");
  }

  void append(std::string &to, size_t start, size_t end) {
    to.append(reinterpret_cast<const char *>(base + start), end - start);
  }

  /// Calls `fn(field, wiretype, start, payloadStart, end)` for every field in
  /// [begin, end); for length-delimited fields the payload is the content
  /// after the length, otherwise it starts after the tag.
  template <typename Fn> llvm::Error fields(size_t begin, size_t end, Fn fn) {
    CodedInputStream in(base + begin, static_cast<int>(end - begin));
    in.SetTotalBytesLimit(INT_MAX);
    while (true) {
      size_t start = begin + in.CurrentPosition();
      if (start == end)
        return llvm::Error::success();
      uint32_t tag = in.ReadTag();
      if (tag == 0)
        return fail(start, "an invalid field tag");
      int field = WFL::GetTagFieldNumber(tag);
      int wire = WFL::GetTagWireType(tag);
      size_t payload = begin + in.CurrentPosition();
      if (wire == WFL::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t len;
        if (!in.ReadVarint32(&len))
          return fail(payload, "a truncated length");
        payload = begin + in.CurrentPosition();
        if (len > end - payload)
          return fail(payload, "a field running past the end of its message");
        if (!in.Skip(static_cast<int>(len)))
          return fail(payload, "a truncated field");
      } else if (!WFL::SkipField(&in, tag)) {
        return fail(start, "a truncated or invalid field");
      }
      size_t stop = begin + in.CurrentPosition();
      if (llvm::Error err = fn(field, wire, start, payload, stop))
        return err;
    }
  }

  llvm::Error graph(size_t begin, size_t end, std::string &rest,
                    std::vector<onnx::TensorProto> &initializers,
                    std::vector<RawDataRef> &raw) {
    return fields(begin, end,
                  [&](int field, int wire, size_t start, size_t payload,
                      size_t stop) -> llvm::Error {
                    if (field != kGraphInitializer ||
                        wire != WFL::WIRETYPE_LENGTH_DELIMITED) {
                      append(rest, start, stop);
                      return llvm::Error::success();
                    }
                    // An initializer: every field but raw_data, whose place is
                    // recorded.
                    std::string tensorBytes;
                    RawDataRef ref;
                    if (llvm::Error err =
                            fields(payload, stop,
                                   [&](int f, int w, size_t s, size_t p,
                                       size_t e) -> llvm::Error {
                                     if (f == kTensorRawData &&
                                         w == WFL::WIRETYPE_LENGTH_DELIMITED) {
                                       ref = {true, p, e - p};
                                       return llvm::Error::success();
                                     }
                                     append(tensorBytes, s, e);
                                     return llvm::Error::success();
                                   }))
                      return err;
                    onnx::TensorProto t;
                    if (!t.ParseFromString(tensorBytes))
                      return fail(payload, "a malformed initializer");
                    initializers.push_back(std::move(t));
                    raw.push_back(ref);
                    return llvm::Error::success();
                  });
  }

  const uint8_t *base;
  size_t size;
  std::string name;
};

} // namespace

llvm::ArrayRef<char> LoadedModel::rawBytes(size_t i) const {
  if (i >= rawData.size() || !rawData[i].present || !file)
    return {};
  return llvm::ArrayRef<char>(file->getBufferStart() + rawData[i].offset,
                              rawData[i].length);
}

llvm::Expected<LoadedModel> distopt::onnximport::readModelFromBuffer(
    std::unique_ptr<llvm::MemoryBuffer> buffer, llvm::StringRef name) {
  if (buffer->getBufferSize() > static_cast<size_t>(INT_MAX))
    return llvm::createStringError(
        name.str() + " is larger than 2 GiB; ONNX keeps weights that large in "
                     "external data files");
  LoadedModel out;
  Walker walker(reinterpret_cast<const uint8_t *>(buffer->getBufferStart()),
                buffer->getBufferSize(), name.str());
  if (llvm::Error err = walker.run(out))
    return std::move(err);
  out.file = std::move(buffer);
  return std::move(out);
}

llvm::Expected<LoadedModel>
distopt::onnximport::readModel(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError("cannot read " + path.str() + ": " +
                                   buffer.getError().message());
  return readModelFromBuffer(std::move(*buffer), path);
}

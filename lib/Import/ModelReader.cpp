//===- ModelReader.cpp - parse an ONNX file without copying weights -*- C++ -*-===//
#include "ModelReader.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

using namespace distopt::onnximport;
using google::protobuf::io::CodedInputStream;
using WFL = google::protobuf::internal::WireFormatLite;

namespace {

constexpr int kModelGraph = 7;         // ModelProto.graph
constexpr int kGraphInitializer = 5;   // GraphProto.initializer
constexpr int kTensorRawData = 9;      // TensorProto.raw_data

class Walker {
public:
  Walker(const uint8_t *base, size_t size, std::string path)
      : base(base), size(size), path(std::move(path)) {}

  llvm::Expected<LoadedModel> run() {
    LoadedModel out;
    std::string modelRest, graphRest;
    std::vector<onnx::TensorProto> initializers;
    bool sawGraph = false;
    if (auto err = fields(0, size, [&](int field, int wire, size_t start,
                                       size_t payload, size_t end) -> llvm::Error {
          if (field == kModelGraph && wire == WFL::WIRETYPE_LENGTH_DELIMITED) {
            sawGraph = true;
            return graph(payload, end, graphRest, initializers, out.rawData);
          }
          modelRest.append(reinterpret_cast<const char *>(base + start), end - start);
          return llvm::Error::success();
        }))
      return std::move(err);
    if (!sawGraph)
      return fail(0, "the model has no graph");
    if (!out.model.ParseFromString(modelRest))
      return fail(0, "malformed ModelProto fields");
    onnx::GraphProto *g = out.model.mutable_graph();
    if (!g->ParseFromString(graphRest))
      return fail(0, "malformed GraphProto fields");
    for (onnx::TensorProto &t : initializers)
      g->add_initializer()->Swap(&t);
    return out;
  }

private:
  llvm::Error fail(size_t at, const llvm::Twine &what) {
    return llvm::createStringError(path + ": not a valid ONNX model (" + what +
                                   " at byte " + llvm::Twine(at) +
                                   "); the file may be truncated or corrupt");
  }

  /// Calls `fn(field, wiretype, start, payloadStart, end)` for every field in
  /// [begin, end); for length-delimited fields the payload is its content.
  template <typename Fn>
  llvm::Error fields(size_t begin, size_t end, Fn fn) {
    CodedInputStream in(base + begin, static_cast<int>(end - begin));
    in.SetTotalBytesLimit(INT32_MAX);
    while (true) {
      size_t start = begin + in.CurrentPosition();
      uint32_t tag = in.ReadTag();
      if (tag == 0) {
        if (start != end)
          return fail(start, "an invalid field tag");
        return llvm::Error::success();
      }
      int field = WFL::GetTagFieldNumber(tag);
      int wire = WFL::GetTagWireType(tag);
      size_t payload = begin + in.CurrentPosition();
      if (wire == WFL::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t len;
        if (!in.ReadVarint32(&len))
          return fail(payload, "a truncated length");
        payload = begin + in.CurrentPosition();
        if (payload + len > end)
          return fail(payload, "a field running past the end of its message");
        if (!in.Skip(static_cast<int>(len)))
          return fail(payload, "a truncated field");
      } else if (!WFL::SkipField(&in, tag)) {
        return fail(start, "a truncated field");
      }
      size_t stop = begin + in.CurrentPosition();
      if (auto err = fn(field, wire, start, payload, stop))
        return err;
    }
  }

  llvm::Error graph(size_t begin, size_t end, std::string &rest,
                    std::vector<onnx::TensorProto> &initializers,
                    std::vector<RawDataRef> &raw) {
    return fields(begin, end, [&](int field, int wire, size_t start,
                                  size_t payload, size_t stop) -> llvm::Error {
      if (field != kGraphInitializer || wire != WFL::WIRETYPE_LENGTH_DELIMITED) {
        rest.append(reinterpret_cast<const char *>(base + start), stop - start);
        return llvm::Error::success();
      }
      // An initializer: every field but raw_data, whose place is recorded.
      std::string tensorBytes;
      RawDataRef ref;
      if (auto err = fields(payload, stop, [&](int f, int w, size_t s,
                                               size_t p, size_t e) -> llvm::Error {
            if (f == kTensorRawData && w == WFL::WIRETYPE_LENGTH_DELIMITED) {
              ref = {true, p, e - p};
              return llvm::Error::success();
            }
            tensorBytes.append(reinterpret_cast<const char *>(base + s), e - s);
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
  std::string path;
};

} // namespace

llvm::Expected<LoadedModel> distopt::onnximport::readModel(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError("cannot read " + path.str() + ": " +
                                   buffer.getError().message());
  if ((*buffer)->getBufferSize() > static_cast<size_t>(INT32_MAX))
    return llvm::createStringError(
        path.str() + " is larger than 2 GiB; ONNX keeps weights that large in "
                     "external data files");
  Walker walker(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                (*buffer)->getBufferSize(), path.str());
  auto model = walker.run();
  if (!model)
    return model.takeError();
  model->file = std::move(*buffer);
  return model;
}

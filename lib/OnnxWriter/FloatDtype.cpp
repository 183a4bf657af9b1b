//===- FloatDtype.cpp - a saved model's float dtype -----------------------===//
#include "distopt/OnnxWriter/FloatDtype.h"

#include "onnx/onnx_pb.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace distopt;
using distrt::DType;
using llvm::Error;

static Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

std::optional<DType> distopt::parseSaveDtype(llvm::StringRef name) {
  if (name == "f32")
    return DType::kF32;
  if (name == "bf16")
    return DType::kBF16;
  if (name == "f16")
    return DType::kF16;
  return std::nullopt;
}

bool distopt::isConvertibleFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
}

static float loadFloat(const char *p, DType from) {
  if (from == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return from == DType::kBF16 ? distrt::BF16ToFloat(bits)
                              : distrt::HalfToFloat(bits);
}

std::string distopt::convertFloats(const void *src, DType from, DType to,
                                   int64_t n) {
  const char *in = static_cast<const char *>(src);
  size_t inSize = distrt::DTypeSize(from), outSize = distrt::DTypeSize(to);
  if (from == to)
    return std::string(in, static_cast<size_t>(n) * inSize);
  std::string out(static_cast<size_t>(n) * outSize, '\0');
  for (int64_t i = 0; i < n; ++i) {
    float f = loadFloat(in + i * inSize, from);
    char *p = out.data() + i * outSize;
    if (to == DType::kF32) {
      std::memcpy(p, &f, 4);
      continue;
    }
    uint16_t bits =
        to == DType::kBF16 ? distrt::FloatToBF16(f) : distrt::FloatToHalf(f);
    std::memcpy(p, &bits, 2);
  }
  return out;
}

static std::optional<DType> floatDtypeOf(int onnxType) {
  DType d;
  if (!distrt::DTypeFromOnnx(onnxType, &d).ok() || !isConvertibleFloat(d))
    return std::nullopt;
  return d;
}

static int64_t elementCount(const onnx::TensorProto &t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  return n;
}

/// A float tensor's bytes, wherever the proto keeps them.
static llvm::Expected<std::string> tensorBytes(const onnx::TensorProto &t,
                                               DType dtype,
                                               llvm::StringRef modelDir) {
  int64_t n = elementCount(t);
  size_t bytes = static_cast<size_t>(n) * distrt::DTypeSize(dtype);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    for (const auto &e : t.external_data()) {
      if (e.key() == "location")
        location = e.value();
      else if (e.key() == "offset" &&
               llvm::StringRef(e.value()).getAsInteger(10, offset))
        return fail("initializer '" + t.name() +
                    "' has an invalid external data offset '" + e.value() +
                    "'");
    }
    llvm::SmallString<256> path(location);
    if (!llvm::sys::path::is_absolute(path)) {
      path = modelDir;
      llvm::sys::path::append(path, location);
    }
    auto file = llvm::MemoryBuffer::getFileSlice(path, bytes, offset);
    if (!file)
      return fail("cannot read initializer '" + t.name() + "' from " + path +
                  ": " + file.getError().message());
    return (*file)->getBuffer().str();
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return fail("initializer '" + t.name() + "' holds " +
                  llvm::Twine(t.raw_data().size()) + " bytes, not " +
                  llvm::Twine(bytes));
    return t.raw_data();
  }
  std::string out(bytes, '\0');
  if (dtype == DType::kF32 && t.float_data_size() == n) {
    std::memcpy(out.data(), t.float_data().data(), bytes);
    return out;
  }
  if (dtype != DType::kF32 && t.int32_data_size() == n) {
    // 16-bit floats keep their bit patterns in int32_data.
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
    return out;
  }
  return fail("initializer '" + t.name() + "' has no data for its " +
              llvm::Twine(n) + " element(s)");
}

/// Rewrites a float tensor proto's values and type as `to`.
static Error convertTensor(onnx::TensorProto &t, DType to,
                           llvm::StringRef modelDir) {
  std::optional<DType> from = floatDtypeOf(t.data_type());
  if (!from || *from == to)
    return Error::success();
  auto bytes = tensorBytes(t, *from, modelDir);
  if (!bytes)
    return bytes.takeError();
  std::string converted =
      convertFloats(bytes->data(), *from, to, elementCount(t));
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  t.set_data_type(distrt::OnnxTypeOf(to));
  t.set_raw_data(std::move(converted));
  return Error::success();
}

static void convertType(onnx::TypeProto &type, DType to) {
  if (type.has_tensor_type()) {
    onnx::TypeProto_Tensor *tt = type.mutable_tensor_type();
    if (floatDtypeOf(tt->elem_type()))
      tt->set_elem_type(distrt::OnnxTypeOf(to));
  } else if (type.has_sequence_type()) {
    convertType(*type.mutable_sequence_type()->mutable_elem_type(), to);
  } else if (type.has_optional_type()) {
    convertType(*type.mutable_optional_type()->mutable_elem_type(), to);
  }
}

static Error convertGraph(onnx::GraphProto &graph, DType to,
                          llvm::StringRef modelDir,
                          const std::function<bool(const std::string &)> &skip) {
  for (onnx::TensorProto &init : *graph.mutable_initializer())
    if (!skip(init.name()))
      if (Error e = convertTensor(init, to, modelDir))
        return e;
  for (auto *infos :
       {graph.mutable_input(), graph.mutable_output(), graph.mutable_value_info()})
    for (onnx::ValueInfoProto &v : *infos)
      convertType(*v.mutable_type(), to);
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &a : *node.mutable_attribute()) {
      if (a.has_t())
        if (Error e = convertTensor(*a.mutable_t(), to, modelDir))
          return e;
      // Cast's target and the dtype of the ops that make tensors
      // (EyeLike, RandomNormal, ...).
      bool typeAttr = (node.op_type() == "Cast" && a.name() == "to") ||
                      a.name() == "dtype";
      if (typeAttr && a.has_i() && floatDtypeOf(static_cast<int>(a.i())))
        a.set_i(distrt::OnnxTypeOf(to));
      if (a.has_g())
        if (Error e = convertGraph(*a.mutable_g(), to, modelDir, skip))
          return e;
    }
  return Error::success();
}

Error distopt::convertFloatGraph(
    onnx::ModelProto &model, DType to, llvm::StringRef modelDir,
    const std::function<bool(const std::string &)> &skip) {
  return convertGraph(*model.mutable_graph(), to, modelDir, skip);
}

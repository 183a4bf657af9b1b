//===- TensorProtoFile.cpp - ONNX TensorProto files -----------------------===//
#include "distopt/Data/TensorProtoFile.h"

#include "onnx/onnx_pb.h"

#include "llvm/Support/MathExtras.h"

#include <fstream>
#include <sstream>

using namespace distopt;

static llvm::Error fail(const std::string &message) {
  return llvm::createStringError(message);
}

llvm::Expected<distrt::Tensor> distopt::readTensorProto(llvm::StringRef path,
                                                        std::string *name) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return fail("cannot open " + path.str());
  std::stringstream buf;
  buf << in.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(buf.str()))
    return fail(path.str() + " is not a valid ONNX TensorProto");
  if (name)
    *name = t.name();
  distrt::DType dtype;
  if (!distrt::DTypeFromOnnx(t.data_type(), &dtype).ok())
    return fail(path.str() + ": unsupported ONNX element type " +
                std::to_string(t.data_type()));
  distrt::Shape shape(t.dims().begin(), t.dims().end());
  // A SequenceProto or OptionalProto file also parses as a TensorProto, with
  // garbage dims and no data: check that the data present holds exactly the
  // elements the dims need before allocating anything.
  int64_t need = 1;
  bool sane = true;
  for (int64_t d : shape)
    sane &= d >= 0 && !llvm::MulOverflow(need, d, need);
  int64_t have = -1;
  if (t.has_raw_data()) {
    size_t width = distrt::DTypeSize(dtype);
    have =
        t.raw_data().size() % width ? -1 : int64_t(t.raw_data().size() / width);
  } else {
    switch (dtype) {
    case distrt::DType::kF32:
      have = t.float_data_size();
      break;
    case distrt::DType::kF64:
      have = t.double_data_size();
      break;
    case distrt::DType::kI64:
      have = t.int64_data_size();
      break;
    case distrt::DType::kU32:
    case distrt::DType::kU64:
      have = t.uint64_data_size();
      break;
    default:
      have = t.int32_data_size();
      break;
    }
  }
  if (!sane || have != need || t.data_location() == onnx::TensorProto::EXTERNAL)
    return fail(path.str() +
                ": not a tensor (sequence or optional types are "
                "not supported): its dims " +
                (sane ? "need " + std::to_string(need) + " elements"
                      : std::string("are invalid")) +
                " but it holds " +
                (have < 0 ? std::string("a partial element")
                          : std::to_string(have) + " values"));
  distrt::Tensor out;
  distrt::Status st = distrt::Tensor::Allocate(dtype, shape, &out);
  if (!st.ok())
    return fail(st.ToString());
  size_t bytes = out.byte_size();
  int64_t n = out.num_elements();
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return fail(path.str() + ": raw_data holds " +
                  std::to_string(t.raw_data().size()) + " bytes, expected " +
                  std::to_string(bytes));
    std::memcpy(out.raw(), t.raw_data().data(), bytes);
    return out;
  }
  auto check = [&](int64_t have) -> llvm::Error {
    if (have != n)
      return fail(path.str() + ": holds " + std::to_string(have) +
                  " values, expected " + std::to_string(n));
    return llvm::Error::success();
  };
  switch (dtype) {
  case distrt::DType::kF32:
    if (auto e = check(t.float_data_size()))
      return std::move(e);
    std::copy(t.float_data().begin(), t.float_data().end(), out.data<float>());
    break;
  case distrt::DType::kF64:
    if (auto e = check(t.double_data_size()))
      return std::move(e);
    std::copy(t.double_data().begin(), t.double_data().end(),
              out.data<double>());
    break;
  case distrt::DType::kI64:
    if (auto e = check(t.int64_data_size()))
      return std::move(e);
    std::copy(t.int64_data().begin(), t.int64_data().end(),
              out.data<int64_t>());
    break;
  case distrt::DType::kU32:
  case distrt::DType::kU64: {
    if (auto e = check(t.uint64_data_size()))
      return std::move(e);
    size_t width = distrt::DTypeSize(dtype);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t v = t.uint64_data(i);
      // Little-endian: the low bytes are the u32 value.
      std::memcpy(static_cast<char *>(out.raw()) + i * width, &v, width);
    }
    break;
  }
  default: {
    // int32_data carries every narrower type, one value per element.
    if (auto e = check(t.int32_data_size()))
      return std::move(e);
    size_t width = distrt::DTypeSize(dtype);
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = t.int32_data(i);
      std::memcpy(static_cast<char *>(out.raw()) + i * width, &v, width);
    }
  }
  }
  return out;
}

llvm::Error distopt::writeTensorProto(llvm::StringRef path,
                                      llvm::StringRef name,
                                      const distrt::Tensor &tensor) {
  onnx::TensorProto t;
  t.set_name(name.str());
  t.set_data_type(distrt::OnnxTypeOf(tensor.dtype()));
  for (int64_t d : tensor.shape())
    t.add_dims(d);
  t.set_raw_data(tensor.raw(), tensor.byte_size());
  std::ofstream out(path.str(), std::ios::binary | std::ios::trunc);
  if (!out || !t.SerializeToOstream(&out) || !out.flush())
    return fail("cannot write " + path.str());
  return llvm::Error::success();
}

//===- TensorProtoFileTest.cpp - ONNX TensorProto files, every dtype ------===//
#include "distopt/Data/TensorProtoFile.h"

#include "DataFiles.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace distopt;
using distopt::datafiles::ScratchDir;
using distrt::DType;

namespace {

struct Case {
  int onnx; // onnx.proto's code
  DType dtype;
  size_t width;
};

const Case kCases[] = {
    {onnx::TensorProto::FLOAT, DType::kF32, 4},
    {onnx::TensorProto::FLOAT16, DType::kF16, 2},
    {onnx::TensorProto::BFLOAT16, DType::kBF16, 2},
    {onnx::TensorProto::DOUBLE, DType::kF64, 8},
    {onnx::TensorProto::INT64, DType::kI64, 8},
    {onnx::TensorProto::INT32, DType::kI32, 4},
    {onnx::TensorProto::INT16, DType::kI16, 2},
    {onnx::TensorProto::INT8, DType::kI8, 1},
    {onnx::TensorProto::UINT8, DType::kU8, 1},
    {onnx::TensorProto::BOOL, DType::kBool, 1},
    {onnx::TensorProto::UINT16, DType::kU16, 2},
    {onnx::TensorProto::UINT32, DType::kU32, 4},
    {onnx::TensorProto::UINT64, DType::kU64, 8},
};

TEST(TensorProtoFile, EveryDTypeReadsFromRawData) {
  ScratchDir dir;
  for (const Case &c : kCases) {
    SCOPED_TRACE(c.onnx);
    onnx::TensorProto t;
    t.set_name("t");
    t.set_data_type(c.onnx);
    t.add_dims(3);
    std::string raw(3 * c.width, '\0');
    for (size_t i = 0; i < raw.size(); ++i)
      raw[i] = static_cast<char>(i % 2); // 0/1 bytes: valid for bool too
    t.set_raw_data(raw);
    std::string path = dir.path("t" + std::to_string(c.onnx) + ".pb");
    datafiles::writeProto(path, t);
    std::string name;
    auto got = readTensorProto(path, &name);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    EXPECT_EQ(name, "t");
    EXPECT_EQ(got->dtype(), c.dtype);
    EXPECT_EQ(got->shape(), (distrt::Shape{3}));
    ASSERT_EQ(got->byte_size(), raw.size());
    EXPECT_EQ(std::memcmp(got->raw(), raw.data(), raw.size()), 0);
  }
}

TEST(TensorProtoFile, NarrowTypesReadFromInt32Data) {
  ScratchDir dir;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT16);
  t.add_dims(2);
  t.add_int32_data(-3);
  t.add_int32_data(700);
  std::string path = dir.path("i16.pb");
  datafiles::writeProto(path, t);
  auto got = readTensorProto(path);
  ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
  EXPECT_EQ(got->dtype(), DType::kI16);
  EXPECT_EQ(got->data<int16_t>()[0], -3);
  EXPECT_EQ(got->data<int16_t>()[1], 700);
}

TEST(TensorProtoFile, WideUnsignedTypesReadFromUint64Data) {
  ScratchDir dir;
  for (auto [code, dtype] :
       {std::pair{onnx::TensorProto::UINT32, DType::kU32},
        std::pair{onnx::TensorProto::UINT64, DType::kU64}}) {
    onnx::TensorProto t;
    t.set_data_type(code);
    t.add_dims(2);
    t.add_uint64_data(7);
    t.add_uint64_data(4000000000u); // above INT32_MAX: must not wrap
    std::string path = dir.path("u" + std::to_string(code) + ".pb");
    datafiles::writeProto(path, t);
    auto got = readTensorProto(path);
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    EXPECT_EQ(got->dtype(), dtype);
    if (dtype == DType::kU32) {
      EXPECT_EQ(got->data<uint32_t>()[0], 7u);
      EXPECT_EQ(got->data<uint32_t>()[1], 4000000000u);
    } else {
      EXPECT_EQ(got->data<uint64_t>()[0], 7u);
      EXPECT_EQ(got->data<uint64_t>()[1], 4000000000u);
    }
  }
}

TEST(TensorProtoFile, ElementTypesWithoutADTypeAreRefused) {
  ScratchDir dir;
  for (int code : {onnx::TensorProto::STRING,
                   onnx::TensorProto::COMPLEX128,
                   onnx::TensorProto::COMPLEX64}) {
    onnx::TensorProto t;
    t.set_data_type(code);
    t.add_dims(1);
    std::string path = dir.path("bad" + std::to_string(code) + ".pb");
    datafiles::writeProto(path, t);
    auto got = readTensorProto(path);
    ASSERT_FALSE(static_cast<bool>(got));
    EXPECT_EQ(llvm::toString(got.takeError()),
              path + ": unsupported ONNX element type " + std::to_string(code));
  }
}

} // namespace

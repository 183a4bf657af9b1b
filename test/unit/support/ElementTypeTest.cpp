//===- ElementTypeTest.cpp - MLIR element types <-> the dtype table -------===//
//
// Every dtype of the table through the compiler's adapter and back, with the
// expected MLIR types parsed from their spelling and the ONNX codes taken
// from onnx's own generated header (not from the table).
//
//===----------------------------------------------------------------------===//
#include "distopt/Support/ElementType.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

using namespace mlir;
using distrt::DType;

namespace {

struct Row {
  DType dtype;
  const char *mlir; // the IR's spelling
  int onnx;
};

const Row kRows[] = {
    {DType::kF32, "f32", onnx::TensorProto::FLOAT},
    {DType::kF16, "f16", onnx::TensorProto::FLOAT16},
    {DType::kBF16, "bf16", onnx::TensorProto::BFLOAT16},
    {DType::kF64, "f64", onnx::TensorProto::DOUBLE},
    {DType::kI64, "i64", onnx::TensorProto::INT64},
    {DType::kI32, "i32", onnx::TensorProto::INT32},
    {DType::kI16, "i16", onnx::TensorProto::INT16},
    {DType::kI8, "i8", onnx::TensorProto::INT8},
    {DType::kU8, "ui8", onnx::TensorProto::UINT8},
    {DType::kBool, "i1", onnx::TensorProto::BOOL},
    {DType::kU16, "ui16", onnx::TensorProto::UINT16},
    {DType::kU32, "ui32", onnx::TensorProto::UINT32},
    {DType::kU64, "ui64", onnx::TensorProto::UINT64},
};

TEST(ElementType, EveryDTypeRoundTrips) {
  MLIRContext ctx;
  ASSERT_EQ(std::size(kRows), distrt::DTypeTable().count);
  for (const Row &row : kRows) {
    SCOPED_TRACE(row.mlir);
    Type expected = parseType(row.mlir, &ctx);
    ASSERT_TRUE(expected);
    EXPECT_EQ(distopt::elementTypeOf(&ctx, row.dtype), expected);
    EXPECT_EQ(distopt::dtypeOf(expected), row.dtype);
    // The table's ONNX code is onnx.proto's, and import goes through it.
    EXPECT_EQ(distrt::OnnxTypeOf(row.dtype), row.onnx);
    EXPECT_EQ(distopt::elementTypeOfOnnx(&ctx, row.onnx), expected);
  }
}

TEST(ElementType, TypesWithoutADTypeAreRefused) {
  MLIRContext ctx;
  for (const char *spelling :
       {"si32", "si16", "ui4", "si8", "i4", "i128", "index", "f8E4M3FN",
        "tf32", "f80", "complex<f32>"}) {
    SCOPED_TRACE(spelling);
    Type t = parseType(spelling, &ctx);
    ASSERT_TRUE(t);
    EXPECT_EQ(distopt::dtypeOf(t), std::nullopt);
  }
  EXPECT_EQ(distopt::dtypeOf(Type()), std::nullopt);
  EXPECT_FALSE(distopt::elementTypeOf(&ctx, DType::kUnspecified));
  EXPECT_FALSE(distopt::elementTypeOf(&ctx, static_cast<DType>(42)));
  for (int code : std::initializer_list<int>{
           onnx::TensorProto::UNDEFINED, onnx::TensorProto::STRING,
           onnx::TensorProto::COMPLEX64, onnx::TensorProto::COMPLEX128,
           999})
    EXPECT_FALSE(distopt::elementTypeOfOnnx(&ctx, code)) << code;
}

} // namespace

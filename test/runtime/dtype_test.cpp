// The project's one dtype table (distrt/dtype.h): every dtype through every
// mapping and back, against values written down from their sources (onnx.proto,
// distrt.proto, the safetensors format), and unknown values refused.
#include "distrt/dtype.h"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

#include "distrt/proto/rank_program.pb.h"

namespace distrt {
namespace {

struct Expected {
  DType dtype;
  const char* name;
  size_t size;
  int onnx;                // onnx.proto, TensorProto.DataType
  const char* checkpoint;  // safetensors' dtype names
  const char* proto_name;  // distrt.proto's DType value of the same number
  bool is_float, is_integer;
};

// clang-format off
const Expected kExpected[] = {
    {DType::kF32,  "f32",  sizeof(float),    1,  "F32",  "F32",  true,  false},
    {DType::kF16,  "f16",  sizeof(f16_t),    10, "F16",  "F16",  true,  false},
    {DType::kBF16, "bf16", sizeof(bf16_t),   16, "BF16", "BF16", true,  false},
    {DType::kF64,  "f64",  sizeof(double),   11, "F64",  "F64",  true,  false},
    {DType::kI64,  "i64",  sizeof(int64_t),  7,  "I64",  "I64",  false, true},
    {DType::kI32,  "i32",  sizeof(int32_t),  6,  "I32",  "I32",  false, true},
    {DType::kI16,  "i16",  sizeof(int16_t),  5,  "I16",  "I16",  false, true},
    {DType::kI8,   "i8",   sizeof(int8_t),   3,  "I8",   "I8",   false, true},
    {DType::kU8,   "u8",   sizeof(uint8_t),  2,  "U8",   "U8",   false, true},
    {DType::kBool, "bool", sizeof(uint8_t),  9,  "BOOL", "BOOL", false, false},
    {DType::kU16,  "u16",  sizeof(uint16_t), 4,  "U16",  "U16",  false, true},
    {DType::kU32,  "u32",  sizeof(uint32_t), 12, "U32",  "U32",  false, true},
    {DType::kU64,  "u64",  sizeof(uint64_t), 13, "U64",  "U64",  false, true},
};
// clang-format on

TEST(DTypeTable, HoldsEveryDTypeOnceInEnumOrder) {
  DTypeRows rows = DTypeTable();
  ASSERT_EQ(rows.count, std::size(kExpected));
  int next = 1;
  for (const DTypeInfo& d : rows) EXPECT_EQ(static_cast<int>(d.dtype), next++);
}

TEST(DTypeTable, EveryDTypeRoundTripsThroughEveryMapping) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const DTypeInfo* row = FindDType(e.dtype);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->dtype, e.dtype);
    EXPECT_EQ(DTypeSize(e.dtype), e.size);
    EXPECT_EQ(IsFloat(e.dtype), e.is_float);
    EXPECT_EQ(IsInteger(e.dtype), e.is_integer);
    EXPECT_TRUE(IsValidDType(static_cast<int>(e.dtype)));

    DType back = DType::kUnspecified;
    EXPECT_EQ(DTypeName(e.dtype), e.name);
    ASSERT_TRUE(ParseDType(e.name, &back).ok());
    EXPECT_EQ(back, e.dtype);

    back = DType::kUnspecified;
    EXPECT_EQ(OnnxTypeOf(e.dtype), e.onnx);
    ASSERT_TRUE(DTypeFromOnnx(e.onnx, &back).ok());
    EXPECT_EQ(back, e.dtype);

    back = DType::kUnspecified;
    EXPECT_EQ(CheckpointDTypeName(e.dtype), e.checkpoint);
    ASSERT_TRUE(ParseCheckpointDType(e.checkpoint, &back).ok());
    EXPECT_EQ(back, e.dtype);

    // Rank programs store the enum's number: distrt.proto names it the same.
    EXPECT_EQ(proto::DType_Name(static_cast<proto::DType>(e.dtype)), e.proto_name);
  }
}

TEST(DTypeTable, RankProgramEnumHasNoOtherValues) {
  // Every value distrt.proto's DType defines is in the table (or is the
  // unspecified 0): a dtype added to one is added to the other.
  const auto* descriptor = proto::DType_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    int number = descriptor->value(i)->number();
    SCOPED_TRACE(descriptor->value(i)->name());
    EXPECT_TRUE(number == 0 || FindDType(static_cast<DType>(number)) != nullptr);
  }
  EXPECT_EQ(static_cast<size_t>(descriptor->value_count()), DTypeTable().count + 1);
}

TEST(DTypeTable, CodesAreDistinct) {
  std::set<int> onnx;
  std::set<std::string> names, checkpoint;
  for (const DTypeInfo& d : DTypeTable()) {
    EXPECT_TRUE(onnx.insert(d.onnx_type).second) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_TRUE(checkpoint.insert(d.checkpoint_name).second) << d.name;
  }
}

TEST(DTypeTable, UnspecifiedAndUnknownValuesHaveNoRow) {
  for (int v : {0, 14, -1, 99}) {
    SCOPED_TRACE(v);
    DType d = static_cast<DType>(v);
    EXPECT_EQ(FindDType(d), nullptr);
    EXPECT_FALSE(IsValidDType(v));
    EXPECT_EQ(DTypeSize(d), 0u);
    EXPECT_EQ(OnnxTypeOf(d), 0);
    EXPECT_EQ(CheckpointDTypeName(d), "");
    EXPECT_FALSE(IsFloat(d));
    EXPECT_FALSE(IsInteger(d));
  }
  EXPECT_EQ(DTypeName(DType::kUnspecified), "unspecified");
  EXPECT_EQ(DTypeName(static_cast<DType>(14)), "invalid(14)");
}

TEST(DTypeTable, UnknownOnnxTypeIsRefusedNamingIt) {
  // STRING (8), COMPLEX64 (14), FLOAT8E4M3FN (17), UNDEFINED (0).
  for (int code : {8, 14, 17, 0, -3}) {
    DType out = DType::kF32;
    Status s = DTypeFromOnnx(code, &out);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "ONNX element type " + std::to_string(code) +
                               " has no distrt dtype (distrt holds FLOAT, FLOAT16, BFLOAT16, "
                               "DOUBLE, INT64, INT32, INT16, INT8, UINT8, BOOL, UINT16, "
                               "UINT32, UINT64)");
    EXPECT_EQ(out, DType::kF32);  // untouched
  }
}

TEST(DTypeTable, UnknownNamesAreRefusedNamingThem) {
  DType out = DType::kF32;
  Status s = ParseCheckpointDType("F8_E4M3", &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "unknown checkpoint dtype 'F8_E4M3' (known: F32, F16, BF16, F64, I64, I32, I16, I8, "
            "U8, BOOL, U16, U32, U64)");
  // Names are case-sensitive in both vocabularies.
  EXPECT_FALSE(ParseCheckpointDType("f32", &out).ok());
  EXPECT_FALSE(ParseDType("F32", &out).ok());
  s = ParseDType("unspecified", &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "unknown dtype 'unspecified'");
  EXPECT_EQ(out, DType::kF32);
}

}  // namespace
}  // namespace distrt

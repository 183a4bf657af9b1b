// Element types, and the project's one dtype table: every dtype's names and
// codes in the formats distopt reads and writes (ONNX, rank programs,
// checkpoints), its size and its kind. Importer, exporter, TensorProto
// reader, ONNX writer, checkpoint format and runtime all look dtypes up
// here; the compiler's MLIR element types go through one adapter over it
// (distopt/Support/ElementType.h).
#ifndef DISTRT_DTYPE_H_
#define DISTRT_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "distrt/status.h"

namespace distrt {

// The numbers are distrt.proto's DType, which rank programs store: they
// never change, so programs and checkpoints written earlier keep their
// meaning.
enum class DType : int {
  kUnspecified = 0,
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kF64 = 4,
  kI64 = 5,
  kI32 = 6,
  kI16 = 7,
  kI8 = 8,
  kU8 = 9,
  kBool = 10,
  kU16 = 11,
  kU32 = 12,
  kU64 = 13,
};

// One row of the table.
struct DTypeInfo {
  DType dtype;
  const char* name;             // distrt's name: "f32", "bf16", "u8", "bool"
  size_t size;                  // bytes per element
  int onnx_type;                // ONNX TensorProto.DataType: FLOAT = 1, ...
  const char* onnx_name;        // that code's name in onnx.proto: "FLOAT"
  const char* checkpoint_name;  // a checkpoint's (safetensors') dtype: "F32"
  bool is_float;                // f32 f16 bf16 f64
  bool is_integer;              // signed and unsigned integers (not bool)
};

// Every dtype, kUnspecified excepted, in the enum's order.
struct DTypeRows {
  const DTypeInfo* first;
  size_t count;
  const DTypeInfo* begin() const { return first; }
  const DTypeInfo* end() const { return first + count; }
};
DTypeRows DTypeTable();
// The row of `dtype`; null for kUnspecified or a value the enum does not
// name.
const DTypeInfo* FindDType(DType dtype);

// Bytes per element; 0 for kUnspecified or an unknown value.
size_t DTypeSize(DType dtype);
// "f32", "i64", "bool", ...; "invalid(N)" for unknown values.
std::string DTypeName(DType dtype);
// Inverse of DTypeName.
Status ParseDType(const std::string& name, DType* out);
// True for the values the enum names, except kUnspecified.
bool IsValidDType(int value);
bool IsFloat(DType dtype);    // f32 f16 bf16 f64
bool IsInteger(DType dtype);  // signed and unsigned integers (not bool)

// ONNX's TensorProto.DataType code of `dtype`; 0 (UNDEFINED) for
// kUnspecified or an unknown value.
int OnnxTypeOf(DType dtype);
// The dtype of an ONNX element type; an error naming the code (and the
// ones distrt holds) for a type distrt cannot hold (STRING, FLOAT8E4M3FN, ...).
Status DTypeFromOnnx(int onnx_type, DType* out);
// The dtype's name in a checkpoint (safetensors' "F32", "BF16", "I64",
// ...); "" for kUnspecified or an unknown value.
std::string CheckpointDTypeName(DType dtype);
// The inverse; an error naming `name` for one safetensors does not define
// or distrt cannot hold.
Status ParseCheckpointDType(const std::string& name, DType* out);

// IEEE half and bfloat16 <-> float, round-to-nearest-even.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BF16ToFloat(uint16_t b);
uint16_t FloatToBF16(float f);

// Storage types for the 16-bit floats (plain bit patterns).
struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::kI16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kI8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::kU16;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::kU32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::kU64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<f16_t> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOf<bf16_t> {
  static constexpr DType value = DType::kBF16;
};

}  // namespace distrt

#endif  // DISTRT_DTYPE_H_

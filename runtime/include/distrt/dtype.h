// Element types. Numbering matches distrt.proto.DType.
#ifndef DISTRT_DTYPE_H_
#define DISTRT_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "distrt/status.h"

namespace distrt {

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
};

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

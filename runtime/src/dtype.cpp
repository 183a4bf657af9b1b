#include "distrt/dtype.h"

#include <cstring>

namespace distrt {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kF64:
      return 8;
    case DType::kI64:
      return 8;
    case DType::kI32:
      return 4;
    case DType::kI16:
      return 2;
    case DType::kI8:
      return 1;
    case DType::kU8:
      return 1;
    case DType::kBool:
      return 1;
    case DType::kUnspecified:
      return 0;
  }
  return 0;
}

std::string DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "f64";
    case DType::kI64:
      return "i64";
    case DType::kI32:
      return "i32";
    case DType::kI16:
      return "i16";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "u8";
    case DType::kBool:
      return "bool";
    case DType::kUnspecified:
      return "unspecified";
  }
  return "invalid(" + std::to_string(static_cast<int>(dtype)) + ")";
}

Status ParseDType(const std::string& name, DType* out) {
  for (int v = 1; v <= 10; ++v) {
    if (DTypeName(static_cast<DType>(v)) == name) {
      *out = static_cast<DType>(v);
      return OkStatus();
    }
  }
  return InvalidArgumentError("unknown dtype '", name, "'");
}

bool IsValidDType(int value) { return value >= 1 && value <= 10; }

bool IsFloat(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64;
}

bool IsInteger(DType d) {
  return d == DType::kI64 || d == DType::kI32 || d == DType::kI16 || d == DType::kI8 ||
         d == DType::kU8;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  int32_t exp = static_cast<int32_t>(absx >> 23) - 127 + 15;
  uint32_t mant = absx & 0x7fffffu;
  if (exp <= 0) {  // subnormal half (or zero)
    if (exp < -10) return sign;
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp
  return static_cast<uint16_t>(sign | half);
}

float BF16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace distrt

#include "distrt/dtype.h"

#include "portable/hd.h"

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

// One copy of the conversions, shared with the device kernels.
float HalfToFloat(uint16_t h) { return portable::HalfBitsToFloat(h); }
uint16_t FloatToHalf(float f) { return portable::FloatToHalfBits(f); }
float BF16ToFloat(uint16_t b) { return portable::BF16BitsToFloat(b); }
uint16_t FloatToBF16(float f) { return portable::FloatToBF16Bits(f); }

}  // namespace distrt

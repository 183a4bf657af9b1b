#include "distrt/dtype.h"

#include "portable/hd.h"

#include <cstring>

namespace distrt {

namespace {

// The table. Rows in the enum's order (row i is dtype i + 1), which
// FindDType relies on and the static_assert below checks.
// clang-format off
constexpr DTypeInfo kTable[] = {
    // dtype      name    size onnx onnx_name   checkpoint float  integer
    {DType::kF32,  "f32",  4,   1,  "FLOAT",    "F32",     true,  false},
    {DType::kF16,  "f16",  2,   10, "FLOAT16",  "F16",     true,  false},
    {DType::kBF16, "bf16", 2,   16, "BFLOAT16", "BF16",    true,  false},
    {DType::kF64,  "f64",  8,   11, "DOUBLE",   "F64",     true,  false},
    {DType::kI64,  "i64",  8,   7,  "INT64",    "I64",     false, true},
    {DType::kI32,  "i32",  4,   6,  "INT32",    "I32",     false, true},
    {DType::kI16,  "i16",  2,   5,  "INT16",    "I16",     false, true},
    {DType::kI8,   "i8",   1,   3,  "INT8",     "I8",      false, true},
    {DType::kU8,   "u8",   1,   2,  "UINT8",    "U8",      false, true},
    {DType::kBool, "bool", 1,   9,  "BOOL",     "BOOL",    false, false},
    {DType::kU16,  "u16",  2,   4,  "UINT16",   "U16",     false, true},
    {DType::kU32,  "u32",  4,   12, "UINT32",   "U32",     false, true},
    {DType::kU64,  "u64",  8,   13, "UINT64",   "U64",     false, true},
};
// clang-format on
constexpr size_t kRows = sizeof(kTable) / sizeof(kTable[0]);

constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kRows; ++i)
    if (static_cast<size_t>(kTable[i].dtype) != i + 1) return false;
  return true;
}
static_assert(RowsInEnumOrder(), "kTable's row i must be dtype i + 1");

// "FLOAT, FLOAT16, ..." or "F32, F16, ...": what an error offers instead.
template <typename Field>
std::string Known(Field field) {
  std::string out;
  for (const DTypeInfo& d : kTable) out += std::string(out.empty() ? "" : ", ") + field(d);
  return out;
}

}  // namespace

DTypeRows DTypeTable() { return {kTable, kRows}; }

const DTypeInfo* FindDType(DType dtype) {
  int v = static_cast<int>(dtype);
  if (v < 1 || static_cast<size_t>(v) > kRows) return nullptr;
  return &kTable[v - 1];
}

size_t DTypeSize(DType dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d ? d->size : 0;
}

std::string DTypeName(DType dtype) {
  if (const DTypeInfo* d = FindDType(dtype)) return d->name;
  if (dtype == DType::kUnspecified) return "unspecified";
  return "invalid(" + std::to_string(static_cast<int>(dtype)) + ")";
}

Status ParseDType(const std::string& name, DType* out) {
  for (const DTypeInfo& d : kTable) {
    if (name == d.name) {
      *out = d.dtype;
      return OkStatus();
    }
  }
  return InvalidArgumentError("unknown dtype '", name, "'");
}

bool IsValidDType(int value) { return FindDType(static_cast<DType>(value)) != nullptr; }

bool IsFloat(DType dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d && d->is_float;
}

bool IsInteger(DType dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d && d->is_integer;
}

int OnnxTypeOf(DType dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d ? d->onnx_type : 0;
}

Status DTypeFromOnnx(int onnx_type, DType* out) {
  for (const DTypeInfo& d : kTable) {
    if (d.onnx_type == onnx_type) {
      *out = d.dtype;
      return OkStatus();
    }
  }
  return InvalidArgumentError("ONNX element type ", onnx_type,
                              " has no distrt dtype (distrt holds ",
                              Known([](const DTypeInfo& d) { return d.onnx_name; }), ")");
}

std::string CheckpointDTypeName(DType dtype) {
  const DTypeInfo* d = FindDType(dtype);
  return d ? d->checkpoint_name : "";
}

Status ParseCheckpointDType(const std::string& name, DType* out) {
  for (const DTypeInfo& d : kTable) {
    if (name == d.checkpoint_name) {
      *out = d.dtype;
      return OkStatus();
    }
  }
  return InvalidArgumentError("unknown checkpoint dtype '", name, "' (known: ",
                              Known([](const DTypeInfo& d) { return d.checkpoint_name; }), ")");
}

// One copy of the conversions, shared with the device kernels.
float HalfToFloat(uint16_t h) { return portable::HalfBitsToFloat(h); }
uint16_t FloatToHalf(float f) { return portable::FloatToHalfBits(f); }
float BF16ToFloat(uint16_t b) { return portable::BF16BitsToFloat(b); }
uint16_t FloatToBF16(float f) { return portable::FloatToBF16Bits(f); }

}  // namespace distrt

//===- ElementType.cpp - MLIR element types <-> the dtype table -----------===//
#include "distopt/Support/ElementType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

Type distopt::elementTypeOf(MLIRContext *ctx, distrt::DType dtype) {
  Builder b(ctx);
  switch (dtype) {
  case distrt::DType::kF32:
    return b.getF32Type();
  case distrt::DType::kF16:
    return b.getF16Type();
  case distrt::DType::kBF16:
    return b.getBF16Type();
  case distrt::DType::kF64:
    return b.getF64Type();
  case distrt::DType::kI64:
    return b.getI64Type();
  case distrt::DType::kI32:
    return b.getI32Type();
  case distrt::DType::kI16:
    return b.getI16Type();
  case distrt::DType::kI8:
    return b.getI8Type();
  case distrt::DType::kU8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case distrt::DType::kU16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case distrt::DType::kU32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case distrt::DType::kU64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case distrt::DType::kBool:
    return b.getI1Type();
  case distrt::DType::kUnspecified:
    break;
  }
  return {};
}

std::optional<distrt::DType> distopt::dtypeOf(Type type) {
  // Built-in types are unique per context: compare with each row's.
  if (!type)
    return std::nullopt;
  for (const distrt::DTypeInfo &d : distrt::DTypeTable())
    if (elementTypeOf(type.getContext(), d.dtype) == type)
      return d.dtype;
  return std::nullopt;
}

Type distopt::elementTypeOfOnnx(MLIRContext *ctx, int onnxType) {
  distrt::DType dtype;
  if (!distrt::DTypeFromOnnx(onnxType, &dtype).ok())
    return {};
  return elementTypeOf(ctx, dtype);
}

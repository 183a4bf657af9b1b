//===- ElementType.h - MLIR element types <-> the dtype table ---*- C++ -*-===//
//
// The compiler's one adapter between MLIR element types and the project's
// dtype table (distrt/dtype.h): the importer turns an ONNX element type into
// an MLIR type through it, the exporter an MLIR type into a rank program's
// dtype.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SUPPORT_ELEMENTTYPE_H
#define DISTOPT_SUPPORT_ELEMENTTYPE_H

#include "distrt/dtype.h"

#include "mlir/IR/Types.h"

#include <optional>

namespace mlir {
class MLIRContext;
}

namespace distopt {

/// The element type the IR uses for `dtype`: f32, f16, bf16, f64, the
/// signless integers i64, i32, i16, i8, the unsigned ui8, ui16, ui32, ui64
/// for u8, u16, u32, u64 and i1 for bool; null for
/// kUnspecified or an unknown value.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, distrt::DType dtype);

/// The dtype of an element type; std::nullopt for one the table does not
/// hold (si32, f8E4M3FN, index, ...).
std::optional<distrt::DType> dtypeOf(mlir::Type type);

/// The element type of an ONNX TensorProto.DataType code; null for one the
/// table does not hold (STRING, FLOAT8E4M3FN, ...).
mlir::Type elementTypeOfOnnx(mlir::MLIRContext *ctx, int onnxType);

} // namespace distopt

#endif // DISTOPT_SUPPORT_ELEMENTTYPE_H

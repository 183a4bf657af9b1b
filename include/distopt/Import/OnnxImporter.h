//===- OnnxImporter.h - ONNX models into the nn dialect ---------*- C++ -*-===//
//
// Reads an ONNX ModelProto and builds `func.func @main` in the nn dialect:
// graph inputs (not initializers) become arguments and graph outputs results,
// both named by `nn.name` attributes; every node becomes nn op(s) located at
// NameLoc(node name) around the file's location; initializers become
// `nn.weight` references to their bytes (in the model file or its external
// data files), never copies. Shapes are static: symbolic dimensions are bound
// from ImportOptions::dims, and shape arithmetic (Shape, Gather, Concat, ...
// on shapes) is evaluated at import. The module records the model path in
// `nn.model_path` and the opset in `nn.opset`.
//
// Errors are diagnostics through the context's engine (naming the node, its
// op type and opset, or the tensor, or the file); the import then returns
// null. See docs/import.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_IMPORT_ONNXIMPORTER_H
#define DISTOPT_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace distopt {

/// The values of a graph input given at import time.
struct InputValues {
  /// The tensor's shape; absent: the graph input's declared shape.
  std::optional<std::vector<int64_t>> shape;
  /// Row-major values: `ints` for integer and bool inputs, `floats` for
  /// floating-point ones (integer values are accepted there too).
  bool isFloat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct ImportOptions {
  /// Values of symbolic input dimensions (`dim_param`), e.g. batch -> 2.
  llvm::StringMap<int64_t> dims;
  /// Values of graph inputs that the importer may read where an op needs a
  /// value at import (a Reshape shape, Slice bounds, axes, pads...). The
  /// input stays an argument of @main and must be fed the same values at run
  /// time; nothing else is folded from it. A test-harness specialisation
  /// (`dist-run --onnx-test` passes the integer inputs of ONNX backend
  /// tests); real models keep such operands as initializers or constants.
  /// See docs/import.md.
  llvm::StringMap<InputValues> inputValues;
  /// Say, as remarks and a warning, how the initializers become parameters:
  /// parameters the exporter merged (split again on every import), tied
  /// ones, constant-folded `onnx::*` copies. Set when training.
  bool describeParameters = false;
};

/// Imports the model at `path`; null (with diagnostics emitted) on error.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  llvm::StringRef path,
                                                  const ImportOptions &options);

/// The symbolic dimension names of each graph input (one entry per dimension,
/// empty where the dimension is a number), so a tool can bind them from the
/// shapes of actual inputs.
llvm::Expected<std::vector<std::vector<std::string>>>
inputDimensionSymbols(llvm::StringRef path);

/// A graph input's shape as the file gives it: per dimension, its size, or
/// -1 and the symbol's name.
struct GraphInputShape {
  std::string name;
  std::vector<int64_t> sizes;
  std::vector<std::string> symbols;
  /// The ONNX element type (TensorProto.DataType) it declares; 0 if none.
  int elementType = 0;
};
llvm::Expected<std::vector<GraphInputShape>>
graphInputShapes(llvm::StringRef path);

/// The names of the model's graph inputs that are not initializers, in
/// order (the order of ONNX test data's input_<i>.pb files).
llvm::Expected<std::vector<std::string>> graphInputNames(llvm::StringRef path);

/// Prints the ONNX ops the importer supports, with their opset versions and
/// attributes, as a markdown table.
void printSupportedOnnxOps(llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_IMPORT_ONNXIMPORTER_H

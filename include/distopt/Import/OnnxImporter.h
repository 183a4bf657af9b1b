//===- OnnxImporter.h - ONNX models into the nn dialect ---------*- C++ -*-===//
//
// Reads an ONNX ModelProto and builds `func.func @main` in the nn dialect:
// graph inputs become arguments (named by `nn.name`), outputs results, every
// node op(s) located at its node name, initializers `nn.weight` references to
// their bytes in the model file or its external-data files. Shapes are
// static: symbolic dimensions are bound from ImportOptions::dims, and shape
// arithmetic (Shape, Gather, Concat, ... on shapes) is evaluated at import.
// Errors are diagnostics naming the node, its op type and opset.
// See docs/import.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_IMPORT_ONNXIMPORTER_H
#define DISTOPT_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace distopt {

struct ImportOptions {
  /// Values of symbolic input dimensions (`dim_param`), e.g. batch -> 2.
  llvm::StringMap<int64_t> dims;
};

/// The symbolic dimension names of each graph input (one entry per dimension,
/// empty where the dimension is a number), so a tool can bind them from the
/// shapes of actual inputs.
llvm::Expected<std::vector<std::vector<std::string>>>
inputDimensionSymbols(llvm::StringRef path);

/// Imports the model at `path`; null (with diagnostics emitted) on error.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  llvm::StringRef path,
                                                  const ImportOptions &options);

} // namespace distopt

#endif // DISTOPT_IMPORT_ONNXIMPORTER_H

//===- NNAttrNames.h - names of the nn dialect's attributes -----*- C++ -*-===//
//
// Discardable attributes the importer writes and later steps read, spelled
// once.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_NN_IR_NNATTRNAMES_H
#define DISTOPT_DIALECT_NN_IR_NNATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace distopt::nn {

/// On a function argument or result: the ONNX graph input/output name.
inline constexpr llvm::StringLiteral kNameAttr = "nn.name";
/// On the module: the model file weights' relative paths resolve against.
inline constexpr llvm::StringLiteral kModelPathAttr = "nn.model_path";
/// On the module: the ONNX opset the model was imported at.
inline constexpr llvm::StringLiteral kOpsetAttr = "nn.opset";

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_NNATTRNAMES_H

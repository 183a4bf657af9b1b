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

// Training steps (see dist-build-training-step):
/// On a function result: the persistent tensor (weight or variable, by its
/// persistent key) whose next value the result is.
inline constexpr llvm::StringLiteral kUpdatesAttr = "nn.updates";
/// On an nn.variable: the parameter (persistent key) it is optimizer state
/// of.
inline constexpr llvm::StringLiteral kStateOfAttr = "nn.state_of";
/// On an nn.variable: the parameter (persistent key) whose value, rounded
/// to the variable's element type, it holds: a mixed-precision policy's
/// compute copy, which the step writes from the updated master and which
/// starts (and resumes) as the master's rounding
/// (dist-persist-compute-copies).
inline constexpr llvm::StringLiteral kCopyOfAttr = "nn.copy_of";
/// On the identity that marks a parameter's final gradient: the parameter.
inline constexpr llvm::StringLiteral kGradientOfAttr = "nn.gradient_of";
/// On the casts around a parameter's gradient in the training config's
/// `precision.reduce` dtype (the parameter's persistent key): the widening
/// cast whose input is that narrow gradient, and the narrowing cast that
/// rounded the f32 sum of a microbatch loop to it. Data-parallel plans
/// reduce the gradient across ranks between them, in the narrow dtype.
inline constexpr llvm::StringLiteral kNarrowReduceOfAttr =
    "nn.narrow_reduce_of";
/// On ops of a training step: "loss", "backward" or "optimizer" (forward
/// ops carry none).
inline constexpr llvm::StringLiteral kPhaseAttr = "nn.phase";

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_NNATTRNAMES_H

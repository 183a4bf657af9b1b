//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_NN_IR_NNOPS_H
#define DISTOPT_DIALECT_NN_IR_NNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"

namespace distopt::nn {
class GradientBuilder;
} // namespace distopt::nn

#include "distopt/Dialect/NN/IR/GradientOpInterface.h.inc"

#define GET_OP_CLASSES
#include "distopt/Dialect/NN/IR/NNOps.h.inc"

namespace distopt::nn {

/// The name of the ONNX node `op` was imported from (the importer records
/// it as the op's NameLoc), or "".
std::string getNodeName(mlir::Operation *op);

/// The key that names a persistent tensor across a training step's
/// programs: a weight's initializer name (with its window when it is one,
/// `qkv[64,0]`), a variable's name.
std::string getPersistentKey(mlir::Operation *weightOrVariable);

/// The PyTorch module path in the node's name: `/blocks.0/attn/qkv/MatMul`
/// gives `blocks.0.attn.qkv`; "" for top-level or unnamed nodes.
std::string getNodeModulePath(mlir::Operation *op);
/// The dotted prefixes of that path, shortest first (`h.0.attn` -> `h`,
/// `h.0`, `h.0.attn`): what layer globs (pipeline split, recompute) match.
std::vector<std::string> getNodeModulePrefixes(mlir::Operation *op);

/// Whether `v` is an nn.constant whose every element is a float +0 (what
/// GradientBuilder::zerosLike makes).
bool isZeroConstant(mlir::Value v);

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_NNOPS_H

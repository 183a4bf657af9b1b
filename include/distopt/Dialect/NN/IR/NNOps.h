//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//
#ifndef NN_IR_NNOPS_H
#define NN_IR_NNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"

#define GET_OP_CLASSES
#include "distopt/Dialect/NN/IR/NNOps.h.inc"

#endif // NN_IR_NNOPS_H

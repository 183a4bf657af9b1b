//===- NNFusedOps.h - nn ops in a target's fused forms ----------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_NN_IR_NNFUSEDOPS_H
#define DISTOPT_DIALECT_NN_IR_NNFUSEDOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "distopt/Dialect/NN/IR/NNDialect.h"

#define GET_OP_CLASSES
#include "distopt/Dialect/NN/IR/NNFusedOps.h.inc"

#endif // DISTOPT_DIALECT_NN_IR_NNFUSEDOPS_H

//===- DistOps.h - dist dialect operations ----------------------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_DIST_IR_DISTOPS_H
#define DISTOPT_DIALECT_DIST_IR_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "distopt/Dialect/Dist/IR/DistAttrs.h"

#define GET_OP_CLASSES
#include "distopt/Dialect/Dist/IR/DistOps.h.inc"

#endif // DISTOPT_DIALECT_DIST_IR_DISTOPS_H

//===- NNDialect.h - the nn dialect -----------------------------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_NN_IR_NNDIALECT_H
#define DISTOPT_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "distopt/Dialect/NN/IR/NNDialect.h.inc"

#endif // DISTOPT_DIALECT_NN_IR_NNDIALECT_H

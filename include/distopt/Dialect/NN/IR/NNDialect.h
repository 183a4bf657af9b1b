//===- NNDialect.h - the nn dialect -----------------------------*- C++ -*-===//
#ifndef NN_IR_NNDIALECT_H
#define NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "distopt/Dialect/NN/IR/NNDialect.h.inc"

#endif // NN_IR_NNDIALECT_H

//===- NNDialect.cpp - the nn dialect ---------------------------*- C++ -*-===//
#include "nn/IR/NNDialect.h"
#include "dist/IR/DistDialect.h"
#include "nn/IR/NNOps.h"

using namespace mlir;
using namespace distopt::nn;

#include "nn/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nn/IR/NNOps.cpp.inc"
      >();
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

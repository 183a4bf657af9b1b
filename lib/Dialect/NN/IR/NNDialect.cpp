//===- NNDialect.cpp - the nn dialect ---------------------------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace distopt::nn;

#include "distopt/Dialect/NN/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "distopt/Dialect/NN/IR/NNOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "distopt/Dialect/NN/IR/NNFusedOps.cpp.inc"
      >();
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

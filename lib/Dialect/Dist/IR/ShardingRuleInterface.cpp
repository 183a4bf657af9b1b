//===- ShardingRuleInterface.cpp - how an op distributes --------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

using namespace mlir;
using namespace distopt::dist;

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.cpp.inc"

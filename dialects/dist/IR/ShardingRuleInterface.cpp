//===- ShardingRuleInterface.cpp - how an op distributes --------*- C++ -*-===//
#include "dist/IR/ShardingRuleInterface.h"

using namespace mlir;
using namespace distopt::dist;

#include "dist/IR/ShardingRuleInterface.cpp.inc"

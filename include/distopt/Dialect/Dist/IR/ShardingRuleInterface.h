//===- ShardingRuleInterface.h - how an op distributes ----------*- C++ -*-===//
#ifndef DIST_IR_SHARDINGRULEINTERFACE_H
#define DIST_IR_SHARDINGRULEINTERFACE_H

#include "distopt/Dialect/Dist/IR/PartitionContext.h"
#include "distopt/Dialect/Dist/IR/ShardingRule.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h.inc"

#endif // DIST_IR_SHARDINGRULEINTERFACE_H

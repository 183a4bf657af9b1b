//===- ShardingRuleInterface.h - how an op distributes ----------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_H
#define DISTOPT_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_H

#include "distopt/Dialect/Dist/IR/PartitionContext.h"
#include "distopt/Dialect/Dist/IR/ShardingRule.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h.inc"

#endif // DISTOPT_DIALECT_DIST_IR_SHARDINGRULEINTERFACE_H

//===- ShardingRuleInterface.h - how an op distributes ----------*- C++ -*-===//
#ifndef DIST_IR_SHARDINGRULEINTERFACE_H
#define DIST_IR_SHARDINGRULEINTERFACE_H

#include "dist/IR/PartitionContext.h"
#include "dist/IR/ShardingRule.h"

#include "dist/IR/ShardingRuleInterface.h.inc"

#endif // DIST_IR_SHARDINGRULEINTERFACE_H

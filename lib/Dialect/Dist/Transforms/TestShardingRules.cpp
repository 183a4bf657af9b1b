//===- TestShardingRules.cpp - dist-test-sharding-rules ---------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace distopt::dist {
#define GEN_PASS_DEF_DISTTESTSHARDINGRULES
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace distopt::dist

using namespace mlir;
using namespace distopt::dist;

namespace {
struct TestShardingRulesPass
    : public distopt::dist::impl::DistTestShardingRulesBase<
          TestShardingRulesPass> {
  void runOnOperation() override {
    getOperation().walk([&](ShardingRuleOpInterface op) {
      OpShardingRule rule = op.getShardingRule();
      if (auto err = rule.check(op)) {
        op->emitError("inconsistent sharding rule: ") << *err;
        return signalPassFailure();
      }
      std::string text;
      llvm::raw_string_ostream os(text);
      rule.print(os);
      op->emitRemark("sharding rule: ") << text;
    });
  }
};
} // namespace

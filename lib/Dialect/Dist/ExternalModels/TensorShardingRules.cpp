//===- TensorShardingRules.cpp - rules of tensor dialect ops ----*- C++ -*-===//
//
// tensor.empty gives linalg ops their inits; every dimension is a parallel
// factor, and its local form is an empty tensor of the local shape.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace distopt::dist;

namespace {

struct EmptyRuleModel
    : public ShardingRuleOpInterface::ExternalModel<EmptyRuleModel,
                                                    tensor::EmptyOp> {
  OpShardingRule getShardingRule(Operation *op) const {
    auto empty = cast<tensor::EmptyOp>(op);
    OpShardingRule rule;
    rule.operands.assign(op->getNumOperands(), TensorFactors()); // sizes
    TensorFactors tf;
    for (int64_t s : empty.getType().getShape())
      tf.push_back({rule.addFactor(s)});
    rule.results.push_back(std::move(tf));
    rule.linearOperands.assign(op->getNumOperands(), false);
    return rule;
  }

  LogicalResult partitionOp(Operation *op, PartitionContext &ctx,
                            ValueRange localOperands, ArrayRef<ShardingAttr>,
                            ArrayRef<ShardingAttr> resultShardings,
                            SmallVectorImpl<Value> &localResults) const {
    auto empty = cast<tensor::EmptyOp>(op);
    RankedTensorType global = empty.getType();
    RankedTensorType local = ctx.localType(global, resultShardings[0]);
    // Dynamic global extents are never split: their sizes carry over.
    SmallVector<Value> sizes;
    unsigned next = 0;
    for (int64_t d = 0; d < global.getRank(); ++d) {
      if (global.isDynamicDim(d)) {
        sizes.push_back(localOperands[next++]);
        continue;
      }
      if (local.isDynamicDim(d))
        return op->emitError("dimension ")
               << d << " of this tensor.empty splits unevenly, so its local "
               << "extent depends on the rank; partition for one rank "
               << "(dist-partition{rank=N})";
    }
    localResults.push_back(
        tensor::EmptyOp::create(ctx.builder, op->getLoc(), local, sizes));
    return success();
  }
};

} // namespace

void distopt::dist::registerTensorShardingRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::EmptyOp::attachInterface<EmptyRuleModel>(*ctx);
  });
}

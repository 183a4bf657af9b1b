//===- ArithShardingRules.cpp - rules of arith and math ops -----*- C++ -*-===//
//
// arith and math ops are element-wise (operands and results of one shape):
// every dimension is one parallel factor. On scalars (inside linalg
// payloads) the rule is empty. Partial sums flow through addition and
// subtraction (jointly), multiplication (one operand), the numerator of a
// division, negation, exact widening and the two values of a select.
// Splat constants split into smaller splats; other constants stay whole.
//
//===----------------------------------------------------------------------===//
#include "RuleHelpers.h"
#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace distopt::dist;

namespace {

static void setArithPartialFlow(Operation *op, OpShardingRule &rule) {
  if (isa<arith::AddFOp, arith::AddIOp, arith::SubFOp, arith::SubIOp>(op))
    rule.setPartialFlow(PartialFlow::AllLinear, {0, 1});
  else if (isa<arith::MulFOp, arith::MulIOp>(op))
    rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
  else if (isa<arith::DivFOp>(op))
    rule.setPartialFlow(PartialFlow::OneLinear, {0});
  else if (isa<arith::NegFOp, arith::ExtFOp>(op))
    rule.setPartialFlow(PartialFlow::AllLinear, {0});
  else if (isa<arith::SelectOp>(op))
    rule.setPartialFlow(PartialFlow::AllLinear, {1, 2});
}

template <typename OpTy>
struct ElementwiseRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ElementwiseRuleModel<OpTy>,
                                                    OpTy> {
  OpShardingRule getShardingRule(Operation *op) const {
    OpShardingRule rule = OpShardingRule::elementwise(op);
    if (isa<RankedTensorType>(op->getResult(0).getType()))
      setArithPartialFlow(op, rule);
    return rule;
  }
};

struct ConstantRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConstantRuleModel,
                                                    arith::ConstantOp> {
  OpShardingRule getShardingRule(Operation *op) const {
    return external::constantRule(op, cast<arith::ConstantOp>(op).getValue());
  }

  LogicalResult partitionOp(Operation *op, PartitionContext &ctx, ValueRange,
                            ArrayRef<ShardingAttr>,
                            ArrayRef<ShardingAttr> resultShardings,
                            SmallVectorImpl<Value> &localResults) const {
    auto constant = cast<arith::ConstantOp>(op);
    if (!isa<RankedTensorType>(constant.getType())) {
      localResults.push_back(ctx.builder.clone(*op)->getResult(0));
      return success();
    }
    FailureOr<TypedAttr> value = external::localConstantValue(
        op, ctx, constant.getValue(), resultShardings[0]);
    if (failed(value))
      return failure();
    localResults.push_back(
        arith::ConstantOp::create(ctx.builder, op->getLoc(), *value));
    return success();
  }
};

template <typename OpTy> static void attachIfElementwise(MLIRContext *ctx) {
  if constexpr (OpTy::template hasTrait<OpTrait::Elementwise>())
    OpTy::template attachInterface<ElementwiseRuleModel<OpTy>>(*ctx);
}

template <typename... OpTys> static void attachAll(MLIRContext *ctx) {
  (attachIfElementwise<OpTys>(ctx), ...);
}

} // namespace

void distopt::dist::registerArithShardingRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    attachAll<
#define GET_OP_LIST
#include "mlir/Dialect/Arith/IR/ArithOps.cpp.inc"
        >(ctx);
    arith::ConstantOp::attachInterface<ConstantRuleModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *) {
    attachAll<
#define GET_OP_LIST
#include "mlir/Dialect/Math/IR/MathOps.cpp.inc"
        >(ctx);
  });
}

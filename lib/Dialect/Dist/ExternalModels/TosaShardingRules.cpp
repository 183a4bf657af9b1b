//===- TosaShardingRules.cpp - rules of tosa ops ----------------*- C++ -*-===//
//
// tosa element-wise ops broadcast operands of equal rank (extent-1
// dimensions); tosa.mul's shift and tosa.negate's zero points are in no
// factor. tosa.matmul is a batched contraction [N,H,C] x [N,C,W] with C a
// sum; reductions keep the reduced dimension at extent 1; tosa.transpose
// permutes factors. Partial sums flow through add/sub (jointly), mul and
// matmul (one operand; for integers only without a shift or zero point),
// select's values, negate, identity, transpose and reduce_sum.
//
//===----------------------------------------------------------------------===//
#include "RuleHelpers.h"
#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace distopt::dist;
using external::isZeroConstant;

static bool hasFloatElements(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

/// tosa allows unranked tensors; such ops keep everything replicated.
static bool allRanked(Operation *op) {
  auto ranked = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::all_of(op->getOperandTypes(), ranked) &&
         llvm::all_of(op->getResultTypes(), ranked);
}

namespace {

template <typename OpTy>
struct ElementwiseRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ElementwiseRuleModel<OpTy>,
                                                    OpTy> {
  OpShardingRule getShardingRule(Operation *op) const {
    if (auto mul = dyn_cast<tosa::MulOp>(op)) {
      OpShardingRule rule = external::broadcastRule(op, 2);
      if (hasFloatElements(mul.getOutput()) || isZeroConstant(mul.getShift()))
        rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
      return rule;
    }
    if (auto neg = dyn_cast<tosa::NegateOp>(op)) {
      OpShardingRule rule = external::broadcastRule(op, 1);
      if (isZeroConstant(neg.getInput1Zp()) &&
          isZeroConstant(neg.getOutputZp()))
        rule.setPartialFlow(PartialFlow::AllLinear, {0});
      return rule;
    }
    OpShardingRule rule = external::broadcastRule(op, op->getNumOperands());
    if (isa<tosa::AddOp, tosa::SubOp>(op))
      rule.setPartialFlow(PartialFlow::AllLinear, {0, 1});
    else if (isa<tosa::SelectOp>(op))
      rule.setPartialFlow(PartialFlow::AllLinear, {1, 2});
    else if (isa<tosa::IdentityOp>(op))
      rule.setPartialFlow(PartialFlow::AllLinear, {0});
    return rule;
  }
};

struct MatMulRuleModel
    : public ShardingRuleOpInterface::ExternalModel<MatMulRuleModel,
                                                    tosa::MatMulOp> {
  OpShardingRule getShardingRule(Operation *op) const {
    auto mm = cast<tosa::MatMulOp>(op);
    if (!allRanked(op))
      return OpShardingRule::allWhole(op);
    auto a = cast<RankedTensorType>(mm.getA().getType());
    auto b = cast<RankedTensorType>(mm.getB().getType());
    auto c = cast<RankedTensorType>(mm.getOutput().getType());
    OpShardingRule rule;
    int64_t n = rule.addFactor(c.getDimSize(0));
    int64_t h = rule.addFactor(c.getDimSize(1));
    int64_t w = rule.addFactor(c.getDimSize(2));
    int64_t k = rule.addFactor(a.getDimSize(2), FactorKind::Reduction);
    auto batch = [&](RankedTensorType t) -> SmallVector<int64_t, 2> {
      if (t.getDimSize(0) == 1 && c.getDimSize(0) != 1)
        return {};
      return {n};
    };
    rule.operands = {{batch(a), {h}, {k}},
                     {batch(b), {k}, {w}},
                     TensorFactors(1),
                     TensorFactors(1)};
    rule.results = {{{n}, {h}, {w}}};
    rule.linearOperands.assign(4, false);
    bool noZeroPoints =
        isZeroConstant(mm.getAZp()) && isZeroConstant(mm.getBZp());
    if (noZeroPoints)
      rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
    return rule;
  }
};

template <typename OpTy>
struct ReduceRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ReduceRuleModel<OpTy>,
                                                    OpTy> {
  OpShardingRule getShardingRule(Operation *op) const {
    auto reduce = cast<OpTy>(op);
    if (!allRanked(op))
      return OpShardingRule::allWhole(op);
    int64_t axis = reduce.getAxis();
    FactorKind kind = FactorKind::Whole;
    ReductionKind reduction = ReductionKind::Sum;
    if (isa<tosa::ReduceSumOp>(op)) {
      kind = FactorKind::Reduction;
    } else if (isa<tosa::ReduceMaxOp>(op)) {
      kind = FactorKind::Reduction;
      reduction = ReductionKind::Max;
    } else if (isa<tosa::ReduceMinOp>(op)) {
      kind = FactorKind::Reduction;
      reduction = ReductionKind::Min;
    }
    OpShardingRule rule;
    auto in = cast<RankedTensorType>(op->getOperand(0).getType());
    TensorFactors tin, tout;
    for (int64_t d = 0; d < in.getRank(); ++d) {
      bool reduced = d == axis;
      int64_t f = rule.addFactor(
          in.getDimSize(d), reduced ? kind : FactorKind::Parallel, reduction);
      tin.push_back({f});
      tout.push_back(reduced ? SmallVector<int64_t, 2>{}
                             : SmallVector<int64_t, 2>{f});
    }
    rule.operands = {tin};
    rule.results = {tout};
    rule.linearOperands.assign(1, false);
    if (isa<tosa::ReduceSumOp>(op))
      rule.setPartialFlow(PartialFlow::AllLinear, {0});
    return rule;
  }
};

struct TransposeRuleModel
    : public ShardingRuleOpInterface::ExternalModel<TransposeRuleModel,
                                                    tosa::TransposeOp> {
  OpShardingRule getShardingRule(Operation *op) const {
    auto transpose = cast<tosa::TransposeOp>(op);
    if (!allRanked(op))
      return OpShardingRule::allWhole(op);
    auto in = cast<RankedTensorType>(transpose.getInput1().getType());
    OpShardingRule rule;
    TensorFactors tin, tout;
    for (int64_t s : in.getShape())
      tin.push_back({rule.addFactor(s)});
    for (int32_t p : transpose.getPerms())
      tout.push_back(p >= 0 && p < in.getRank() ? tin[p]
                                                : SmallVector<int64_t, 2>{});
    rule.operands = {tin};
    rule.results = {tout};
    rule.setPartialFlow(PartialFlow::AllLinear, {0});
    return rule;
  }
};

struct ConstRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConstRuleModel,
                                                    tosa::ConstOp> {
  OpShardingRule getShardingRule(Operation *op) const {
    return external::constantRule(op, cast<tosa::ConstOp>(op).getValues());
  }

  LogicalResult partitionOp(Operation *op, PartitionContext &ctx, ValueRange,
                            ArrayRef<ShardingAttr>,
                            ArrayRef<ShardingAttr> resultShardings,
                            SmallVectorImpl<Value> &localResults) const {
    auto constant = cast<tosa::ConstOp>(op);
    FailureOr<TypedAttr> value = external::localConstantValue(
        op, ctx, constant.getValues(), resultShardings[0]);
    if (failed(value))
      return failure();
    localResults.push_back(tosa::ConstOp::create(ctx.builder, op->getLoc(),
                                                 value->getType(),
                                                 cast<ElementsAttr>(*value)));
    return success();
  }
};

template <typename OpTy> static void attachIfElementwise(MLIRContext *ctx) {
  if constexpr (OpTy::template hasTrait<
                    OpTrait::tosa::TosaElementwiseOperator>())
    OpTy::template attachInterface<ElementwiseRuleModel<OpTy>>(*ctx);
}

template <typename... OpTys> static void attachAll(MLIRContext *ctx) {
  (attachIfElementwise<OpTys>(ctx), ...);
}

} // namespace

void distopt::dist::registerTosaShardingRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tosa::TosaDialect *) {
    attachAll<
#define GET_OP_LIST
#include "mlir/Dialect/Tosa/IR/TosaOps.cpp.inc"
        >(ctx);
    tosa::MulOp::attachInterface<ElementwiseRuleModel<tosa::MulOp>>(*ctx);
    tosa::CastOp::attachInterface<ElementwiseRuleModel<tosa::CastOp>>(*ctx);
    tosa::IdentityOp::attachInterface<ElementwiseRuleModel<tosa::IdentityOp>>(
        *ctx);
    tosa::MatMulOp::attachInterface<MatMulRuleModel>(*ctx);
    tosa::ReduceSumOp::attachInterface<ReduceRuleModel<tosa::ReduceSumOp>>(
        *ctx);
    tosa::ReduceMaxOp::attachInterface<ReduceRuleModel<tosa::ReduceMaxOp>>(
        *ctx);
    tosa::ReduceMinOp::attachInterface<ReduceRuleModel<tosa::ReduceMinOp>>(
        *ctx);
    tosa::ReduceProductOp::attachInterface<
        ReduceRuleModel<tosa::ReduceProductOp>>(*ctx);
    tosa::ReduceAllOp::attachInterface<ReduceRuleModel<tosa::ReduceAllOp>>(
        *ctx);
    tosa::ReduceAnyOp::attachInterface<ReduceRuleModel<tosa::ReduceAnyOp>>(
        *ctx);
    tosa::TransposeOp::attachInterface<TransposeRuleModel>(*ctx);
    tosa::ConstOp::attachInterface<ConstRuleModel>(*ctx);
  });
}

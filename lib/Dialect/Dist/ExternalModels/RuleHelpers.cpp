//===- RuleHelpers.cpp - pieces shared by the external models ---*- C++ -*-===//
#include "RuleHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace distopt::dist;

static ArrayRef<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return t.getShape();
  return {};
}

OpShardingRule external::broadcastRule(Operation *op, unsigned numData) {
  OpShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  int64_t rank = out.size();
  SmallVector<int64_t> resultFactors;
  for (int64_t s : out)
    resultFactors.push_back(rule.addFactor(s));
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    ArrayRef<int64_t> shape = shapeOf(operand);
    TensorFactors tf(shape.size());
    int64_t lead = rank - static_cast<int64_t>(shape.size());
    if (i < numData && lead >= 0)
      for (int64_t d = 0, e = shape.size(); d < e; ++d)
        if (!(shape[d] == 1 && out[d + lead] != 1))
          tf[d].push_back(resultFactors[d + lead]);
    rule.operands.push_back(std::move(tf));
  }
  for (Value result : op->getResults()) {
    TensorFactors tf(shapeOf(result).size());
    for (int64_t d = 0, e = tf.size(); d < e && d < rank; ++d)
      tf[d].push_back(resultFactors[d]);
    rule.results.push_back(std::move(tf));
  }
  rule.linearOperands.assign(op->getNumOperands(), false);
  return rule;
}

static bool isZeroAttr(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValue().isZero();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getValue().isZero();
  if (auto splat = dyn_cast<SplatElementsAttr>(attr))
    return isZeroAttr(splat.getSplatValue<Attribute>());
  return false;
}

bool external::isZeroConstant(Value v) {
  Attribute attr;
  return matchPattern(v, m_Constant(&attr)) && isZeroAttr(attr);
}

OpShardingRule external::constantRule(Operation *op, Attribute value) {
  auto splat = dyn_cast<SplatElementsAttr>(value);
  OpShardingRule rule;
  for (Value operand : op->getOperands())
    rule.operands.push_back(TensorFactors(shapeOf(operand).size()));
  for (Value result : op->getResults()) {
    TensorFactors tf;
    for (int64_t s : shapeOf(result))
      tf.push_back({rule.addFactor(s, splat ? FactorKind::Parallel
                                            : FactorKind::Whole)});
    rule.results.push_back(std::move(tf));
  }
  rule.linearOperands.assign(op->getNumOperands(), false);
  return rule;
}

FailureOr<TypedAttr> external::localConstantValue(Operation *op,
                                                  PartitionContext &ctx,
                                                  Attribute value,
                                                  ShardingAttr sharding) {
  auto typed = dyn_cast<TypedAttr>(value);
  auto global = typed ? dyn_cast<RankedTensorType>(typed.getType()) : nullptr;
  if (!global) {
    if (!typed)
      return failure();
    return typed;
  }
  RankedTensorType local = ctx.localType(global, sharding);
  if (local == global)
    return typed;
  auto splat = dyn_cast<SplatElementsAttr>(value);
  if (!splat)
    return op->emitError("cannot partition a constant that is not a splat; "
                         "its users should slice it locally");
  if (!local.hasStaticShape())
    return op->emitError("the local shape of this constant depends on the "
                         "rank (an uneven split); partition for one rank "
                         "(dist-partition{rank=N})");
  return TypedAttr(splat.resizeSplat(local));
}

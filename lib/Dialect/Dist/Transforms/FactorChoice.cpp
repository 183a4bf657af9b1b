//===- FactorChoice.cpp - what one mesh axis does inside one op -*- C++ -*-===//
#include "FactorChoice.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace distopt::dist;
namespace cost = distopt::cost;

std::optional<OpShardingRule> distopt::dist::getRule(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getShardingRule();
  if (isa<AnnotateOp>(op)) {
    OpShardingRule rule = OpShardingRule::elementwise(op);
    rule.setPartialFlow(PartialFlow::AllLinear, {0});
    return rule;
  }
  return std::nullopt;
}

static const TensorFactors &tensorFactors(const OpShardingRule &rule,
                                          TensorRef t) {
  return t.isResult ? rule.results[t.index] : rule.operands[t.index];
}

/// Product of the sizes of the factors after the major one in a dimension
/// (what one unit of the major factor spans).
static int64_t minorExtent(const OpShardingRule &rule,
                           ArrayRef<int64_t> dimFactors) {
  int64_t n = 1;
  for (int64_t f : dimFactors.drop_front())
    n *= rule.factors[f].size;
  return n;
}

std::optional<Placement> distopt::dist::project(const OpShardingRule &rule,
                                                const AxisChoice &choice,
                                                TensorRef t, MLIRContext *ctx) {
  switch (choice.kind) {
  case AxisChoice::Kind::None:
    return Placement::replicate();
  case AxisChoice::Kind::PartialFlow: {
    if (t.isResult)
      return Placement::partial(ReductionKind::Sum);
    if (!rule.linearOperands[t.index])
      return Placement::replicate();
    if (rule.partialFlow == PartialFlow::AllLinear ||
        static_cast<int64_t>(t.index) == choice.partialOperand)
      return Placement::partial(ReductionKind::Sum);
    return Placement::replicate();
  }
  case AxisChoice::Kind::Factor: {
    const Factor &f = rule.factors[choice.factor];
    const TensorFactors &tf = tensorFactors(rule, t);
    int64_t major = OpShardingRule::dimWithMajorFactor(tf, choice.factor);
    if (major >= 0 && choice.sizes.empty())
      return Placement::shard(major);
    if (major >= 0) {
      if (!ctx)
        return std::nullopt;
      int64_t unit = minorExtent(rule, tf[major]);
      SmallVector<int64_t> sizes;
      for (int64_t s : choice.sizes)
        sizes.push_back(s * unit);
      return Placement::shard(major, DenseI64ArrayAttr::get(ctx, sizes));
    }
    if (OpShardingRule::dimContaining(tf, choice.factor) >= 0)
      return std::nullopt; // a minor factor of a merged dimension
    if (t.isResult && f.kind == FactorKind::Reduction)
      return Placement::partial(f.reduction);
    // A bias added after a sharded sum: each device adds its part of it.
    // (Max and min absorb a replicated addend: max(a, b) + c pieces agree.)
    if (!t.isResult && f.kind == FactorKind::Reduction &&
        rule.isAddend(t.index) &&
        (f.reduction == ReductionKind::Sum ||
         f.reduction == ReductionKind::Avg))
      return Placement::partial(ReductionKind::Sum);
    return Placement::replicate();
  }
  }
  return std::nullopt;
}

bool distopt::dist::isValidChoice(const OpShardingRule &rule,
                                  const AxisChoice &choice, int64_t axisSize) {
  if (choice.kind == AxisChoice::Kind::None)
    return true;
  if (choice.kind == AxisChoice::Kind::PartialFlow)
    return rule.partialFlow != PartialFlow::None;
  const Factor &f = rule.factors[choice.factor];
  if (f.kind == FactorKind::Whole || axisSize <= 1)
    return false;
  if (!choice.sizes.empty()) {
    // Explicit pieces: one per device, covering the factor exactly.
    int64_t sum = 0;
    for (int64_t s : choice.sizes)
      sum += s;
    if (static_cast<int64_t>(choice.sizes.size()) != axisSize ||
        (!ShapedType::isDynamic(f.size) && sum != f.size))
      return false;
    for (auto [i, tf] : llvm::enumerate(rule.operands))
      if (OpShardingRule::dimWithMajorFactor(tf, choice.factor) < 0 &&
          OpShardingRule::dimContaining(tf, choice.factor) >= 0)
        return false;
    for (auto [i, tf] : llvm::enumerate(rule.results))
      if (OpShardingRule::dimWithMajorFactor(tf, choice.factor) < 0 &&
          OpShardingRule::dimContaining(tf, choice.factor) >= 0)
        return false;
    return true;
  }
  if (f.size < axisSize)
    return false;
  auto checkTensors = [&](ArrayRef<TensorFactors> tensors, bool isResult) {
    for (auto [i, tf] : llvm::enumerate(tensors)) {
      if (!project(rule, choice, {isResult, static_cast<unsigned>(i)}))
        return false;
      // Splitting the major factor of a merged dimension matches splitting
      // the dimension only when the factor divides evenly.
      int64_t d = OpShardingRule::dimWithMajorFactor(tf, choice.factor);
      if (d >= 0 && tf[d].size() > 1 && f.size % axisSize != 0)
        return false;
    }
    return true;
  };
  return checkTensors(rule.operands, false) && checkTensors(rule.results, true);
}

std::optional<AxisChoice> distopt::dist::voteOf(const OpShardingRule &rule,
                                                TensorRef t, Placement p) {
  switch (p.kind) {
  case Placement::Kind::Open:
    return std::nullopt;
  case Placement::Kind::Replicate:
    return AxisChoice::none();
  case Placement::Kind::Shard: {
    const TensorFactors &tf = tensorFactors(rule, t);
    if (p.dim >= static_cast<int64_t>(tf.size()) || tf[p.dim].empty())
      return std::nullopt;
    if (!p.hasSizes())
      return AxisChoice::ofFactor(tf[p.dim].front());
    // Explicit pieces of the dimension, in units of its major factor: each
    // piece must hold whole units (heads, not parts of heads).
    int64_t unit = minorExtent(rule, tf[p.dim]);
    SmallVector<int64_t> sizes;
    for (int64_t s : p.sizes.asArrayRef()) {
      if (unit <= 0 || s % unit != 0)
        return std::nullopt;
      sizes.push_back(s / unit);
    }
    return AxisChoice::ofFactor(tf[p.dim].front(), sizes);
  }
  case Placement::Kind::Partial: {
    bool linearSum =
        p.reduction == ReductionKind::Sum || p.reduction == ReductionKind::Avg;
    if (t.isResult) {
      if (rule.partialFlow != PartialFlow::None && linearSum)
        return AxisChoice::partial(-1);
      for (auto [i, f] : llvm::enumerate(rule.factors))
        if (f.kind == FactorKind::Reduction && f.reduction == p.reduction)
          return AxisChoice::ofFactor(i);
      return std::nullopt;
    }
    if (rule.partialFlow != PartialFlow::None && linearSum &&
        rule.linearOperands[t.index])
      return AxisChoice::partial(t.index);
    return std::nullopt;
  }
  }
  return std::nullopt;
}

int64_t distopt::dist::elementBytes(Type elementType) {
  if (elementType.isIntOrFloat())
    return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
  return 4;
}

FailureOr<cost::MeshCost>
distopt::dist::meshCostFor(ModuleOp module, MeshOp mesh,
                           std::shared_ptr<const cost::MachineProfile> machine,
                           StringRef option) {
  if (!machine) {
    auto loaded = cost::loadSharedMachineProfile(option);
    if (!loaded)
      return module.emitError("machine=")
             << option << ": " << llvm::toString(loaded.takeError());
    machine = std::move(*loaded);
  }
  SmallVector<std::string> names;
  for (int64_t a = 0; a < mesh.getNumAxes(); ++a)
    names.push_back(mesh.getAxisName(a).str());
  return cost::MeshCost(std::move(machine), names, mesh.getAxisSizes());
}

FailureOr<MeshOp> distopt::dist::getModuleMesh(ModuleOp module) {
  MeshOp found;
  for (auto mesh : module.getOps<MeshOp>()) {
    if (found)
      return module.emitError("the module declares several meshes (@")
             << found.getSymName() << ", @" << mesh.getSymName()
             << "); the sharding passes work on one mesh";
    found = mesh;
  }
  if (!found)
    return module.emitError("the module declares no dist.mesh; add one (or "
                            "pass --mesh) before the sharding passes");
  return found;
}

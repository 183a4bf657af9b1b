//===- InsertReshards.cpp - dist-insert-reshards ----------------*- C++ -*-===//
//
// Each op computes with one choice per mesh axis, read off its result
// shardings; operands whose sharding does not match what that choice needs get
// a dist.reshard that says why. Annotations become reshards to the annotated
// sharding; partial values are reduced before they leave a function.
//
//===----------------------------------------------------------------------===//
#include "FactorChoice.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace distopt::dist {
#define GEN_PASS_DEF_DISTINSERTRESHARDS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace distopt::dist

using namespace mlir;
using namespace distopt::dist;

namespace {

class ReshardInserter {
public:
  ReshardInserter(MeshOp mesh)
      : meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        numAxes(mesh.getNumAxes()), meshSizes(mesh.getAxisSizes()),
        replicated(
            ShardingAttr::getReplicated(mesh.getContext(), meshRef, numAxes)) {}

  LogicalResult run(FunctionOpInterface func);

private:
  ShardingAttr shardingOf(Value v) { return getValueSharding(v, replicated); }
  LogicalResult handleOp(Operation *op);
  /// A sum of operands partial in the same way whose result is wanted in
  /// another layout: adds the partial values and reshards once.
  bool reduceAfterSum(Operation *op, const OpShardingRule &rule);
  LogicalResult handleAnnotate(AnnotateOp op);
  LogicalResult handleReturn(Operation *ret, FunctionOpInterface func);
  /// Makes operand `idx` of `user` have `required`, inserting a reshard.
  void require(Operation *user, unsigned idx, ShardingAttr required,
               StringRef why);
  FailureOr<SmallVector<AxisChoice>> choicesOf(Operation *op,
                                               const OpShardingRule &rule);

  FlatSymbolRefAttr meshRef;
  int64_t numAxes;
  SmallVector<int64_t> meshSizes;
  /// Reshards made so far, by (value, target): later users in the same
  /// block share one (a value read by several ops is moved once, as
  /// Megatron all-reduces a block's output once for all its readers).
  DenseMap<std::pair<Value, Attribute>, ReshardOp> made;
  ShardingAttr replicated;
};

} // namespace

void ReshardInserter::require(Operation *user, unsigned idx,
                              ShardingAttr required, StringRef why) {
  Value v = user->getOperand(idx);
  ShardingAttr actual = shardingOf(v);
  auto norm = [&](ShardingAttr s) {
    SmallVector<Placement> ps;
    for (const Placement &p : s.getPlacements())
      ps.push_back(p.isOpen() ? Placement::replicate() : p);
    return ShardingAttr::get(s.getContext(), s.getMesh(), ps);
  };
  actual = norm(actual);
  required = norm(required);
  if (actual == required)
    return;
  if (ReshardOp earlier = made.lookup({v, required});
      earlier && earlier->getBlock() == user->getBlock() &&
      earlier->isBeforeInBlock(user)) {
    user->setOperand(idx, earlier.getResult());
    return;
  }
  std::string reason;
  llvm::raw_string_ostream os(reason);
  os << why << ": " << describeOp(user) << " needs operand " << idx << " as "
     << placementsStr(required) << " but it is " << placementsStr(actual);
  StringRef cause = getValueCause(v);
  if (!cause.empty())
    os << " (" << cause << ")";
  OpBuilder b(user);
  auto reshard =
      ReshardOp::create(b, user->getLoc(), v.getType(), v, actual, required,
                        b.getStringAttr(reason), TypeAttr());
  setValueSharding(reshard.getResult(), required);
  user->setOperand(idx, reshard.getResult());
  made[{v, required}] = reshard;
}

FailureOr<SmallVector<AxisChoice>>
ReshardInserter::choicesOf(Operation *op, const OpShardingRule &rule) {
  SmallVector<AxisChoice> choices(numAxes, AxisChoice::none());
  for (int64_t axis = 0; axis < numAxes; ++axis) {
    std::optional<AxisChoice> choice;
    for (auto [ri, res] : llvm::enumerate(op->getResults())) {
      if (!isa<RankedTensorType>(res.getType()))
        continue;
      Placement p = shardingOf(res).getPlacements()[axis];
      TensorRef ref{true, static_cast<unsigned>(ri)};
      std::optional<AxisChoice> vote = voteOf(rule, ref, p);
      if (!vote)
        continue; // the op cannot produce it: the result is resharded after
      // A partial result can come from a sharded reduction factor or from a
      // partial operand flowing through: take the one the operands match.
      if (p.isPartial()) {
        SmallVector<AxisChoice> options;
        for (auto [fi, f] : llvm::enumerate(rule.factors))
          if (f.kind == FactorKind::Reduction && f.reduction == p.reduction)
            options.push_back(AxisChoice::ofFactor(fi));
        // A reduction split into explicit pieces: the operands say how.
        for (unsigned oi = 0; oi < op->getNumOperands(); ++oi) {
          if (!isa<RankedTensorType>(op->getOperand(oi).getType()))
            continue;
          Placement have = shardingOf(op->getOperand(oi)).getPlacements()[axis];
          std::optional<AxisChoice> v = voteOf(rule, {false, oi}, have);
          if (v && !v->sizes.empty() &&
              rule.factors[v->factor].kind == FactorKind::Reduction &&
              rule.factors[v->factor].reduction == p.reduction)
            options.push_back(*v);
        }
        if (rule.partialFlow != PartialFlow::None)
          for (unsigned oi = 0; oi < op->getNumOperands(); ++oi)
            if (rule.linearOperands[oi])
              options.push_back(AxisChoice::partial(oi));
        int64_t bestMismatch = -1;
        for (AxisChoice c : options) {
          int64_t mismatch = 0;
          for (unsigned oi = 0; oi < op->getNumOperands(); ++oi) {
            if (!isa<RankedTensorType>(op->getOperand(oi).getType()))
              continue;
            std::optional<Placement> want =
                project(rule, c, {false, oi}, op->getContext());
            Placement have =
                shardingOf(op->getOperand(oi)).getPlacements()[axis];
            if (!want ||
                *want != (have.isOpen() ? Placement::replicate() : have))
              ++mismatch;
          }
          if (bestMismatch < 0 || mismatch < bestMismatch) {
            bestMismatch = mismatch;
            vote = c;
          }
        }
      }
      if (!choice && isValidChoice(rule, *vote, meshSizes[axis]))
        choice = vote;
    }
    if (choice)
      choices[axis] = *choice;
  }
  // Several axes splitting one factor must divide it evenly wherever the
  // factor shares a dimension with others (a reshape's merged dimension);
  // otherwise the pieces on both sides differ. Drop inner axes until they do.
  for (int64_t f = 0, e = rule.factors.size(); f < e; ++f) {
    auto fits = [&]() {
      int64_t parts = 1;
      for (int64_t a = 0; a < numAxes; ++a)
        if (choices[a].kind == AxisChoice::Kind::Factor &&
            choices[a].factor == f) {
          if (!choices[a].sizes.empty())
            return true; // explicit pieces are whole units of the factor
          parts *= meshSizes[a];
        }
      if (rule.factors[f].size % parts == 0)
        return true;
      for (ArrayRef<TensorFactors> tensors :
           {ArrayRef<TensorFactors>(rule.operands),
            ArrayRef<TensorFactors>(rule.results)})
        for (const TensorFactors &tf : tensors) {
          int64_t d = OpShardingRule::dimWithMajorFactor(tf, f);
          if (d >= 0 && tf[d].size() > 1)
            return false;
        }
      return true;
    };
    for (int64_t a = numAxes - 1; a >= 0 && !fits(); --a)
      if (choices[a].kind == AxisChoice::Kind::Factor && choices[a].factor == f)
        choices[a] = AxisChoice::none();
  }
  return choices;
}

/// The sum of values partial over the same axes and wanted reduced (a tied
/// weight's two gradient contributions under ZeRO, asked for split by the
/// gradient's layout): summing first and reducing the sum sends one
/// reduction instead of one per operand (reductions are linear).
bool ReshardInserter::reduceAfterSum(Operation *op,
                                     const OpShardingRule &rule) {
  if (rule.partialFlow != PartialFlow::AllLinear || op->getNumResults() != 1 ||
      op->getNumOperands() < 2)
    return false;
  Value res = op->getResult(0);
  ShardingAttr partial = shardingOf(op->getOperand(0));
  bool anyPartial = false;
  for (const Placement &p : partial.getPlacements()) {
    if (p.isPartial() && p.reduction != ReductionKind::Sum)
      return false;
    anyPartial = anyPartial || p.isPartial();
  }
  if (!anyPartial)
    return false;
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (i >= rule.linearOperands.size() || !rule.linearOperands[i] ||
        v.getType() != res.getType() || shardingOf(v) != partial)
      return false;
  ShardingAttr wanted = shardingOf(res);
  if (wanted == partial)
    return false;
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  std::string reason;
  llvm::raw_string_ostream os(reason);
  os << "sum of partial values: " << describeOp(op) << " adds "
     << op->getNumOperands() << " operands that are " << placementsStr(partial)
     << " and its users want " << placementsStr(wanted)
     << "; reduced once after the sum";
  auto reshard = ReshardOp::create(b, op->getLoc(), res.getType(), res, partial,
                                   wanted, b.getStringAttr(reason), TypeAttr());
  res.replaceAllUsesExcept(reshard.getResult(), reshard);
  setValueSharding(reshard.getResult(), wanted);
  setValueSharding(res, partial);
  return true;
}

LogicalResult ReshardInserter::handleOp(Operation *op) {
  std::optional<OpShardingRule> rule = getRule(op);
  if (rule && reduceAfterSum(op, *rule))
    return success();
  if (!rule) {
    // Ops the sharding passes do not know run on replicated data.
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (isa<RankedTensorType>(op->getOperand(i).getType()))
        require(op, i, replicated, "op without a sharding rule");
    return success();
  }
  FailureOr<SmallVector<AxisChoice>> choices = choicesOf(op, *rule);
  if (failed(choices))
    return failure();
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto type = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!type)
      continue;
    SmallVector<Placement> placements;
    for (int64_t axis = 0; axis < numAxes; ++axis) {
      std::optional<Placement> p =
          project(*rule, (*choices)[axis], {false, i}, op->getContext());
      if (!p)
        return op->emitError("internal: operand ")
               << i << " cannot take the op's choice on mesh axis " << axis;
      placements.push_back(*p);
    }
    require(op, i, ShardingAttr::get(op->getContext(), meshRef, placements),
            "operand layout");
  }
  // Results the op cannot produce as wanted (a user asked for a split of a
  // softmax axis, say) are produced as the op can and resharded after it.
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Value res = op->getResult(i);
    if (!isa<RankedTensorType>(res.getType()))
      continue;
    SmallVector<Placement> produced;
    for (int64_t axis = 0; axis < numAxes; ++axis)
      produced.push_back(
          project(*rule, (*choices)[axis], {true, i}, op->getContext())
              .value_or(Placement::replicate()));
    ShardingAttr wanted = shardingOf(res);
    ShardingAttr made = ShardingAttr::get(op->getContext(), meshRef, produced);
    if (made == wanted)
      continue;
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "result layout: " << describeOp(op) << " produces result " << i
       << " as " << placementsStr(made) << " but its users want "
       << placementsStr(wanted);
    auto reshard =
        ReshardOp::create(b, op->getLoc(), res.getType(), res, made, wanted,
                          b.getStringAttr(reason), TypeAttr());
    res.replaceAllUsesExcept(reshard.getResult(), reshard);
    setValueSharding(reshard.getResult(), wanted);
    setValueSharding(res, made);
  }
  return success();
}

LogicalResult ReshardInserter::handleAnnotate(AnnotateOp op) {
  ShardingAttr target = shardingOf(op.getResult());
  std::string why = op.getSource()
                        ? ("annotation '" + op.getSource()->str() + "'")
                        : std::string("annotation");
  require(op, 0, target, why);
  op.getResult().replaceAllUsesWith(op.getInput());
  op.erase();
  return success();
}

LogicalResult ReshardInserter::handleReturn(Operation *ret,
                                            FunctionOpInterface func) {
  SmallVector<Attribute> resultShardings(func.getNumResults());
  for (unsigned i = 0; i < ret->getNumOperands(); ++i) {
    if (!isa<RankedTensorType>(ret->getOperand(i).getType()))
      continue;
    ShardingAttr wanted;
    if (i < func.getNumResults())
      wanted = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
    if (!wanted) {
      // Keep shards as they are; reduce partial values.
      SmallVector<Placement> ps;
      for (const Placement &p : shardingOf(ret->getOperand(i)).getPlacements())
        ps.push_back(p.isPartial() || p.isOpen() ? Placement::replicate() : p);
      wanted = ShardingAttr::get(ret->getContext(), meshRef, ps);
    }
    require(ret, i, wanted, "function result");
    if (i < func.getNumResults())
      resultShardings[i] = wanted;
  }
  setResultAttrs(func, kShardingAttr, resultShardings);
  return success();
}

LogicalResult ReshardInserter::run(FunctionOpInterface func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    LogicalResult r = success();
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      r = handleAnnotate(annotate);
    else if (op->hasTrait<OpTrait::IsTerminator>() &&
             op->getParentOp() == func.getOperation())
      r = handleReturn(op, func);
    else if (op->getNumOperands() && loopResultOf(op->getOpOperand(0)))
      // A loop's body yields each value laid out as the loop's sum is.
      for (OpOperand &use : op->getOpOperands())
        require(op, use.getOperandNumber(), shardingOf(loopResultOf(use)),
                "sum over microbatches");
    else if (!isa<ReshardOp>(op))
      r = handleOp(op);
    if (failed(r))
      return failure();
  }
  return success();
}

namespace {
struct InsertReshardsPass
    : public distopt::dist::impl::DistInsertReshardsBase<InsertReshardsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.getOps<MeshOp>().empty())
      return;
    FailureOr<MeshOp> mesh = getModuleMesh(module);
    if (failed(mesh))
      return signalPassFailure();
    for (auto func : module.getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      ReshardInserter inserter(*mesh);
      if (failed(inserter.run(func)))
        return signalPassFailure();
    }
  }
};
} // namespace

//===- LinalgShardingRules.cpp - rules of linalg structured ops -*- C++ -*-===//
//
// One rule for every op implementing linalg::LinalgOp, read off the op:
//
// - one factor per loop; an operand dimension indexed by a bare loop `dI`
//   is made of that loop's factor, one indexed by a constant (a broadcast)
//   of none;
// - a loop used in any other way (a convolution's `d1 + d4`, a loop repeated
//   in one map, `linalg.index` in the payload) is whole: a device holding a
//   piece of the loop would compute with the wrong neighbours or indices;
// - reduction loops are reduction factors whose kind comes from the
//   payload's combiner (`addf`/`addi` sum, `maximumf`/`maxsi`... max,
//   `minimumf`/`minsi`... min). Splitting a sum leaves each device
//   `init + its partial sum`, so a sum may be split only when every init is
//   a zero (a `linalg.fill` of 0 or a zero constant); max and min do not
//   care, `max(init, max over pieces)` is the whole answer. Any other
//   reduction is whole;
// - partial sums flow through the op when its payload is linear in some
//   operands jointly (`a + b`, a copy, a sum reduction: AllLinear) or
//   multilinear (`a * b`, a contraction: OneLinear), as found by a small
//   analysis of the payload; a zero init counts as zero.
//
// Inits share their result's factors. The local op is the same op on local
// operands (the default partitioning).
//
//===----------------------------------------------------------------------===//
#include "RuleHelpers.h"
#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"

#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace distopt::dist;
using distopt::dist::external::isZeroConstant;

namespace {

//===----------------------------------------------------------------------===//
// Payload analysis: how the yielded values depend on the operands
//===----------------------------------------------------------------------===//

/// What a scalar in the payload is, as far as partial sums care.
struct Linearity {
  enum Kind : uint8_t {
    Zero,      // always zero
    Constant,  // independent of every tensor operand
    Linear,    // a linear function of `operands` jointly (a + b, 2 * a)
    Multi,     // linear in each of `operands` separately (a * b)
    Nonlinear, // anything else
  };
  Kind kind = Nonlinear;
  SmallVector<unsigned, 2> operands; // sorted, unique

  static Linearity of(Kind k) { return {k, {}}; }
  static Linearity linear(unsigned operand) { return {Linear, {operand}}; }
  bool isConst() const { return kind == Zero || kind == Constant; }
  bool operator==(const Linearity &o) const {
    return kind == o.kind && operands == o.operands;
  }
};

static SmallVector<unsigned, 2> unite(ArrayRef<unsigned> a,
                                      ArrayRef<unsigned> b) {
  SmallVector<unsigned, 2> out(a);
  llvm::append_range(out, b);
  llvm::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

static bool disjoint(ArrayRef<unsigned> a, ArrayRef<unsigned> b) {
  return llvm::none_of(a, [&](unsigned x) { return llvm::is_contained(b, x); });
}

static Linearity addLinearity(const Linearity &a, const Linearity &b) {
  if (a.kind == Linearity::Zero)
    return b;
  if (b.kind == Linearity::Zero)
    return a;
  if (a.isConst() && b.isConst())
    return Linearity::of(Linearity::Constant);
  if (a.kind == Linearity::Linear && b.kind == Linearity::Linear)
    return {Linearity::Linear, unite(a.operands, b.operands)};
  // An affine term (x + 1) or a sum of products: partial sums do not pass.
  return Linearity::of(Linearity::Nonlinear);
}

static Linearity mulLinearity(const Linearity &a, const Linearity &b) {
  if (a.kind == Linearity::Zero || b.kind == Linearity::Zero)
    return Linearity::of(Linearity::Zero);
  if (a.isConst() && b.isConst())
    return Linearity::of(Linearity::Constant);
  if (a.isConst())
    return b;
  if (b.isConst())
    return a;
  // A product of factors that each depend on one operand, all different.
  auto single = [](const Linearity &l) {
    return (l.kind == Linearity::Linear && l.operands.size() == 1) ||
           l.kind == Linearity::Multi;
  };
  if (single(a) && single(b) && disjoint(a.operands, b.operands))
    return {Linearity::Multi, unite(a.operands, b.operands)};
  return Linearity::of(Linearity::Nonlinear);
}

class PayloadAnalysis {
public:
  /// `zeroInits[i]`: init `i` holds zeros, so its block argument is zero.
  PayloadAnalysis(linalg::LinalgOp op, ArrayRef<bool> zeroInits) {
    Block *block = op.getBlock();
    int64_t numInputs = op.getNumDpsInputs();
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned n = operand.getOperandNumber();
      if (n >= block->getNumArguments())
        continue; // linalg.map has no block argument for its init
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (!isa<RankedTensorType>(operand.get().getType())) {
        values[arg] = Linearity::of(Linearity::Constant);
        continue;
      }
      int64_t init = static_cast<int64_t>(n) - numInputs;
      if (init >= 0 && zeroInits[init])
        values[arg] = Linearity::of(Linearity::Zero);
      else
        values[arg] = Linearity::linear(n);
    }
    for (Operation &inner : block->without_terminator())
      visit(&inner);
  }

  Linearity of(Value v) const {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    // Defined outside the payload: a constant of the loop nest.
    return Linearity::of(isZeroConstant(v) ? Linearity::Zero
                                           : Linearity::Constant);
  }

private:
  void visit(Operation *op) {
    auto operand = [&](unsigned i) { return of(op->getOperand(i)); };
    Linearity result = Linearity::of(Linearity::Nonlinear);
    if (isa<arith::ConstantOp>(op)) {
      result =
          Linearity::of(isZeroConstant(op->getResult(0)) ? Linearity::Zero
                                                         : Linearity::Constant);
    } else if (isa<linalg::IndexOp>(op)) {
      result = Linearity::of(Linearity::Constant);
    } else if (isa<arith::AddFOp, arith::AddIOp, arith::SubFOp, arith::SubIOp>(
                   op)) {
      result = addLinearity(operand(0), operand(1));
    } else if (isa<arith::MulFOp, arith::MulIOp>(op)) {
      result = mulLinearity(operand(0), operand(1));
    } else if (isa<arith::DivFOp>(op)) {
      Linearity num = operand(0), den = operand(1);
      if (den.kind == Linearity::Constant)
        result = num;
      else if (num.isConst() && den.isConst())
        result = Linearity::of(Linearity::Constant);
    } else if (isa<arith::NegFOp, arith::ExtFOp>(op)) {
      // Negation and exact widening keep sums sums.
      result = operand(0);
    } else if (llvm::all_of(op->getOperands(),
                            [&](Value v) { return of(v).isConst(); })) {
      result = Linearity::of(Linearity::Constant);
    }
    for (Value r : op->getResults())
      values[r] = result;
  }

  llvm::SmallDenseMap<Value, Linearity, 8> values;
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// True if `v` (in `block`) is computed without reading `arg`.
static bool independentOf(Value v, BlockArgument arg, Block *block) {
  SmallVector<Value> work{v};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (cur == arg)
      return false;
    Operation *def = cur.getDefiningOp();
    if (!def || def->getBlock() != block || !seen.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return true;
}

/// The reduction the payload performs into init `init`:
/// `yield combine(acc, f(inputs))` with `acc` the init's block argument.
static std::optional<ReductionKind> combinerOf(linalg::LinalgOp op,
                                               OpOperand &init) {
  Block *block = op.getBlock();
  if (init.getOperandNumber() >= block->getNumArguments())
    return std::nullopt;
  BlockArgument acc = op.getMatchingBlockArgument(&init);
  if (!acc.hasOneUse())
    return std::nullopt;
  Operation *yield = block->getTerminator();
  unsigned resultIdx = init.getOperandNumber() - op.getNumDpsInputs();
  if (resultIdx >= yield->getNumOperands())
    return std::nullopt;
  Operation *combiner = yield->getOperand(resultIdx).getDefiningOp();
  if (!combiner || combiner->getBlock() != block ||
      combiner->getNumOperands() != 2 || combiner != *acc.user_begin())
    return std::nullopt;
  Value other = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                               : combiner->getOperand(0);
  if (!independentOf(other, acc, block))
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(combiner))
    return ReductionKind::Sum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combiner))
    return ReductionKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combiner))
    return ReductionKind::Min;
  return std::nullopt;
}

/// An init whose contents are the identity of a sum: all zeros.
static bool isZeroInit(Value init) {
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return isZeroConstant(fill.getInputs()[0]);
  return isZeroConstant(init);
}

//===----------------------------------------------------------------------===//
// The rule
//===----------------------------------------------------------------------===//

static SmallVector<int64_t> loopSizes(linalg::LinalgOp op,
                                      ArrayRef<AffineMap> maps) {
  SmallVector<int64_t> sizes(op.getNumLoops(), ShapedType::kDynamic);
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type || !type.hasRank())
      continue;
    AffineMap map = maps[operand.getOperandNumber()];
    for (auto [d, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || type.isDynamicDim(d))
        continue;
      sizes[dim.getPosition()] = type.getDimSize(d);
    }
  }
  return sizes;
}

static OpShardingRule linalgRule(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return OpShardingRule::allWhole(op); // buffers are not distributed

  // Named ops build their maps on request: read them once.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned numLoops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> sizes = loopSizes(op, maps);
  SmallVector<bool> whole(numLoops, false);

  // Loops used other than as a bare index of a dimension.
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = maps[operand.getOperandNumber()];
    SmallVector<unsigned> bare;
    for (AffineExpr expr : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        if (llvm::is_contained(bare, dim.getPosition()))
          whole[dim.getPosition()] = true;
        bare.push_back(dim.getPosition());
        continue;
      }
      if (isa<AffineConstantExpr>(expr))
        continue;
      expr.walk([&](AffineExpr e) {
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          whole[dim.getPosition()] = true;
      });
    }
  }
  op.getBlock()->walk([&](linalg::IndexOp index) {
    if (index.getDim() < numLoops)
      whole[index.getDim()] = true;
  });

  // What the reduction loops reduce with, and whether they may be split.
  bool hasReduction = llvm::any_of(iterators, [](utils::IteratorType t) {
    return t == utils::IteratorType::reduction;
  });
  std::optional<ReductionKind> reduction;
  bool splittable = hasReduction;
  SmallVector<OpOperand *> inits;
  for (OpOperand &init : op.getDpsInitsMutable())
    inits.push_back(&init);
  SmallVector<bool> zeroInits;
  for (OpOperand *init : inits)
    zeroInits.push_back(isZeroInit(init->get()));
  if (hasReduction) {
    for (auto [i, init] : llvm::enumerate(inits)) {
      std::optional<ReductionKind> kind = combinerOf(op, *init);
      if (!kind || (reduction && *kind != *reduction) ||
          (*kind == ReductionKind::Sum && !zeroInits[i])) {
        splittable = false;
        break;
      }
      reduction = kind;
    }
    if (!reduction)
      splittable = false;
    // A reduction loop that indexes an init cannot be split either.
    for (OpOperand *init : inits)
      for (AffineExpr expr : maps[init->getOperandNumber()].getResults())
        expr.walk([&](AffineExpr e) {
          if (auto dim = dyn_cast<AffineDimExpr>(e))
            if (iterators[dim.getPosition()] == utils::IteratorType::reduction)
              whole[dim.getPosition()] = true;
        });
  }

  OpShardingRule rule;
  for (unsigned l = 0; l < numLoops; ++l) {
    FactorKind kind = FactorKind::Parallel;
    if (iterators[l] == utils::IteratorType::reduction)
      kind = splittable ? FactorKind::Reduction : FactorKind::Whole;
    if (whole[l])
      kind = FactorKind::Whole;
    rule.addFactor(sizes[l], kind, reduction.value_or(ReductionKind::Sum));
  }
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type) {
      rule.operands.push_back({});
      continue;
    }
    TensorFactors tf;
    AffineMap map = maps[operand.getOperandNumber()];
    for (auto [d, expr] : llvm::enumerate(map.getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        tf.push_back({static_cast<int64_t>(dim.getPosition())});
      else if (isa<AffineConstantExpr>(expr))
        tf.push_back({});
      else // a window: its own whole factor of the dimension's extent
        tf.push_back({rule.addFactor(type.getDimSize(d), FactorKind::Whole)});
    }
    rule.operands.push_back(std::move(tf));
  }
  // Result i is init i's tensor.
  for (OpOperand *init : inits)
    rule.results.push_back(rule.operands[init->getOperandNumber()]);

  // Partial flow: every yielded value must be linear in the same operands.
  PayloadAnalysis payload(op, zeroInits);
  std::optional<Linearity> flow;
  Operation *yield = op.getBlock()->getTerminator();
  for (Value v : yield->getOperands()) {
    Linearity l = payload.of(v);
    if (flow && !(*flow == l)) {
      flow = Linearity::of(Linearity::Nonlinear);
      break;
    }
    flow = l;
  }
  rule.linearOperands.assign(op->getNumOperands(), false);
  if (flow && flow->kind == Linearity::Linear)
    rule.setPartialFlow(PartialFlow::AllLinear, flow->operands);
  else if (flow && flow->kind == Linearity::Multi)
    rule.setPartialFlow(PartialFlow::OneLinear, flow->operands);
  return rule;
}

template <typename OpTy>
struct LinalgRuleModel
    : public ShardingRuleOpInterface::ExternalModel<LinalgRuleModel<OpTy>,
                                                    OpTy> {
  OpShardingRule getShardingRule(Operation *op) const {
    return linalgRule(cast<linalg::LinalgOp>(op));
  }
};

template <typename OpTy> static void attachIfStructured(MLIRContext *ctx) {
  if constexpr (OpTy::template hasTrait<linalg::LinalgOp::Trait>())
    OpTy::template attachInterface<LinalgRuleModel<OpTy>>(*ctx);
}

template <typename... OpTys> static void attachAll(MLIRContext *ctx) {
  (attachIfStructured<OpTys>(ctx), ...);
}

} // namespace

void distopt::dist::registerLinalgShardingRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attachAll<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(ctx);
  });
}

//===- NNShardingRules.cpp - factor rules and local forms of nn ops -*- C++
//-*-===//
//
// Each nn op describes itself to the sharding passes (see ShardingRule.h).
// Most ops partition by cloning on local pieces; the few whose local form
// differs (a sharded constant, a slice of a full dimension, a mean over a
// sharded dimension, an embedding lookup into a sharded table) say how here.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/Roll.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/MathExtras.h"

#include <map>

using namespace mlir;
using namespace distopt;
using namespace distopt::nn;
using dist::FactorKind;
using dist::OpShardingRule;
using dist::PartialFlow;
using dist::ShardingAttr;
using dist::TensorFactors;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// One fresh factor per dimension of `v`.
static TensorFactors freshFactors(OpShardingRule &rule, Value v,
                                  FactorKind kind = FactorKind::Parallel) {
  TensorFactors tf;
  for (int64_t s : shapeOf(v))
    tf.push_back({rule.addFactor(s, kind)});
  return tf;
}

static OpShardingRule elementwise(Operation *op, PartialFlow flow,
                                  ArrayRef<unsigned> linear) {
  OpShardingRule rule = OpShardingRule::elementwise(op);
  rule.setPartialFlow(flow, linear);
  return rule;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

/// A source: one free factor per dimension of its result.
static OpShardingRule sourceRule(Value result) {
  OpShardingRule rule;
  rule.results.push_back(freshFactors(rule, result));
  return rule;
}

OpShardingRule WeightOp::getShardingRule() { return sourceRule(getResult()); }

OpShardingRule ConstantOp::getShardingRule() { return sourceRule(getResult()); }

LogicalResult ConstantOp::partitionOp(dist::PartitionContext &ctx, ValueRange,
                                      ArrayRef<ShardingAttr>,
                                      ArrayRef<ShardingAttr> resultShardings,
                                      SmallVectorImpl<Value> &localResults) {
  auto global = cast<RankedTensorType>(getResult().getType());
  ShardingAttr sharding = resultShardings[0];
  RankedTensorType local = ctx.localType(global, sharding);
  auto dense = dyn_cast<DenseElementsAttr>(getValue());
  if (local == global) {
    localResults.push_back(
        ConstantOp::create(ctx.builder, getLoc(), global, getValue()));
    return success();
  }
  if (dense && dense.isSplat() && local.hasStaticShape()) {
    localResults.push_back(ConstantOp::create(ctx.builder, getLoc(), local,
                                              dense.resizeSplat(local)));
    return success();
  }
  if (dense && ctx.coords) {
    // Copy out this rank's block of elements.
    SmallVector<int64_t> offsets;
    for (int64_t d = 0; d < global.getRank(); ++d)
      offsets.push_back(*ctx.pieceOffset(getLoc(), global, sharding, d));
    ArrayRef<int64_t> gShape = global.getShape(), lShape = local.getShape();
    int64_t n = local.getNumElements();
    // The local elements in order, a run of the innermost dimension at a
    // time (contiguous in both tensors): the flat global index of each
    // run's first element.
    auto forEachRun = [&](auto pick) {
      int64_t last = local.getRank() - 1, run = lShape[last];
      SmallVector<int64_t> idx(local.getRank(), 0);
      for (int64_t i = 0; run > 0 && i < n; i += run) {
        int64_t flat = 0;
        for (int64_t d = 0; d <= last; ++d)
          flat = flat * gShape[d] + offsets[d] + idx[d];
        pick(flat, run);
        for (int64_t d = last - 1; d >= 0; --d) {
          if (++idx[d] < lShape[d])
            break;
          idx[d] = 0;
        }
      }
    };
    Type element = global.getElementType();
    if (!dense.isSplat() && element.isIntOrFloat() &&
        element.getIntOrFloatBitWidth() % 8 == 0) {
      // Whole bytes per element: copy the raw bytes (an Attribute per
      // element is slow for masks and tables of a million elements).
      int64_t width = element.getIntOrFloatBitWidth() / 8;
      ArrayRef<char> raw = dense.getRawData();
      std::vector<char> picked;
      picked.reserve(n * width);
      forEachRun([&](int64_t flat, int64_t run) {
        picked.insert(picked.end(), raw.begin() + flat * width,
                      raw.begin() + (flat + run) * width);
      });
      localResults.push_back(ConstantOp::create(
          ctx.builder, getLoc(), local,
          DenseElementsAttr::getFromRawBuffer(local, picked)));
      return success();
    }
    SmallVector<Attribute> values(dense.getValues<Attribute>());
    SmallVector<Attribute> picked;
    forEachRun([&](int64_t flat, int64_t run) {
      picked.append(values.begin() + flat, values.begin() + flat + run);
    });
    localResults.push_back(ConstantOp::create(
        ctx.builder, getLoc(), local, DenseElementsAttr::get(local, picked)));
    return success();
  }
  // The SPMD program: the whole constant, then each device keeps its piece.
  Value v = ConstantOp::create(ctx.builder, getLoc(), global, getValue());
  auto meshRef = FlatSymbolRefAttr::get(ctx.mesh.getSymNameAttr());
  SmallVector<dist::Placement> done(sharding.getPlacements().size(),
                                    dist::Placement::replicate());
  for (auto [axis, p] : llvm::enumerate(sharding.getPlacements())) {
    if (!p.isShard())
      continue;
    done[axis] = p;
    auto partial = ShardingAttr::get(getContext(), meshRef, done);
    v = dist::LocalSliceOp::create(
        ctx.builder, getLoc(), ctx.localType(global, partial), v, meshRef,
        ctx.builder.getStrArrayAttr({ctx.mesh.getAxisName(axis)}),
        ctx.builder.getI64IntegerAttr(p.dim), DenseI64ArrayAttr());
  }
  localResults.push_back(v);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define RULE(OP, FLOW, ...)                                                    \
  OpShardingRule OP::getShardingRule() {                                       \
    return elementwise(getOperation(), PartialFlow::FLOW, {__VA_ARGS__});      \
  }
RULE(AddOp, AllLinear, 0, 1)
RULE(SubOp, AllLinear, 0, 1)
RULE(MulOp, OneLinear, 0, 1)
RULE(DivOp, OneLinear, 0)
RULE(PowOp, None)
RULE(MaxOp, None)
RULE(MinOp, None)
RULE(ModOp, None)
RULE(EqualOp, None)
RULE(LessOp, None)
RULE(LessEqualOp, None)
RULE(GreaterOp, None)
RULE(GreaterEqualOp, None)
RULE(AndOp, None)
RULE(OrOp, None)
RULE(XorOp, None)
RULE(ShiftLeftOp, None)
RULE(ShiftRightOp, None)
RULE(WhereOp, AllLinear, 1, 2)
RULE(NegOp, AllLinear, 0)
RULE(IdentityOp, AllLinear, 0)
RULE(AbsOp, None)
RULE(ExpOp, None)
RULE(LogOp, None)
RULE(SqrtOp, None)
RULE(ReciprocalOp, None)
RULE(TanhOp, None)
RULE(SigmoidOp, None)
RULE(ErfOp, None)
RULE(ReluOp, None)
RULE(NotOp, None)
RULE(SinOp, None)
RULE(CosOp, None)
RULE(AcosOp, None)
RULE(AsinOp, None)
RULE(AtanOp, None)
RULE(FloorOp, None)
RULE(CeilOp, None)
RULE(RoundOp, None)
RULE(SignOp, None)
RULE(GeluOp, None)
RULE(LeakyReluOp, None)
RULE(ClipOp, None)
#undef RULE

/// A widening float cast (bf16 -> f32, the gradient of a mixed-precision
/// parameter) lets partial sums through, so they are reduced after it, in
/// the wider dtype; so does the cast rounding a gradient's f32 sum to
/// `precision.reduce` (marked by the training step), so that they are
/// reduced in the narrow dtype. Any other cast needs its input whole.
OpShardingRule CastOp::getShardingRule() {
  auto from = dyn_cast<FloatType>(getInput().getType().getElementType());
  auto to = dyn_cast<FloatType>(getResult().getType().getElementType());
  bool widens = from && to && to.getWidth() > from.getWidth();
  bool narrowsGradient = from && to && (*this)->hasAttr(kNarrowReduceOfAttr);
  return widens || narrowsGradient
             ? elementwise(getOperation(), PartialFlow::AllLinear, {0})
             : elementwise(getOperation(), PartialFlow::None, {});
}

#define RULE(OP, FLOW, ...)                                                    \
  OpShardingRule OP::getShardingRule() {                                       \
    return elementwise(getOperation(), PartialFlow::FLOW, {__VA_ARGS__});      \
  }
// Optimizer updates: element by element over the parameter's shape; the
// per-step scalars are whole.
RULE(AdamUpdateOp, None)
RULE(SgdUpdateOp, None)
#undef RULE

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

static OpShardingRule reduceRule(Operation *op, ArrayRef<int64_t> axes,
                                 bool keepdims, FactorKind reducedKind,
                                 dist::ReductionKind reduction) {
  OpShardingRule rule;
  Value input = op->getOperand(0);
  TensorFactors in, out;
  for (auto [d, s] : llvm::enumerate(shapeOf(input))) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    int64_t f = rule.addFactor(s, reduced ? reducedKind : FactorKind::Parallel,
                               reduction);
    in.push_back({f});
    if (!reduced)
      out.push_back({f});
    else if (keepdims)
      out.push_back({});
  }
  rule.operands.push_back(in);
  rule.results.push_back(out);
  return rule;
}

/// A reduction whose local results add up to the global one.
static OpShardingRule sumRule(Operation *op, ArrayRef<int64_t> axes,
                              bool keepdims) {
  OpShardingRule rule = reduceRule(op, axes, keepdims, FactorKind::Reduction,
                                   dist::ReductionKind::Sum);
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  return rule;
}

OpShardingRule ReduceSumOp::getShardingRule() {
  return sumRule(*this, getAxes(), getKeepdims());
}

OpShardingRule ReduceMeanOp::getShardingRule() {
  // Partitioned as a local sum scaled by 1/global count: a partial sum.
  return sumRule(*this, getAxes(), getKeepdims());
}

LogicalResult ReduceMeanOp::partitionOp(dist::PartitionContext &ctx,
                                        ValueRange localOperands,
                                        ArrayRef<ShardingAttr> operandShardings,
                                        ArrayRef<ShardingAttr> resultShardings,
                                        SmallVectorImpl<Value> &localResults) {
  bool reducesShardedDim = llvm::any_of(getAxes(), [&](int64_t a) {
    return !operandShardings[0].getAxesForDim(a).empty();
  });
  if (!reducesShardedDim)
    return dist::partitionByCloning(*this, ctx, localOperands, resultShardings,
                                    localResults);
  auto global = getInput().getType();
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= global.getDimSize(a);
  Value sum = ReduceSumOp::create(ctx.builder, getLoc(), localOperands[0],
                                  getAxesAttr(), getKeepdimsAttr());
  auto sumType = cast<RankedTensorType>(sum.getType());
  auto scalarType = RankedTensorType::get({}, sumType.getElementType());
  Value scale = ConstantOp::create(
      ctx.builder, getLoc(), scalarType,
      DenseElementsAttr::get(scalarType,
                             FloatAttr::get(sumType.getElementType(),
                                            1.0 / static_cast<double>(count))));
  localResults.push_back(MulOp::create(ctx.builder, getLoc(), sum, scale));
  return success();
}

OpShardingRule ReduceMaxOp::getShardingRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), FactorKind::Reduction,
                    dist::ReductionKind::Max);
}
OpShardingRule ReduceMinOp::getShardingRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), FactorKind::Reduction,
                    dist::ReductionKind::Min);
}
OpShardingRule ReduceProdOp::getShardingRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), FactorKind::Whole,
                    dist::ReductionKind::Sum);
}
OpShardingRule ArgMaxOp::getShardingRule() {
  return reduceRule(*this, {getAxis()}, getKeepdims(), FactorKind::Whole,
                    dist::ReductionKind::Sum);
}
OpShardingRule ArgMinOp::getShardingRule() {
  return reduceRule(*this, {getAxis()}, getKeepdims(), FactorKind::Whole,
                    dist::ReductionKind::Sum);
}

/// Dimensions from `firstWhole` on are whole; the rest parallel. Extra
/// operands broadcast against the trailing dimensions.
static OpShardingRule trailingWholeRule(Operation *op, int64_t firstWhole,
                                        int64_t lastWhole) {
  OpShardingRule rule;
  Value input = op->getOperand(0);
  TensorFactors in;
  for (auto [d, s] : llvm::enumerate(shapeOf(input))) {
    int64_t dd = d;
    bool whole = dd >= firstWhole && dd <= lastWhole;
    in.push_back(
        {rule.addFactor(s, whole ? FactorKind::Whole : FactorKind::Parallel)});
  }
  rule.operands.push_back(in);
  int64_t rank = in.size();
  for (Value extra : op->getOperands().drop_front()) {
    ArrayRef<int64_t> shape = shapeOf(extra);
    TensorFactors tf(shape.size());
    int64_t lead = rank - shape.size();
    for (int64_t d = 0, e = shape.size(); d < e; ++d)
      if (!(shape[d] == 1 && shapeOf(input)[d + lead] != 1))
        tf[d] = in[d + lead];
    rule.operands.push_back(tf);
  }
  rule.results.push_back(in);
  rule.linearOperands.assign(op->getNumOperands(), false);
  return rule;
}

OpShardingRule SoftmaxOp::getShardingRule() {
  return trailingWholeRule(*this, getAxis(), getAxis());
}
OpShardingRule LogSoftmaxOp::getShardingRule() {
  return trailingWholeRule(*this, getAxis(), getAxis());
}
OpShardingRule LayerNormOp::getShardingRule() {
  return trailingWholeRule(*this, getAxis(),
                           getInput().getType().getRank() - 1);
}

OpShardingRule BatchNormOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in = freshFactors(rule, getInput());
  rule.operands.push_back(in);
  for (int i = 0; i < 4; ++i)
    rule.operands.push_back({in[1]});
  rule.results.push_back(in);
  rule.linearOperands.assign(5, false);
  return rule;
}

//===----------------------------------------------------------------------===//
// Linear algebra and data movement
//===----------------------------------------------------------------------===//

OpShardingRule MatMulOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> a = shapeOf(getLhs()), b = shapeOf(getRhs()),
                    c = shapeOf(getResult());
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  int64_t batchRank = c.size() - (aVec ? 0 : 1) - (bVec ? 0 : 1);
  SmallVector<int64_t> batch;
  for (int64_t d = 0; d < batchRank; ++d)
    batch.push_back(rule.addFactor(c[d]));
  int64_t m = aVec ? -1 : rule.addFactor(a[a.size() - 2]);
  int64_t n = bVec ? -1 : rule.addFactor(b.back());
  int64_t k = rule.addFactor(a.back(), FactorKind::Reduction);
  auto batchOf = [&](ArrayRef<int64_t> shape, int64_t matDims) {
    TensorFactors tf;
    int64_t rank = shape.size() - matDims;
    int64_t lead = batchRank - rank;
    for (int64_t d = 0; d < rank; ++d) {
      bool broadcast = shape[d] == 1 && c[d + lead] != 1;
      tf.push_back(broadcast ? SmallVector<int64_t, 2>{}
                             : SmallVector<int64_t, 2>{batch[d + lead]});
    }
    return tf;
  };
  TensorFactors ta = batchOf(a, aVec ? 1 : 2);
  if (!aVec)
    ta.push_back({m});
  ta.push_back({k});
  TensorFactors tb = batchOf(b, bVec ? 1 : 2);
  tb.push_back({k});
  if (!bVec)
    tb.push_back({n});
  TensorFactors tc;
  for (int64_t f : batch)
    tc.push_back({f});
  if (!aVec)
    tc.push_back({m});
  if (!bVec)
    tc.push_back({n});
  rule.operands = {ta, tb};
  rule.results = {tc};
  rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
  return rule;
}

OpShardingRule TransposeOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in = freshFactors(rule, getInput());
  TensorFactors out;
  for (int64_t p : getPerm())
    out.push_back(in[p]);
  rule.operands = {in};
  rule.results = {out};
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  return rule;
}

/// Common refinement of two shapes with the same element count: dimensions
/// become products of shared factors where sizes divide; groups that cannot be
/// refined (e.g. 6x4 -> 4x6) become whole.
OpShardingRule ReshapeOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  TensorFactors tin(in.size()), tout(out.size());
  rule.operands = {tin};
  rule.results = {tout};
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  // Dynamic or empty shapes: nothing to match dimensions by (and an empty
  // tensor has nothing worth splitting).
  if (!getInput().getType().hasStaticShape() ||
      !getResult().getType().hasStaticShape() || llvm::is_contained(in, 0) ||
      llvm::is_contained(out, 0)) {
    OpShardingRule whole = OpShardingRule::allWhole(*this);
    whole.setPartialFlow(PartialFlow::AllLinear, {0});
    return whole;
  }
  size_t i = 0, j = 0;
  auto skipOnes = [&] {
    while (i < in.size() && in[i] == 1)
      ++i;
    while (j < out.size() && out[j] == 1)
      ++j;
  };
  skipOnes();
  while (i < in.size() && j < out.size()) {
    // Grow a group until the products match, refining as we go.
    size_t gi = i, gj = j;
    int64_t remIn = in[i], remOut = out[j];
    SmallVector<std::pair<int64_t, int64_t>> dimOfFactorIn, dimOfFactorOut;
    bool refinable = true;
    SmallVector<int64_t> groupFactors;
    while (true) {
      int64_t f;
      if (remIn % remOut == 0 || remOut % remIn == 0) {
        int64_t size = std::min(remIn, remOut);
        f = rule.addFactor(size);
        groupFactors.push_back(f);
        rule.operands[0][i].push_back(f);
        rule.results[0][j].push_back(f);
        remIn /= size;
        remOut /= size;
      } else {
        refinable = false;
      }
      if (!refinable)
        break;
      if (remIn == 1 && remOut == 1) {
        ++i;
        ++j;
        break;
      }
      if (remIn == 1) {
        ++i;
        remIn = in[i];
      }
      if (remOut == 1) {
        ++j;
        remOut = out[j];
      }
    }
    if (!refinable) {
      // Undo this group's factors and make every involved dimension whole.
      int64_t prodIn = 1, prodOut = 1;
      size_t ei = gi, ej = gj;
      // Extend to the smallest prefix pair with equal products.
      prodIn = in[ei++];
      prodOut = out[ej++];
      while (prodIn != prodOut) {
        if (prodIn < prodOut)
          prodIn *= in[ei++];
        else
          prodOut *= out[ej++];
      }
      for (size_t d = gi; d < ei; ++d)
        rule.operands[0][d] = {rule.addFactor(in[d], FactorKind::Whole)};
      for (size_t d = gj; d < ej; ++d)
        rule.results[0][d] = {rule.addFactor(out[d], FactorKind::Whole)};
      i = ei;
      j = ej;
    }
    skipOnes();
  }
  return rule;
}

OpShardingRule ExpandOp::getShardingRule() {
  return elementwise(*this, PartialFlow::AllLinear, {0});
}

OpShardingRule ConcatOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(getResult());
  TensorFactors shared;
  for (auto [d, s] : llvm::enumerate(out))
    shared.push_back({rule.addFactor(s, static_cast<int64_t>(d) == getAxis()
                                            ? FactorKind::Whole
                                            : FactorKind::Parallel)});
  for (Value v : getInputs()) {
    TensorFactors tf = shared;
    tf[getAxis()] = {rule.addFactor(shapeOf(v)[getAxis()], FactorKind::Whole)};
    rule.operands.push_back(tf);
  }
  rule.results.push_back(shared);
  SmallVector<unsigned> all;
  for (unsigned i = 0; i < getInputs().size(); ++i)
    all.push_back(i);
  rule.setPartialFlow(PartialFlow::AllLinear, all);
  return rule;
}

static bool isFullRange(SliceOp op, int64_t d) {
  int64_t e = op.getInput().getType().getDimSize(d);
  return op.getStarts()[d] == 0 && op.getSteps()[d] == 1 &&
         op.getEnds()[d] == e;
}

/// One operand, one result of the same rank: a dimension `kept` says is
/// unchanged shares a parallel factor, the others are whole on both sides.
static OpShardingRule keptOrWholeRule(Operation *op,
                                      function_ref<bool(int64_t)> kept) {
  OpShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0)),
                    out = shapeOf(op->getResult(0));
  TensorFactors tin, tout;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    if (kept(d)) {
      int64_t f = rule.addFactor(in[d]);
      tin.push_back({f});
      tout.push_back({f});
    } else {
      tin.push_back({rule.addFactor(in[d], FactorKind::Whole)});
      tout.push_back({rule.addFactor(out[d], FactorKind::Whole)});
    }
  }
  rule.operands = {tin};
  rule.results = {tout};
  return rule;
}

OpShardingRule SliceOp::getShardingRule() {
  OpShardingRule rule =
      keptOrWholeRule(*this, [&](int64_t d) { return isFullRange(*this, d); });
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  return rule;
}

LogicalResult SliceOp::partitionOp(dist::PartitionContext &ctx,
                                   ValueRange localOperands,
                                   ArrayRef<ShardingAttr>,
                                   ArrayRef<ShardingAttr> resultShardings,
                                   SmallVectorImpl<Value> &localResults) {
  // Sharded dimensions are full ranges: their end is the local extent.
  auto localIn = cast<RankedTensorType>(localOperands[0].getType());
  SmallVector<int64_t> ends(getEnds());
  for (int64_t d = 0; d < localIn.getRank(); ++d)
    if (isFullRange(*this, d))
      ends[d] = localIn.getDimSize(d);
  auto local = ctx.localType(getResult().getType(), resultShardings[0]);
  localResults.push_back(SliceOp::create(
      ctx.builder, getLoc(), local, localOperands[0], getStartsAttr(),
      ctx.builder.getDenseI64ArrayAttr(ends), getStepsAttr()));
  return success();
}

std::optional<int64_t> distopt::nn::rollShift(GatherOp op) {
  auto idxType = op.getIndices().getType();
  int64_t axis = op.getAxis();
  int64_t n = op.getData().getType().getDimSize(axis);
  auto constant = op.getIndices().getDefiningOp<ConstantOp>();
  if (!constant || idxType.getRank() != 1 || idxType.getDimSize(0) != n ||
      n <= 0)
    return std::nullopt;
  auto dense = dyn_cast<DenseIntElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &v : dense.getValues<APInt>())
    values.push_back(v.getSExtValue());
  int64_t shift = llvm::mod(-values[0], n);
  // A roll by 0 is a lookup of every row in order (an embedding table read
  // at positions 0..n-1): left to the lookup's own rule.
  if (shift == 0)
    return std::nullopt;
  for (int64_t i = 0; i < n; ++i)
    if (llvm::mod(values[i], n) != llvm::mod(i - shift, n))
      return std::nullopt;
  return shift;
}

Value distopt::nn::createRoll(OpBuilder &b, Location loc, Value input,
                              int64_t axis, int64_t shift) {
  int64_t n = cast<RankedTensorType>(input.getType()).getDimSize(axis);
  SmallVector<int64_t> indices;
  for (int64_t i = 0; i < n; ++i)
    indices.push_back(llvm::mod(i - shift, n));
  auto type = RankedTensorType::get({n}, b.getI64Type());
  Value idx = ConstantOp::create(b, loc, type,
                                 DenseIntElementsAttr::get(type, indices));
  return GatherOp::create(b, loc, input, idx, b.getI64IntegerAttr(axis));
}

OpShardingRule GatherOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> data = shapeOf(getData()), idx = shapeOf(getIndices());
  int64_t axis = getAxis();
  if (rollShift(*this)) {
    // A roll keeps every dimension where it is: the rolled one splits as
    // the others do (its local form moves whole pieces between ranks); the
    // indices are a small constant every rank holds.
    TensorFactors tr = freshFactors(rule, getData());
    TensorFactors ti = {{rule.addFactor(idx[0], FactorKind::Whole)}};
    rule.operands = {tr, ti};
    rule.results = {tr};
    rule.setPartialFlow(PartialFlow::OneLinear, {0});
    return rule;
  }
  TensorFactors td, ti, tr;
  SmallVector<int64_t> dataFactors;
  for (auto [d, s] : llvm::enumerate(data)) {
    bool isAxis = static_cast<int64_t>(d) == axis;
    // Sharding the looked-up dimension gives a masked local lookup whose
    // result is a partial sum (vocabulary-parallel embedding).
    dataFactors.push_back(rule.addFactor(s, isAxis ? FactorKind::Reduction
                                                   : FactorKind::Parallel));
    td.push_back({dataFactors.back()});
  }
  for (int64_t s : idx)
    ti.push_back({rule.addFactor(s)});
  for (int64_t d = 0; d < axis; ++d)
    tr.push_back(td[d]);
  for (auto &f : ti)
    tr.push_back(f);
  for (int64_t d = axis + 1, e = data.size(); d < e; ++d)
    tr.push_back(td[d]);
  rule.operands = {td, ti};
  rule.results = {tr};
  rule.setPartialFlow(PartialFlow::OneLinear, {0});
  return rule;
}

namespace {
/// Indices into a table split along `axis`, made local: each index minus
/// this rank's first row, and whether it falls in this rank's rows.
struct LocalIndices {
  Value safe;    // in-range local index, or 0
  Value inRange; // i1, the shape of the indices
};
} // namespace

static LocalIndices localizeIndices(dist::PartitionContext &ctx, Location loc,
                                    RankedTensorType globalTable,
                                    ShardingAttr tableSharding, int64_t axis,
                                    int64_t localRows, Value idx) {
  OpBuilder &b = ctx.builder;
  auto idxType = cast<RankedTensorType>(idx.getType());
  Type it = idxType.getElementType();
  auto scalar = [&](int64_t v) -> Value {
    auto t = RankedTensorType::get({}, it);
    return ConstantOp::create(
        b, loc, t, DenseElementsAttr::get(t, IntegerAttr::get(it, v)));
  };
  // Negative indices count from the end of the global dimension.
  Value zero = scalar(0);
  Value isNeg = LessOp::create(b, loc, idx, zero);
  Value wrapped =
      AddOp::create(b, loc, idx, scalar(globalTable.getDimSize(axis)));
  idx = WhereOp::create(b, loc, isNeg, wrapped, idx);
  Value offset;
  if (ctx.coords) {
    offset = scalar(*ctx.pieceOffset(loc, globalTable, tableSharding, axis));
  } else {
    // Only the axes that split the looked-up dimension move its offset; a
    // table also split along a later dimension (ZeRO's pieces of a
    // vocabulary-parallel embedding) is whole there as far as the offset
    // goes.
    ShardingAttr alongAxis = tableSharding;
    for (auto [a, p] : llvm::enumerate(tableSharding.getPlacements()))
      if (!(p.isShard() && p.dim == axis))
        alongAxis = alongAxis.withPlacement(a, dist::Placement::replicate());
    offset = dist::PieceOffsetOp::create(
        b, loc, RankedTensorType::get({}, it), alongAxis,
        b.getI64IntegerAttr(axis),
        b.getI64IntegerAttr(globalTable.getDimSize(axis)));
  }
  Value shifted = SubOp::create(b, loc, idx, offset);
  Value geLo = GreaterEqualOp::create(b, loc, shifted, zero);
  Value ltHi = LessOp::create(b, loc, shifted, scalar(localRows));
  Value inRange = AndOp::create(b, loc, geLo, ltHi);
  return {WhereOp::create(b, loc, inRange, shifted, zero), inRange};
}

/// `mask` (the indices' shape) reshaped to broadcast over a gathered tensor
/// of `gathered` type whose index dimensions start at `axis`.
static Value broadcastMask(OpBuilder &b, Location loc, Value mask,
                           RankedTensorType gathered, int64_t axis) {
  auto maskType = cast<RankedTensorType>(mask.getType());
  SmallVector<int64_t> shape(axis, 1);
  llvm::append_range(shape, maskType.getShape());
  shape.append(gathered.getRank() - shape.size(), 1);
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, b.getI1Type()),
                           mask);
}

static Value zeroScalar(OpBuilder &b, Location loc, Type et) {
  auto zt = RankedTensorType::get({}, et);
  Attribute zero = isa<FloatType>(et) ? Attribute(FloatAttr::get(et, 0.0))
                                      : Attribute(IntegerAttr::get(et, 0));
  return ConstantOp::create(b, loc, zt, DenseElementsAttr::get(zt, zero));
}

/// A roll of a dimension split over one mesh axis by a whole number of
/// pieces: each rank's piece goes `shift / pieceExtent` ranks on along the
/// axis (one collective_permute).
static LogicalResult partitionRoll(GatherOp op, dist::PartitionContext &ctx,
                                   Value data, ShardingAttr sharding,
                                   int64_t shift,
                                   SmallVectorImpl<Value> &localResults) {
  int64_t axis = op.getAxis();
  int64_t n = op.getData().getType().getDimSize(axis);
  SmallVector<int64_t> axes = sharding.getAxesForDim(axis);
  int64_t pieces = 1;
  for (int64_t a : axes)
    pieces *= ctx.meshSizes[a];
  OpBuilder &b = ctx.builder;
  auto meshRef = FlatSymbolRefAttr::get(ctx.mesh.getSymNameAttr());
  if (axes.size() != 1 || n % pieces != 0 || shift % (n / pieces) != 0) {
    // Not whole pieces: gather the dimension, roll it, keep this rank's
    // piece.
    if (n % pieces != 0)
      return op.emitOpError("rolls dimension ")
             << axis << " of extent " << n << ", which does not split evenly "
             << "into its " << pieces << " pieces";
    SmallVector<StringRef> names;
    for (int64_t a : axes)
      names.push_back(ctx.mesh.getAxisName(a));
    auto local = cast<RankedTensorType>(data.getType());
    SmallVector<int64_t> whole(local.getShape());
    whole[axis] = n;
    Value gathered = dist::AllGatherOp::create(
        b, op.getLoc(), local.clone(whole), data, meshRef,
        b.getStrArrayAttr(names), b.getI64IntegerAttr(axis),
        DenseI64ArrayAttr());
    Value rolled = createRoll(b, op.getLoc(), gathered, axis, shift);
    localResults.push_back(dist::LocalSliceOp::create(
        b, op.getLoc(), local, rolled, meshRef, b.getStrArrayAttr(names),
        b.getI64IntegerAttr(axis), DenseI64ArrayAttr()));
    return success();
  }
  int64_t steps = shift / (n / pieces);
  SmallVector<int64_t> pairs;
  for (int64_t i = 0; i < pieces; ++i) {
    pairs.push_back(i);
    pairs.push_back((i + steps) % pieces);
  }
  auto permute = dist::CollectivePermuteOp::create(
      b, op.getLoc(), data.getType(), data, meshRef,
      b.getStrArrayAttr({ctx.mesh.getAxisName(axes[0])}),
      b.getDenseI64ArrayAttr(pairs));
  // The report groups collectives by phase and reason: a backward roll
  // (the gradient of a forward one) passes the blocks' gradients back.
  auto phase = op->getAttrOfType<StringAttr>(kPhaseAttr);
  bool backward = phase && phase.getValue() == "backward";
  permute->setAttr(kPhaseAttr, phase ? phase : b.getStringAttr("forward"));
  permute->setAttr(
      dist::kReasonAttr,
      b.getStringAttr(std::string(backward ? "gradients of the blocks back "
                                             "around the ring"
                                           : "blocks around the ring") +
                      ": nn.gather at '" + getNodeName(op) +
                      "' rolls dimension " + std::to_string(axis) + " by " +
                      std::to_string(steps) + " piece(s)"));
  localResults.push_back(permute.getResult());
  return success();
}

LogicalResult GatherOp::partitionOp(dist::PartitionContext &ctx,
                                    ValueRange localOperands,
                                    ArrayRef<ShardingAttr> operandShardings,
                                    ArrayRef<ShardingAttr> resultShardings,
                                    SmallVectorImpl<Value> &localResults) {
  int64_t axis = getAxis();
  if (operandShardings[0].getAxesForDim(axis).empty())
    return dist::partitionByCloning(*this, ctx, localOperands, resultShardings,
                                    localResults);
  if (std::optional<int64_t> shift = rollShift(*this))
    return partitionRoll(*this, ctx, localOperands[0], operandShardings[0],
                         *shift, localResults);
  // Masked lookup into this rank's rows [offset, offset + rows).
  OpBuilder &b = ctx.builder;
  Location loc = getLoc();
  Value data = localOperands[0];
  int64_t rows = cast<RankedTensorType>(data.getType()).getDimSize(axis);
  LocalIndices local =
      localizeIndices(ctx, loc, getData().getType(), operandShardings[0], axis,
                      rows, localOperands[1]);
  Value looked = GatherOp::create(b, loc, data, local.safe, getAxisAttr());
  auto lookedType = cast<RankedTensorType>(looked.getType());
  Value mask = broadcastMask(b, loc, local.inRange, lookedType, axis);
  localResults.push_back(WhereOp::create(
      b, loc, mask, looked, zeroScalar(b, loc, lookedType.getElementType())));
  return success();
}

/// GatherElements and ScatterElements: `data` and `indices` (and
/// `updates`, the indices' shape) share a factor in every dimension but
/// `axis` where their extents agree, so those dimensions shard alike and each
/// rank works on its own block. Along `axis` every index may point anywhere
/// in data's dimension, so that stays whole in data; the indices' extent
/// there is a factor of its own, shardable for a gather (each rank picks its
/// rows of the result) and whole for a scatter (every index writes into the
/// one data row). Dimensions where the indices are shorter stay whole.
static TensorFactors elementsIndexFactors(OpShardingRule &rule, Value data,
                                          Value indices, int64_t axis,
                                          FactorKind indexAxisKind,
                                          TensorFactors &dataFactors) {
  ArrayRef<int64_t> ds = shapeOf(data), is = shapeOf(indices);
  TensorFactors ti;
  for (int64_t d = 0, e = ds.size(); d < e; ++d) {
    if (d != axis && ds[d] == is[d] && !ShapedType::isDynamic(ds[d])) {
      int64_t f = rule.addFactor(ds[d]);
      dataFactors.push_back({f});
      ti.push_back({f});
      continue;
    }
    dataFactors.push_back({rule.addFactor(ds[d], FactorKind::Whole)});
    ti.push_back(
        {rule.addFactor(is[d], d == axis ? indexAxisKind : FactorKind::Whole)});
  }
  return ti;
}

OpShardingRule GatherElementsOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors td;
  TensorFactors ti = elementsIndexFactors(rule, getData(), getIndices(),
                                          getAxis(), FactorKind::Parallel, td);
  rule.operands = {td, ti};
  rule.results = {ti};
  rule.setPartialFlow(PartialFlow::OneLinear, {0});
  return rule;
}

/// A scatter (data, indices, updates) that replaces or adds is linear in
/// data and updates together: partial sums of both flow through. One that
/// multiplies or takes the max or min is not.
static void setScatterLinearity(OpShardingRule &rule, StringRef reduction) {
  if (reduction == "none" || reduction == "add")
    rule.setPartialFlow(PartialFlow::AllLinear, {0, 2});
  else
    rule.linearOperands.assign(3, false);
}

OpShardingRule ScatterElementsOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors td;
  TensorFactors ti = elementsIndexFactors(rule, getData(), getIndices(),
                                          getAxis(), FactorKind::Whole, td);
  rule.operands = {td, ti, ti};
  rule.results = {td};
  setScatterLinearity(rule, getReduction());
  return rule;
}

/// GatherND: the batch dimensions shard alike in data, indices and result;
/// the indices' other dimensions but the last are the result's leading ones
/// (each rank picks its own rows); data's trailing dimensions, past those
/// the tuples index, are the result's trailing ones. The indexed dimensions
/// and the tuples themselves stay whole.
OpShardingRule GatherNDOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> ds = shapeOf(getData()), is = shapeOf(getIndices());
  int64_t b = getBatchDims(), q = is.size(), k = is.back();
  TensorFactors td, ti, tr;
  for (int64_t d = 0; d < b; ++d) {
    int64_t f = rule.addFactor(ds[d]);
    td.push_back({f});
    ti.push_back({f});
    tr.push_back({f});
  }
  for (int64_t d = b; d < q - 1; ++d) {
    int64_t f = rule.addFactor(is[d]);
    ti.push_back({f});
    tr.push_back({f});
  }
  ti.push_back({rule.addFactor(k, FactorKind::Whole)});
  for (int64_t d = b; d < b + k; ++d)
    td.push_back({rule.addFactor(ds[d], FactorKind::Whole)});
  for (int64_t d = b + k, e = ds.size(); d < e; ++d) {
    int64_t f = rule.addFactor(ds[d]);
    td.push_back({f});
    tr.push_back({f});
  }
  rule.operands = {td, ti};
  rule.results = {tr};
  rule.setPartialFlow(PartialFlow::OneLinear, {0});
  return rule;
}

/// ScatterND: data's trailing dimensions (past those the tuples index) are
/// the updates' trailing ones and shard alike; every tuple may write
/// anywhere in the indexed dimensions, so those, the indices and the
/// updates' leading dimensions stay whole.
OpShardingRule ScatterNDOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> ds = shapeOf(getData()), is = shapeOf(getIndices());
  int64_t q = is.size(), k = is.back();
  TensorFactors td, ti, tu;
  for (int64_t d = 0; d < q - 1; ++d) {
    int64_t f = rule.addFactor(is[d], FactorKind::Whole);
    ti.push_back({f});
    tu.push_back({f});
  }
  ti.push_back({rule.addFactor(k, FactorKind::Whole)});
  for (int64_t d = 0; d < k; ++d)
    td.push_back({rule.addFactor(ds[d], FactorKind::Whole)});
  for (int64_t d = k, e = ds.size(); d < e; ++d) {
    int64_t f = rule.addFactor(ds[d]);
    td.push_back({f});
    tu.push_back({f});
  }
  rule.operands = {td, ti, tu};
  rule.results = {td};
  setScatterLinearity(rule, getReduction());
  return rule;
}

/// Det: the batch dimensions shard; each matrix stays whole.
OpShardingRule DetOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  TensorFactors tin, tout;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    if (d + 2 < e) {
      int64_t f = rule.addFactor(in[d]);
      tin.push_back({f});
      tout.push_back({f});
    } else {
      tin.push_back({rule.addFactor(in[d], FactorKind::Whole)});
    }
  }
  rule.operands = {tin};
  rule.results = {tout};
  return rule;
}

/// CumSum: a running sum needs its whole axis; other dimensions shard.
OpShardingRule CumSumOp::getShardingRule() {
  int64_t axis = getAxis();
  OpShardingRule rule =
      keptOrWholeRule(*this, [&](int64_t d) { return d != axis; });
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  return rule;
}

/// OneHot: the indices' dimensions shard (the result's matching ones with
/// them); the new depth dimension and the two values stay whole.
OpShardingRule OneHotOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors ti, tv, tr;
  for (int64_t s : shapeOf(getIndices()))
    ti.push_back({rule.addFactor(s)});
  tv.push_back({rule.addFactor(2, FactorKind::Whole)});
  tr = ti;
  tr.insert(tr.begin() + getAxis(), SmallVector<int64_t, 2>{rule.addFactor(
                                        getDepth(), FactorKind::Whole)});
  rule.operands = {ti, tv};
  rule.results = {tr};
  rule.linearOperands.assign(2, false);
  return rule;
}

OpShardingRule PadOp::getShardingRule() {
  int64_t rank = getInput().getType().getRank();
  OpShardingRule rule = keptOrWholeRule(*this, [&](int64_t d) {
    return getPads()[d] == 0 && getPads()[d + rank] == 0;
  });
  if (getMode() == "constant" && getValue().convertToDouble() == 0.0)
    rule.setPartialFlow(PartialFlow::AllLinear, {0});
  else
    rule.linearOperands.assign(1, false);
  return rule;
}

OpShardingRule ResizeOp::getShardingRule() {
  // Resized dimensions are whole; the others (batch, channels) split.
  OpShardingRule rule =
      keptOrWholeRule(*this, [&](int64_t d) { return keepsDimension(d); });
  // Interpolation is linear in the input; extrapolated points are not.
  if (getCoordinateTransformationMode() != "tf_crop_and_resize" ||
      getExtrapolationValue().convertToDouble() == 0.0)
    rule.setPartialFlow(PartialFlow::AllLinear, {0});
  else
    rule.linearOperands.assign(1, false);
  return rule;
}

OpShardingRule GridSampleOp::getShardingRule() {
  // Batch and channels split; every output point may read any pixel, so
  // the image is whole; the grid's points split with the output's.
  OpShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(getInput()), g = shapeOf(getGrid());
  int64_t n = rule.addFactor(x[0]), c = rule.addFactor(x[1]);
  int64_t h = rule.addFactor(x[2], FactorKind::Whole),
          w = rule.addFactor(x[3], FactorKind::Whole);
  int64_t ho = rule.addFactor(g[1]), wo = rule.addFactor(g[2]);
  int64_t xy = rule.addFactor(g[3], FactorKind::Whole);
  rule.operands = {{{n}, {c}, {h}, {w}}, {{n}, {ho}, {wo}, {xy}}};
  rule.results = {{{n}, {c}, {ho}, {wo}}};
  // Linear in the image for a fixed grid.
  rule.setPartialFlow(PartialFlow::AllLinear, {0});
  return rule;
}

OpShardingRule MaxPoolIndicesOp::getShardingRule() {
  // The positions count every dimension's offset: a slice would number its
  // own elements.
  return OpShardingRule::allWhole(*this);
}

OpShardingRule RangeOp::getShardingRule() {
  return OpShardingRule::allWhole(*this);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// The factors a convolution relates, for input x [n, c, ...], weight w
/// [m, c/group, ...] and output y [n, m, ...]: batch n, output channels m,
/// input channels c with the given kinds (grouped convolutions keep their
/// channels whole), spatial dimensions whole.
struct ConvFactors {
  int64_t m;
  TensorFactors x, w, y;
};
static ConvFactors convFactors(OpShardingRule &rule, Value x, Value w, Value y,
                               bool grouped, FactorKind batchKind,
                               FactorKind mKind, FactorKind cKind) {
  ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(y);
  int64_t n = rule.addFactor(xs[0], batchKind);
  int64_t m = rule.addFactor(ws[0], grouped ? FactorKind::Whole : mKind);
  int64_t c = rule.addFactor(xs[1], grouped ? FactorKind::Whole : cKind);
  ConvFactors f{m,
                {{n}, {c}},
                {{m}, {grouped ? rule.addFactor(ws[1], FactorKind::Whole) : c}},
                {{n}, {m}}};
  for (size_t d = 2; d < xs.size(); ++d) {
    f.x.push_back({rule.addFactor(xs[d], FactorKind::Whole)});
    f.w.push_back({rule.addFactor(ws[d], FactorKind::Whole)});
    f.y.push_back({rule.addFactor(ys[d], FactorKind::Whole)});
  }
  return f;
}

OpShardingRule ConvOp::getShardingRule() {
  OpShardingRule rule;
  ConvFactors f = convFactors(rule, getInput(), getWeight(), getResult(),
                              getGroup() != 1, FactorKind::Parallel,
                              FactorKind::Parallel, FactorKind::Reduction);
  rule.operands = {f.x, f.w};
  if (getBias())
    rule.operands.push_back({{f.m}});
  rule.results = {f.y};
  if (getBias()) {
    rule.linearOperands.assign(3, false);
    rule.setAddend(2);
  } else {
    rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
  }
  return rule;
}

static OpShardingRule poolRule(Operation *op) {
  OpShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0)),
                    y = shapeOf(op->getResult(0));
  int64_t n = rule.addFactor(x[0]), c = rule.addFactor(x[1]);
  TensorFactors tx{{n}, {c}}, ty{{n}, {c}};
  for (size_t d = 2; d < x.size(); ++d) {
    tx.push_back({rule.addFactor(x[d], FactorKind::Whole)});
    ty.push_back({rule.addFactor(y[d], FactorKind::Whole)});
  }
  rule.operands = {tx};
  rule.results = {ty};
  rule.linearOperands.assign(1, false);
  return rule;
}

OpShardingRule MaxPoolOp::getShardingRule() { return poolRule(*this); }
OpShardingRule AvgPoolOp::getShardingRule() { return poolRule(*this); }
OpShardingRule GlobalAvgPoolOp::getShardingRule() { return poolRule(*this); }
OpShardingRule GlobalMaxPoolOp::getShardingRule() { return poolRule(*this); }

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

OpShardingRule VariableOp::getShardingRule() { return sourceRule(getResult()); }

/// Like gather: the table's rows are split with a masked local scatter
/// (only this rank's rows receive their updates); the index positions are a
/// sum (each rank adds its own updates, so the result is partial, and the
/// base, added once, must then be a partial sum too: a tied embedding's
/// gradient scattered into the vocabulary head's).
OpShardingRule ScatterAddOp::getShardingRule() {
  OpShardingRule rule;
  ArrayRef<int64_t> base = shapeOf(getBase()), idx = shapeOf(getIndices());
  int64_t axis = getAxis();
  TensorFactors tb, ti, tu;
  for (int64_t s : base)
    tb.push_back({rule.addFactor(s)});
  for (int64_t s : idx)
    ti.push_back({rule.addFactor(s, FactorKind::Reduction)});
  for (int64_t d = 0; d < axis; ++d)
    tu.push_back(tb[d]);
  for (auto &f : ti)
    tu.push_back(f);
  for (int64_t d = axis + 1, e = base.size(); d < e; ++d)
    tu.push_back(tb[d]);
  rule.operands = {tb, ti, tu};
  rule.results = {tb};
  rule.setPartialFlow(PartialFlow::AllLinear, {0, 2});
  rule.setAddend(0);
  return rule;
}

LogicalResult ScatterAddOp::partitionOp(dist::PartitionContext &ctx,
                                        ValueRange localOperands,
                                        ArrayRef<ShardingAttr> operandShardings,
                                        ArrayRef<ShardingAttr> resultShardings,
                                        SmallVectorImpl<Value> &localResults) {
  int64_t axis = getAxis();
  if (operandShardings[0].getAxesForDim(axis).empty())
    return dist::partitionByCloning(*this, ctx, localOperands, resultShardings,
                                    localResults);
  // Only updates whose index falls in this rank's rows are added.
  OpBuilder &b = ctx.builder;
  Location loc = getLoc();
  Value base = localOperands[0], updates = localOperands[2];
  int64_t rows = cast<RankedTensorType>(base.getType()).getDimSize(axis);
  LocalIndices local =
      localizeIndices(ctx, loc, getBase().getType(), operandShardings[0], axis,
                      rows, localOperands[1]);
  auto updatesType = cast<RankedTensorType>(updates.getType());
  Value mask = broadcastMask(b, loc, local.inRange, updatesType, axis);
  Value kept = WhereOp::create(
      b, loc, mask, updates, zeroScalar(b, loc, updatesType.getElementType()));
  localResults.push_back(
      ScatterAddOp::create(b, loc, base, local.safe, kept, getAxisAttr()));
  return success();
}

/// A convolution's gradient ops relate the convolution's factors
/// (convFactors) with other kinds.
static OpShardingRule convGradRule(Value x, Value w, Value dy, bool grouped,
                                   FactorKind batchKind, FactorKind mKind,
                                   FactorKind cKind, bool inputIsResult) {
  OpShardingRule rule;
  ConvFactors f = convFactors(rule, x, w, dy, grouped, batchKind, mKind, cKind);
  if (inputIsResult) {
    rule.operands = {f.y, f.w};
    rule.results = {f.x};
  } else {
    rule.operands = {f.x, f.y};
    rule.results = {f.w};
  }
  rule.setPartialFlow(PartialFlow::OneLinear, {0, 1});
  return rule;
}

OpShardingRule ConvGradInputOp::getShardingRule() {
  // dx[n, c] = sum over m of dy[n, m] * w[m, c].
  return convGradRule(getResult(), getWeight(), getResultGrad(),
                      getGroup() != 1, FactorKind::Parallel,
                      FactorKind::Reduction, FactorKind::Parallel,
                      /*inputIsResult=*/true);
}

OpShardingRule ConvGradWeightOp::getShardingRule() {
  // dw[m, c] = sum over n of dy[n, m] * x[n, c].
  return convGradRule(getInput(), getResult(), getResultGrad(), getGroup() != 1,
                      FactorKind::Reduction, FactorKind::Parallel,
                      FactorKind::Parallel,
                      /*inputIsResult=*/false);
}

template <typename OpTy> static OpShardingRule poolGradRule(OpTy op) {
  OpShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(op.getInput()), y = shapeOf(op.getResultGrad());
  int64_t n = rule.addFactor(x[0]), c = rule.addFactor(x[1]);
  TensorFactors tx{{n}, {c}}, ty{{n}, {c}}, tr{{n}, {c}};
  for (size_t d = 2; d < x.size(); ++d) {
    int64_t f = rule.addFactor(x[d], FactorKind::Whole);
    tx.push_back({f});
    tr.push_back({f});
    ty.push_back({rule.addFactor(y[d], FactorKind::Whole)});
  }
  rule.operands = {tx, ty};
  rule.results = {tr};
  rule.linearOperands.assign(2, false);
  return rule;
}

OpShardingRule MaxPoolGradOp::getShardingRule() { return poolGradRule(*this); }
OpShardingRule AvgPoolGradOp::getShardingRule() { return poolGradRule(*this); }

/// The running microbatch's input is laid out as every microbatch's is: the
/// candidates and the result share one factor per dimension; the index is a
/// scalar.
OpShardingRule MicrobatchSelectOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors shared = freshFactors(rule, getResult());
  rule.operands.push_back({});
  for (size_t i = 0; i < getCandidates().size(); ++i)
    rule.operands.push_back(shared);
  rule.results.push_back(shared);
  return rule;
}

/// Einsum: each letter is one factor, shared by every dimension it names;
/// letters missing from the result are summed (reduction factors: a split
/// one leaves a partial sum). A letter repeated within one term (a
/// diagonal) stays whole, as one axis cannot split two dimensions of a
/// tensor. The product is linear in each operand.
OpShardingRule EinsumOp::getShardingRule() {
  OpShardingRule rule;
  std::string error;
  auto eq = EinsumEquation::parse(getEquation(), error);
  if (!eq)
    return rule;
  auto repeats = [&](char c) {
    return llvm::any_of(eq->inputs, [c](const std::string &t) {
      return llvm::count(t, c) > 1;
    });
  };
  std::map<char, int64_t> factor;
  for (auto [i, term] : llvm::enumerate(eq->inputs)) {
    ArrayRef<int64_t> shape = shapeOf(getInputs()[i]);
    TensorFactors tf;
    for (auto [d, c] : llvm::enumerate(term)) {
      if (!factor.count(c)) {
        FactorKind kind = repeats(c) ? FactorKind::Whole
                          : eq->output.find(c) != std::string::npos
                              ? FactorKind::Parallel
                              : FactorKind::Reduction;
        factor[c] = rule.addFactor(shape[d], kind);
      }
      tf.push_back({factor[c]});
    }
    rule.operands.push_back(tf);
  }
  TensorFactors out;
  for (char c : eq->output)
    out.push_back({factor.at(c)});
  rule.results = {out};
  SmallVector<unsigned> linear;
  for (unsigned i = 0, e = eq->inputs.size(); i < e; ++i)
    linear.push_back(i);
  rule.setPartialFlow(PartialFlow::OneLinear, linear);
  return rule;
}

/// TopK: the indices are picked along `axis` from its whole extent (their
/// own extent there, k, is whole too); other dimensions shard.
OpShardingRule TopKOp::getShardingRule() {
  OpShardingRule rule;
  TensorFactors in, out;
  for (auto [d, s] : llvm::enumerate(shapeOf(getInput()))) {
    if (static_cast<int64_t>(d) == getAxis()) {
      in.push_back({rule.addFactor(s, FactorKind::Whole)});
      out.push_back({rule.addFactor(getK(), FactorKind::Whole)});
      continue;
    }
    int64_t f = rule.addFactor(s);
    in.push_back({f});
    out.push_back({f});
  }
  rule.operands = {in};
  rule.results = {out};
  rule.linearOperands.assign(1, false);
  return rule;
}

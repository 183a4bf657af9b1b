//===- OpsLoss.cpp - ONNX training losses -----------------------*- C++ -*-===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss become nn ops that
// all have gradient rules (or read only the integer target), so a training
// graph that ends in its loss differentiates through it. The target's class
// is picked with a one-hot mask, target == iota over the class axis, by a
// where and a reduce_sum over that axis, rather than a gather along it. An
// ignored target matches no class, so it picks 0 and weighs 0.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "llvm/ADT/Sequence.h"

#include <numeric>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

/// NegativeLogLikelihoodLoss (input: log-probabilities) and
/// SoftmaxCrossEntropyLoss (input: scores; log_softmax over axis 1 first,
/// its optional second output). Both: input [N, C, d1..dk], target
/// [N, d1..dk], optional weights [C]; per position
///   loss = -input[n, target, d...] * weights[target]   (0 where ignored),
/// then none / sum / mean, the weighted mean dividing by the sum of the
/// weights of the targets not ignored (0 / 0 = NaN when every target is
/// ignored, as ONNX's reference computes it).
LogicalResult distopt::onnximport::lossOp(ImportContext &ctx) {
  bool softmax = ctx.node.op_type() == "SoftmaxCrossEntropyLoss";
  std::string reduction = ctx.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.error() << "reduction '" << reduction
                       << "' is not supported; expected none, sum or mean";
  FailureOr<Value> x = ctx.value(0), target = ctx.value(1);
  if (failed(x) || failed(target))
    return failure();
  FailureOr<Value> weights = ctx.optionalValue(2);
  if (failed(weights))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto tt = cast<RankedTensorType>(target->getType());
  Type f = xt.getElementType();
  int64_t rank = xt.getRank();
  if (rank < 2 || !isa<FloatType>(f))
    return ctx.error() << "needs a floating-point input [N, C, d1, ..., dk] "
                          "of rank 2 or more, got "
                       << xt;
  SmallVector<int64_t> targetShape(xt.getShape());
  targetShape.erase(targetShape.begin() + 1);
  // ONNX's int32 or int64: the class ids 0..C-1 are exact in either.
  Type it = tt.getElementType();
  if (!(it.isSignlessInteger(32) || it.isSignlessInteger(64)) ||
      tt.getShape() != ArrayRef(targetShape)) {
    InFlightDiagnostic d = ctx.error() << "the target must be int32 or int64 "
                                          "of shape [";
    llvm::interleaveComma(targetShape, d);
    return d << "] ([N, d1, ..., dk] for the input " << xt << "), got " << tt;
  }
  int64_t classes = xt.getDimSize(1);
  SmallVector<int64_t> classShape(rank, 1);
  classShape[1] = classes;
  if (*weights) {
    auto wt = cast<RankedTensorType>((*weights).getType());
    if (wt.getShape() != ArrayRef<int64_t>{classes} || wt.getElementType() != f)
      return ctx.error() << "the weights must be "
                         << RankedTensorType::get({classes}, f)
                         << " (one per class, of the input's element type), "
                            "got "
                         << wt;
  }
  // An int32 target never equals an ignore_index beyond int32: no target is
  // ignored then.
  std::optional<int64_t> ignore;
  int64_t ii = ctx.attrInt("ignore_index", 0);
  if (ctx.hasAttr("ignore_index") &&
      (it.isSignlessInteger(64) || ii == static_cast<int32_t>(ii)))
    ignore = ii;

  OpChain c(ctx);
  Value in = *x;
  if (softmax) {
    in = c.make<nn::LogSoftmaxOp>(*x, ctx.b.getI64IntegerAttr(1));
    if (ctx.wantsOutput(1) && failed(c.output(1, in)))
      return failure();
  }
  // hit[n, k, d...] = target[n, d...] == k, and the target is not ignored.
  SmallVector<int64_t> keptShape(targetShape);
  keptShape.insert(keptShape.begin() + 1, 1);
  Value keptTarget = c.reshape(*target, keptShape);
  // The class ids, a constant when small enough to hold in the IR.
  Value iota;
  if (classes <= kMaxFoldElements) {
    std::vector<int64_t> ids(classes);
    std::iota(ids.begin(), ids.end(), 0);
    iota = ctx.materialize(
        Known::ofInts({classShape.begin(), classShape.end()}, std::move(ids)),
        it);
  } else {
    Value start = ctx.scalar(0, it);
    Value limit = ctx.scalar(static_cast<double>(classes), it);
    Value step = ctx.scalar(1, it);
    Value range = c.typed<nn::RangeOp>(RankedTensorType::get({classes}, it),
                                       start, limit, step);
    iota = c.reshape(range, classShape);
  }
  Value hit = c.make<nn::EqualOp>(keptTarget, iota);
  Value valid;
  if (ignore) {
    Value ignored = c.make<nn::EqualOp>(
        *target, ctx.materialize(Known::ofInts({}, {*ignore}), it));
    valid = c.make<nn::NotOp>(ignored);
    // An ignore_index outside [0, C) matches no class anyway.
    if (*ignore >= 0 && *ignore < classes)
      hit = c.make<nn::AndOp>(hit, c.reshape(valid, keptShape));
  }
  DenseI64ArrayAttr classAxis = ctx.b.getDenseI64ArrayAttr({1});
  Value zero = ctx.scalar(0.0, f);
  auto pick = [&](Value perClass) {
    return c.make<nn::ReduceSumOp>(c.make<nn::WhereOp>(hit, perClass, zero),
                                   classAxis, UnitAttr());
  };
  Value loss = c.make<nn::NegOp>(pick(in));
  Value weight;
  if (*weights) {
    weight = pick(c.reshape(*weights, classShape));
    loss = c.make<nn::MulOp>(weight, loss);
  }
  if (reduction == "none")
    return c.output(0, loss);
  DenseI64ArrayAttr all = ctx.b.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)));
  if (reduction == "sum")
    return c.output(0, c.make<nn::ReduceSumOp>(loss, all, UnitAttr()));
  if (!weight && !valid)
    return c.output(0, c.make<nn::ReduceMeanOp>(loss, all, UnitAttr()));
  if (!weight)
    weight = c.typed<nn::CastOp>(RankedTensorType::get(targetShape, f), valid);
  Value total = c.make<nn::ReduceSumOp>(loss, all, UnitAttr());
  Value count = c.make<nn::ReduceSumOp>(weight, all, UnitAttr());
  return c.output(0, c.make<nn::DivOp>(total, count));
}

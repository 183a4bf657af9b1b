//===- SplitFusedProjections.cpp - one projection per slice of a fused one -*-
// C++ -*-===//
//
// GPT-2 style attention computes Q, K and V with one fused projection and
// splits the result. Split column-parallel, each device would hold a mix of
// Q, K and V columns and the split could not stay local. Rewriting
//
//     y = x @ W (+ b);  q = y[..., 0:64];  k = y[..., 64:128];  v = ...
//
// into one projection per slice, each reading a window of the same stored
// weight (`nn.weight` with `stored_shape`/`window_offsets`), computes the
// same values and lets every slice be split on its own.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace distopt;

namespace {

/// The last-dimension range [start, end) a unit-step slice takes, if it takes
/// everything else whole.
std::optional<std::pair<int64_t, int64_t>> lastDimRange(nn::SliceOp slice) {
  auto t = slice.getInput().getType();
  int64_t last = t.getRank() - 1;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (slice.getSteps()[d] != 1)
      return std::nullopt;
    if (d != last &&
        (slice.getStarts()[d] != 0 || slice.getEnds()[d] != t.getDimSize(d)))
      return std::nullopt;
  }
  return std::make_pair(slice.getStarts()[last], slice.getEnds()[last]);
}

/// A weight read through an optional 2-D transpose.
struct WeightView {
  nn::WeightOp weight;
  bool transposed = false;
};

std::optional<WeightView> weightView(Value v) {
  if (auto w = v.getDefiningOp<nn::WeightOp>())
    return WeightView{w, false};
  if (auto t = v.getDefiningOp<nn::TransposeOp>())
    if (t.getPerm() == ArrayRef<int64_t>{1, 0})
      if (auto w = t.getInput().getDefiningOp<nn::WeightOp>())
        return WeightView{w, true};
  return std::nullopt;
}

/// A window [start, end) of dimension `dim` of `w`, as a new weight op.
Value window(OpBuilder &b, nn::WeightOp w, int64_t dim, int64_t start,
             int64_t end) {
  auto type = w.getResult().getType();
  SmallVector<int64_t> stored(type.getShape()), at(type.getRank(), 0);
  if (auto s = w.getStoredShape()) {
    stored.assign(s->begin(), s->end());
    at.assign(w.getWindowOffsets()->begin(), w.getWindowOffsets()->end());
  }
  at[dim] += start;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = end - start;
  auto op = nn::WeightOp::create(
      b, w.getLoc(), type.clone(shape), w.getNameAttr(), w.getFileAttr(),
      w.getOffsetAttr(), b.getDenseI64ArrayAttr(stored),
      b.getDenseI64ArrayAttr(at), w.getStoredTypeAttr());
  return op.getResult();
}

bool splitOne(nn::MatMulOp mm) {
  auto view = weightView(mm.getRhs());
  auto rhsType = mm.getRhs().getType();
  if (!view || rhsType.getRank() != 2)
    return false;
  // Optional bias add between the product and the slices.
  Value produced = mm.getResult();
  nn::AddOp biasAdd;
  nn::WeightOp bias;
  bool biasFirst = false;
  if (produced.hasOneUse())
    if (auto add = dyn_cast<nn::AddOp>(*produced.getUsers().begin())) {
      Value other = add.getLhs() == produced ? add.getRhs() : add.getLhs();
      auto w = other.getDefiningOp<nn::WeightOp>();
      if (w && w.getResult().getType().getRank() == 1) {
        biasAdd = add;
        bias = w;
        biasFirst = add.getLhs() == other;
        produced = add.getResult();
      }
    }
  // Every user must be a last-dimension slice; together they need not cover
  // everything, but there must be more than one.
  SmallVector<std::pair<nn::SliceOp, std::pair<int64_t, int64_t>>> slices;
  for (Operation *user : produced.getUsers()) {
    auto slice = dyn_cast<nn::SliceOp>(user);
    std::optional<std::pair<int64_t, int64_t>> range;
    if (!slice || !(range = lastDimRange(slice)))
      return false;
    slices.push_back({slice, *range});
  }
  if (slices.size() < 2)
    return false;
  OpBuilder b(mm);
  for (auto &[slice, range] : slices) {
    b.setInsertionPoint(slice);
    // Output column j of x @ W is column j of W, or row j of a transposed W.
    int64_t dim = view->transposed ? 0 : 1;
    Value w = window(b, view->weight, dim, range.first, range.second);
    if (view->transposed)
      w = nn::TransposeOp::create(b, mm.getLoc(), w,
                                  b.getDenseI64ArrayAttr({1, 0}));
    Value y = nn::MatMulOp::create(b, mm.getLoc(), mm.getLhs(), w);
    if (biasAdd) {
      Value bw = window(b, bias, 0, range.first, range.second);
      y = biasFirst ? nn::AddOp::create(b, biasAdd.getLoc(), bw, y)
                    : nn::AddOp::create(b, biasAdd.getLoc(), y, bw);
    }
    slice.getResult().replaceAllUsesWith(y);
    slice.erase();
  }
  if (biasAdd && biasAdd.use_empty())
    biasAdd.erase();
  if (mm.use_empty()) {
    Operation *rhs = mm.getRhs().getDefiningOp();
    mm.erase();
    if (rhs && rhs->use_empty() && isa<nn::TransposeOp>(rhs))
      rhs->erase();
  }
  if (view->weight.use_empty())
    view->weight.erase();
  if (bias && bias.use_empty())
    bias.erase();
  return true;
}

} // namespace

void distopt::plan::splitFusedProjections(func::FuncOp func) {
  SmallVector<nn::MatMulOp> candidates;
  func.walk([&](nn::MatMulOp mm) { candidates.push_back(mm); });
  for (nn::MatMulOp mm : candidates)
    splitOne(mm);
}

void distopt::splitFusedProjections(ModuleOp module) {
  module.walk([](func::FuncOp func) { plan::splitFusedProjections(func); });
}

//===- LayerTerms.cpp - one repeated layer's share of the step --*- C++ -*-===//
//
// The search predicts most candidates without compiling them whole: the
// model is cut to its first two repeated layers and to its first three (one
// and two for a model of two layers; the first layer's liveness peak differs
// from the later ones'), both are compiled for one (tp, sp, ZeRO level,
// recompute) choice, and their reports' difference is one layer's compute,
// collectives and memory; what remains is the rest of the step (embedding,
// head, loss). Identical layers share one decision, so the whole step is the
// rest plus `layers` times one layer (Compose.cpp).
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Report/Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <map>
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

/// The layer `base.K` that `op` belongs to (K), or -1.
static int64_t layerOf(Operation *op, StringRef base) {
  std::string path = nn::getNodeModulePath(op);
  StringRef rest(path);
  if (!rest.consume_front(base) || !rest.consume_front("."))
    return -1;
  int64_t k;
  if (rest.take_until([](char c) { return c == '.'; }).getAsInteger(10, k))
    return -1;
  return k;
}

static func::FuncOp mainFunction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      return func;
  return {};
}

/// The layer indices in order (h.0, h.1, ...: 0, 1, ...).
static std::vector<int64_t> layerIndices(func::FuncOp func, StringRef base) {
  std::set<int64_t> seen;
  for (Operation &op : func.getBody().front())
    if (int64_t k = layerOf(&op, base); k >= 0)
      seen.insert(k);
  return {seen.begin(), seen.end()};
}

namespace {
/// Where the chain is cut after `keep` layers: the value the last kept layer
/// hands on and the one the last removed layer hands to the rest.
struct Cut {
  Value handedOn, leftBehind;
  std::vector<Operation *> removed;
};
} // namespace

static FailureOr<Cut> cutAfter(func::FuncOp func, StringRef base,
                               int64_t keep) {
  std::vector<int64_t> indices = layerIndices(func, base);
  if (keep < 1 || keep >= static_cast<int64_t>(indices.size()))
    return failure();
  int64_t lastKept = indices[keep - 1], firstRemoved = indices[keep];
  Cut cut;
  llvm::DenseSet<Operation *> removed;
  for (Operation &op : func.getBody().front())
    if (layerOf(&op, base) >= firstRemoved) {
      removed.insert(&op);
      cut.removed.push_back(&op);
    }
  llvm::SetVector<Value> in, out;
  for (Operation *op : cut.removed) {
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && !removed.contains(def) && layerOf(def, base) == lastKept)
        in.insert(v);
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (!removed.contains(user))
          out.insert(r);
  }
  // One activation in from the kept layers, one out to the rest, of one
  // type: the residual stream.
  if (in.size() != 1 || out.size() != 1 || in[0].getType() != out[0].getType())
    return failure();
  cut.handedOn = in[0];
  cut.leftBehind = out[0];
  return cut;
}

FailureOr<ModelShape> distopt::autoplan::readModelShape(ModuleOp imported,
                                                        StringRef layerBase,
                                                        int64_t layers) {
  func::FuncOp func = mainFunction(imported);
  if (!func || layers < 2 ||
      static_cast<int64_t>(layerIndices(func, layerBase).size()) != layers)
    return failure();
  ModelShape shape;
  shape.layerBase = layerBase.str();
  shape.layers = layers;
  // The probes cut the chain after up to three layers.
  FailureOr<Cut> first = cutAfter(func, layerBase, 1);
  for (int64_t keep = 2; keep <= 3 && keep < layers; ++keep)
    if (failed(cutAfter(func, layerBase, keep)))
      return failure();
  if (failed(first))
    return failure();
  shape.boundaryBytes = nn::tensorBytes(first->handedOn.getType());
  for (Type t : func.getArgumentTypes())
    if (auto ranked = dyn_cast<RankedTensorType>(t);
        ranked && ranked.getRank() > 0 && !ranked.isDynamicDim(0)) {
      shape.batch = ranked.getDimSize(0);
      break;
    }
  // The rest's shares before the first layer (the first stage's).
  Block &body = func.getBody().front();
  Operation *firstLayerOp = nullptr;
  for (Operation &op : body)
    if (layerOf(&op, layerBase) >= 0) {
      firstLayerOp = &op;
      break;
    }
  double flopsBefore = 0, flopsAfter = 0, paramsBefore = 0, paramsAfter = 0;
  for (Operation &op : body) {
    if (layerOf(&op, layerBase) >= 0)
      continue;
    bool before = op.isBeforeInBlock(firstLayerOp);
    if (auto w = dyn_cast<nn::WeightOp>(op)) {
      // A weight sits where its first reader is.
      Operation *reader = nullptr;
      for (Operation *user : w->getUsers())
        if (!reader || user->isBeforeInBlock(reader))
          reader = user;
      if (!reader || layerOf(reader, layerBase) >= 0)
        continue;
      (reader->isBeforeInBlock(firstLayerOp) ? paramsBefore : paramsAfter) +=
          nn::tensorBytes(w.getResult().getType());
      continue;
    }
    (before ? flopsBefore : flopsAfter) += nn::estimateFlops(&op);
  }
  if (flopsBefore + flopsAfter > 0)
    shape.restComputeBefore = flopsBefore / (flopsBefore + flopsAfter);
  if (paramsBefore + paramsAfter > 0)
    shape.restParametersBefore = paramsBefore / (paramsBefore + paramsAfter);
  return shape;
}

OwningOpRef<ModuleOp>
distopt::autoplan::keepFirstLayers(ModuleOp imported, const ModelShape &shape,
                                   int64_t keep) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(imported->clone()));
  if (keep >= shape.layers)
    return copy;
  func::FuncOp func = mainFunction(*copy);
  FailureOr<Cut> cut = cutAfter(func, shape.layerBase, keep);
  if (failed(cut))
    return nullptr;
  cut->leftBehind.replaceAllUsesWith(cut->handedOn);
  for (Operation *op : llvm::reverse(cut->removed)) {
    op->dropAllUses();
    op->erase();
  }
  // The removed layers' weights and whatever only they read.
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (op.getNumResults() > 0 && op.use_empty() &&
        (isa<nn::WeightOp, nn::ConstantOp>(op) || isOpTriviallyDead(&op)))
      op.erase();
  return copy;
}

StepTerms distopt::autoplan::stepTerms(const Report &r) {
  StepTerms t;
  llvm::StringMap<double> communication;
  for (const CollectiveEntry &e : r.collectives) {
    std::string phase =
        e.phase == "loss" || e.phase.empty() ? "forward" : e.phase;
    communication[phase] += e.timeUs * e.count;
    t.collectives.push_back(
        {e.kind, e.axes, phase, e.tensorBytes, static_cast<double>(e.count)});
  }
  auto compute = [&](StringRef phase) {
    return std::max(0.0,
                    r.usByPhase.lookup(phase) - communication.lookup(phase));
  };
  t.forwardUs = compute("forward") + r.usByPhase.lookup("loss");
  t.backwardUs = compute("backward");
  t.optimizerUs = compute("optimizer");
  for (int64_t k = 0; k < r.ranks; ++k) {
    double params = r.parameterBytesPerRank[k];
    double states =
        k < static_cast<int64_t>(r.optimizerStateBytesPerRank.size())
            ? r.optimizerStateBytesPerRank[k]
            : 0;
    if (params + states >= t.parameterBytes + t.optimizerStateBytes) {
      t.parameterBytes = params;
      t.optimizerStateBytes = states;
    }
  }
  for (int64_t g : r.gradientBytesPerRank)
    t.gradientBytes = std::max<double>(t.gradientBytes, g);
  t.liveBytes = r.activationBytesPeak;
  return t;
}

/// One layer is what the longer cut adds to the shorter; the rest is the
/// shorter less its layers. Collectives are matched by what they are.
LayerTerms distopt::autoplan::layerTermsFrom(const StepTerms &one,
                                             const StepTerms &two,
                                             int64_t kept) {
  LayerTerms terms;
  StepTerms &l = terms.layer, &rest = terms.rest;
  double k = kept;
  auto split = [&](double StepTerms::*term) {
    l.*term = two.*term - one.*term;
    rest.*term = one.*term - k * (l.*term);
  };
  for (double StepTerms::*term :
       {&StepTerms::forwardUs, &StepTerms::backwardUs, &StepTerms::optimizerUs,
        &StepTerms::parameterBytes, &StepTerms::optimizerStateBytes,
        &StepTerms::gradientBytes, &StepTerms::liveBytes})
    split(term);
  // Aligned lists: entry i of layer and rest is the same collective.
  using Key =
      std::tuple<std::string, std::vector<std::string>, std::string, int64_t>;
  std::map<Key, std::pair<double, double>> counts; // shorter, longer
  for (const CollectiveTerm &c : one.collectives)
    counts[{c.kind, c.axes, c.phase, c.tensorBytes}].first += c.count;
  for (const CollectiveTerm &c : two.collectives)
    counts[{c.kind, c.axes, c.phase, c.tensorBytes}].second += c.count;
  for (auto &[key, count] : counts) {
    CollectiveTerm c{std::get<0>(key), std::get<1>(key), std::get<2>(key),
                     std::get<3>(key), 0};
    c.count = count.second - count.first;
    l.collectives.push_back(c);
    c.count = count.first - k * l.collectives.back().count;
    rest.collectives.push_back(c);
  }
  return terms;
}

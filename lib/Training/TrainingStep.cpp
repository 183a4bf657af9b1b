//===- TrainingStep.cpp - a forward model becomes a training step -*- C++
//-*-===//
//
// The loss, clipping and optimizer formulas follow PyTorch 1.13's
// F.cross_entropy / F.mse_loss, clip_grad_norm_ and SGD / Adam / AdamW, op
// for op where the order of rounding matters, so that a trained model
// matches torch's step for step (docs/training-cases.md).
//
//===----------------------------------------------------------------------===//
#include "distopt/Training/TrainingStep.h"
#include "distopt/Training/Backward.h"

#include "distopt/Dialect/NN/IR/GradientBuilder.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace distopt;

namespace {

/// Tags every op created through it with a training phase.
struct PhaseTagger : public OpBuilder::Listener {
  StringAttr phase;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (phase && !op->hasAttr(nn::kPhaseAttr))
      op->setAttr(nn::kPhaseAttr, phase);
  }
};

struct Parameter {
  Operation *weight;
  std::string key;
  bool decays = true;
  Value grad;
};

class StepBuilder {
public:
  StepBuilder(ModuleOp module, func::FuncOp func, const TrainConfig &config,
              int64_t batchSplit)
      : module(module), func(func), config(config), batchSplit(batchSplit),
        b(func.getContext()), ctx(func.getContext()) {
    b.setListener(&tagger);
  }

  FailureOr<TrainingStepInfo> run();

private:
  void setPhase(StringRef phase) { tagger.phase = b.getStringAttr(phase); }
  /// f16's loss scale (the input hyper.loss_scale) times `seed`, a scalar or
  /// the loss's gradient (itself without a loss scale).
  Value scaleSeed(nn::GradientBuilder &g, Value seed);
  /// The parameters' (f32) gradients divided by the loss scale again.
  Value unscale(Value grad, Location loc);
  /// `grad` (f32) as the widening cast of its value in `precision.reduce`'s
  /// dtype when that is narrower, the casts marked for data-parallel plans
  /// to reduce between them; `grad` itself otherwise.
  Value narrowForReduce(Value grad, StringRef key, Location loc);
  nn::GradientBuilder gb(Location loc) { return nn::GradientBuilder(b, loc); }
  Value addInput(StringRef name, Type type);
  void unifyWeights();
  FailureOr<Value> findOutput();
  /// The model's output named `name` (null: none).
  Value namedOutput(StringRef name);
  LogicalResult selectParameters();
  /// Each loss returns its value and its gradient w.r.t. the output,
  /// scaled by `seedScale` (1 / microbatches when accumulating).
  /// With `count` (the valid labels of the whole batch when a batch is
  /// split into microbatches), each microbatch's loss and gradient divide
  /// by it instead of by its own count.
  std::pair<Value, Value> crossEntropy(Value logits, Value labels,
                                       double seedScale, Value count);
  std::pair<Value, Value> meanSquaredError(Value out, Value target,
                                           double seedScale);
  /// The output itself, read as a scalar, with the seed gradient 1.
  std::pair<Value, Value> modelOutputLoss(Value out, double seedScale);
  std::pair<Value, Value> loss(Value out, Value labels, double seedScale,
                               Value count);
  /// 1 where a label is not the ignore index, else 0, in float type `f`.
  Value validMask(nn::GradientBuilder &g, Value labels, Type f);
  /// Valid (not ignored) labels over all of `labels`, as a float scalar.
  Value validLabels(ArrayRef<Value> labels, Type f);
  /// The layer of `op` a recompute glob names ("" if none).
  std::string recomputeLayer(Operation *op);
  /// Builds the forward, loss and backward (of one batch, or of every
  /// microbatch in a loop); sets each parameter's gradient in `grads`
  /// (null: none) and returns the step's loss.
  FailureOr<Value> wholeBatch(ArrayRef<Operation *> forward, Value output,
                              Value labels, ArrayRef<Value> wrt,
                              MutableArrayRef<Value> grads);
  FailureOr<Value> microbatchLoop(ArrayRef<Operation *> forward,
                                  unsigned modelInputs, Value output,
                                  Value labels, ArrayRef<Value> wrt,
                                  MutableArrayRef<Value> grads);
  /// Activation checkpointing of one microbatch: the backward of a layer
  /// named by `recompute` reads a copy of the layer's forward made just
  /// before it, from what entered the layer, not the forward's values.
  /// `inputs` are the values the forward's inputs are read from.
  void recomputeLayers(ArrayRef<Operation *> forwardOps, ValueRange inputs);
  LogicalResult compileRecomputeGlobs();
  std::vector<llvm::GlobPattern> recomputeGlobs;
  Value clipGradients(Location loc);
  /// Whether the gradient norm is finite: with a loss scale, a step whose
  /// gradients overflowed keeps every parameter and state as it was.
  void checkFinite(Value norm, Location loc);
  void optimizerUpdate(Parameter &p, Location loc);
  Value variable(Parameter &p, StringRef suffix, RankedTensorType type);
  void eraseDeadOps();

  ModuleOp module;
  func::FuncOp func;
  const TrainConfig &config;
  /// Microbatches one batch is split into (a pipeline's), or 1.
  int64_t batchSplit;
  OpBuilder b;
  MLIRContext *ctx;
  PhaseTagger tagger;
  std::vector<Parameter> params;
  TrainingStepInfo info;
  /// New function results: (value, name, key it updates or "").
  struct Result {
    Value value;
    std::string name, updates;
  };
  std::vector<Result> results;
  std::map<std::string, Value> hyper;
  /// The clipping coefficient every gradient is scaled by (null: none).
  Value gradScale;
  /// With a loss scale: hyper.loss_scale, its reciprocal, and whether every
  /// gradient is finite (a scalar i1); null without one.
  Value lossScaleIn, inverseLossScale, gradsFinite;
  /// Each op of the model's forward by its place in it (where the loop
  /// moves the ops, the order the forward reads the parameters stays).
  DenseMap<Operation *, unsigned> forwardOrder;
  /// Gradient accumulation's loop (null: none).
  nn::MicrobatchLoopOp loop;
  /// The model's dropped-token fraction (null: it returns none), and its
  /// step value (the mean over the microbatches).
  Value dropped, droppedStep;
};

} // namespace

Value StepBuilder::addInput(StringRef name, Type type) {
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, b.getDictionaryAttr({}),
                            func.getLoc());
  func.setArgAttr(index, nn::kNameAttr, b.getStringAttr(name));
  return func.getArgument(index);
}

void StepBuilder::unifyWeights() { distopt::unifyWeights(func); }

Value StepBuilder::namedOutput(StringRef name) {
  Operation *ret = func.getBody().front().getTerminator();
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto n = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttr);
        n && n.getValue() == name)
      return ret->getOperand(i);
  return {};
}

FailureOr<Value> StepBuilder::findOutput() {
  Operation *ret = func.getBody().front().getTerminator();
  std::vector<std::string> names;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttr);
    std::string n = name ? name.str() : "output_" + std::to_string(i);
    if (n == config.output)
      return ret->getOperand(i);
    names.push_back(n);
  }
  return emitError(Location(config.loc))
         << "the training config's output '" << config.output
         << "' is not an output of the model; its outputs: "
         << llvm::join(names, ", ");
}

/// Compiles the globs of one config list; each must match something.
static FailureOr<std::vector<llvm::GlobPattern>>
compileGlobs(const std::vector<std::pair<std::string, LocationAttr>> &globs,
             StringRef what, ArrayRef<std::string> names) {
  std::vector<llvm::GlobPattern> out;
  for (const auto &[pattern, loc] : globs) {
    auto glob = llvm::GlobPattern::create(pattern, /*MaxSubPatterns=*/1024);
    if (!glob)
      return emitError(Location(loc))
             << "bad " << what << " pattern '" << pattern
             << "': " << llvm::toString(glob.takeError());
    if (llvm::none_of(names,
                      [&](const std::string &n) { return glob->match(n); }))
      return emitError(Location(loc))
             << what << " pattern '" << pattern
             << "' matches no initializer of the model";
    out.push_back(std::move(*glob));
  }
  return out;
}

LogicalResult StepBuilder::selectParameters() {
  std::vector<std::string> names;
  func.walk([&](nn::WeightOp w) { names.push_back(w.getName().str()); });
  auto frozen = compileGlobs(config.frozen, "frozen", names);
  auto noDecay = compileGlobs(config.noDecay, "no_decay", names);
  if (failed(frozen) || failed(noDecay))
    return failure();
  auto matches = [](std::vector<llvm::GlobPattern> &globs, StringRef name) {
    return llvm::any_of(globs,
                        [&](llvm::GlobPattern &g) { return g.match(name); });
  };
  // Frozen tensors the importer split off one stored initializer (merged by
  // the exporter, such as per-block copies of a mask buffer) never change:
  // they stay one tensor.
  std::map<std::tuple<std::string, int64_t, const void *>, nn::WeightOp>
      frozenAt;
  SmallVector<nn::WeightOp> frozenCopies;
  func.walk([&](nn::WeightOp w) {
    if (w.getWindowOffsets() || !matches(*frozen, w.getName()))
      return;
    auto key = std::make_tuple(w.getFile().str(), w.getOffset(),
                               w.getResult().getType().getAsOpaquePointer());
    auto [it, inserted] = frozenAt.try_emplace(key, w);
    if (!inserted) {
      w.getResult().replaceAllUsesWith(it->second.getResult());
      frozenCopies.push_back(w);
    }
  });
  for (nn::WeightOp w : frozenCopies)
    w.erase();
  // Their mixed-precision compute copies (dist-apply-precision's casts) are
  // one copy again too.
  func.walk([&](nn::WeightOp w) {
    std::map<const void *, nn::CastOp> castTo;
    for (Operation *user : llvm::make_early_inc_range(w->getUsers()))
      if (auto c = dyn_cast<nn::CastOp>(user)) {
        auto [it, inserted] = castTo.try_emplace(
            c.getType().getAsOpaquePointer(), c);
        if (!inserted && it->second != c) {
          if (c->isBeforeInBlock(it->second))
            std::swap(c, it->second);
          c.getResult().replaceAllUsesWith(it->second.getResult());
          c.erase();
        }
      }
  });
  func.walk([&](nn::WeightOp w) {
    if (!isa<FloatType>(w.getResult().getType().getElementType()) ||
        matches(*frozen, w.getName()))
      return;
    Parameter p{w, nn::getPersistentKey(w)};
    p.decays = !matches(*noDecay, w.getName());
    params.push_back(p);
  });
  if (params.empty())
    return emitError(Location(config.loc))
           << "nothing to train: every float initializer is frozen";
  return success();
}

std::pair<Value, Value> StepBuilder::crossEntropy(Value logits, Value labels,
                                                  double seedScale,
                                                  Value globalCount) {
  // loss = sum over valid positions of (log sum exp(z) - z[label]) / count,
  // z = logits - max; d loss / d logits = (softmax - onehot) * valid / count.
  // Every reduction runs over the vocabulary, so logits split over it (a
  // vocabulary-parallel head) stay split: only per-position scalars are
  // reduced across devices.
  Location loc = logits.getLoc();
  nn::GradientBuilder g = gb(loc);
  auto t = cast<RankedTensorType>(logits.getType());
  Type f = t.getElementType();
  int64_t rank = t.getRank(), vocab = t.getShape().back();
  SmallVector<int64_t> allAxes;
  for (int64_t d = 0; d < rank; ++d)
    allAxes.push_back(d);
  Value m = nn::ReduceMaxOp::create(
      b, loc, logits, b.getDenseI64ArrayAttr({rank - 1}), b.getUnitAttr());
  Value z = g.create<nn::SubOp>(logits, m);
  Value e = g.create<nn::ExpOp>(z);
  Value s = g.reduceSum(e, {rank - 1}, /*keepdims=*/true);
  Value lse = g.create<nn::LogOp>(s);
  auto labelType = cast<RankedTensorType>(labels.getType());
  SmallVector<int64_t> keptShape(labelType.getShape());
  keptShape.push_back(1);
  Value lab = g.reshape(labels, labelType.clone(keptShape));
  SmallVector<int64_t> ids(vocab);
  for (int64_t i = 0; i < vocab; ++i)
    ids[i] = i;
  auto idType = RankedTensorType::get({vocab}, labelType.getElementType());
  Value iota = nn::ConstantOp::create(
      b, loc, idType, DenseElementsAttr::get(idType, ArrayRef<int64_t>(ids)));
  Value onehot = g.create<nn::EqualOp>(lab, iota);
  Value zero = g.scalar(0.0, f);
  Value zLabel = g.reduceSum(g.create<nn::WhereOp>(onehot, z, zero), {rank - 1},
                             /*keepdims=*/true);
  Value nll = g.create<nn::SubOp>(lse, zLabel);
  Value valid = validMask(g, lab, f);
  Value count = globalCount ? globalCount
                            : g.reduceSum(valid, allAxes, /*keepdims=*/false);
  Value loss = g.create<nn::DivOp>(
      g.reduceSum(g.create<nn::MulOp>(nll, valid), allAxes, false), count);
  // (softmax - onehot) * weight as three passes over the logits' shape:
  // softmax * weight = e * (weight / s) reuses exp(z) (a per-position
  // factor, no second exp), and the label's entry takes off weight.
  Value weight = g.create<nn::DivOp>(valid, count);
  if (seedScale != 1.0)
    weight = g.create<nn::MulOp>(weight, g.scalar(seedScale, f));
  weight = scaleSeed(g, weight);
  Value scaled = g.create<nn::MulOp>(e, g.create<nn::DivOp>(weight, s));
  Value grad = g.create<nn::WhereOp>(
      onehot, g.create<nn::SubOp>(scaled, weight), scaled);
  return {loss, grad};
}

std::pair<Value, Value> StepBuilder::meanSquaredError(Value out, Value target,
                                                      double seedScale) {
  Location loc = out.getLoc();
  nn::GradientBuilder g = gb(loc);
  auto t = cast<RankedTensorType>(out.getType());
  SmallVector<int64_t> allAxes;
  for (int64_t d = 0; d < t.getRank(); ++d)
    allAxes.push_back(d);
  Value d = g.create<nn::SubOp>(out, target);
  Value loss = g.reduceMean(g.create<nn::MulOp>(d, d), allAxes, false);
  double n = static_cast<double>(t.getNumElements());
  Value grad = g.create<nn::MulOp>(
      d, scaleSeed(g, g.scalar(2.0 / n * seedScale, t.getElementType())));
  return {loss, grad};
}

static StringRef lossName(LossSpec::Kind kind) {
  switch (kind) {
  case LossSpec::Kind::CrossEntropy:
    return "cross_entropy";
  case LossSpec::Kind::MeanSquaredError:
    return "mse";
  case LossSpec::Kind::ModelOutput:
    return "model";
  }
  return "";
}

std::pair<Value, Value> StepBuilder::modelOutputLoss(Value out,
                                                     double seedScale) {
  nn::GradientBuilder g = gb(out.getLoc());
  auto t = cast<RankedTensorType>(out.getType());
  Value loss = g.reshape(out, RankedTensorType::get({}, t.getElementType()));
  Value seed = nn::ConstantOp::create(
      b, out.getLoc(), t,
      DenseElementsAttr::get(t, FloatAttr::get(t.getElementType(), seedScale)));
  return {loss, scaleSeed(g, seed)};
}

Value StepBuilder::validMask(nn::GradientBuilder &g, Value labels, Type f) {
  Type id = cast<RankedTensorType>(labels.getType()).getElementType();
  Value ignored = g.create<nn::EqualOp>(
      labels, g.scalar(static_cast<double>(config.loss.ignoreIndex), id));
  return g.castLike(g.create<nn::NotOp>(ignored), f);
}

Value StepBuilder::validLabels(ArrayRef<Value> labels, Type f) {
  nn::GradientBuilder g = gb(func.getLoc());
  Value total;
  for (Value lab : labels) {
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < cast<RankedTensorType>(lab.getType()).getRank();
         ++d)
      axes.push_back(d);
    Value n = g.reduceSum(validMask(g, lab, f), axes, /*keepdims=*/false);
    total = total ? g.create<nn::AddOp>(total, n) : n;
  }
  return total;
}

/// The values that depend on `roots` (the inputs), walking `ops` in order
/// (what does not is shared by every microbatch: weights, constants, their
/// transposes).
static llvm::DenseSet<Value> inputDependent(ValueRange roots,
                                            ArrayRef<Operation *> ops) {
  llvm::DenseSet<Value> dependent(roots.begin(), roots.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return dependent.contains(v); }))
      dependent.insert(op->getResults().begin(), op->getResults().end());
  return dependent;
}

std::pair<Value, Value> StepBuilder::loss(Value out, Value labels,
                                          double seedScale, Value count) {
  switch (config.loss.kind) {
  case LossSpec::Kind::CrossEntropy:
    return crossEntropy(out, labels, seedScale, count);
  case LossSpec::Kind::MeanSquaredError:
    return meanSquaredError(out, labels, seedScale);
  case LossSpec::Kind::ModelOutput:
    return modelOutputLoss(out, seedScale);
  }
  llvm_unreachable("unknown loss kind");
}

std::string StepBuilder::recomputeLayer(Operation *op) {
  for (const std::string &prefix : nn::getNodeModulePrefixes(op))
    for (llvm::GlobPattern &g : recomputeGlobs)
      if (g.match(prefix))
        return prefix;
  return "";
}

LogicalResult StepBuilder::compileRecomputeGlobs() {
  for (const auto &[pattern, loc] : config.recompute) {
    auto glob = llvm::GlobPattern::create(pattern, /*MaxSubPatterns=*/1024);
    if (!glob)
      return emitError(Location(loc))
             << "bad recompute pattern '" << pattern
             << "': " << llvm::toString(glob.takeError());
    // It must name a layer of the model.
    WalkResult found = func.walk([&](Operation *op) {
      for (const std::string &prefix : nn::getNodeModulePrefixes(op))
        if (glob->match(prefix))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (!found.wasInterrupted())
      return emitError(Location(loc))
             << "recompute pattern '" << pattern
             << "' matches no layer of the model (layers are module paths "
                "of node names, e.g. h.0 for '/h.0/attn/MatMul')";
    recomputeGlobs.push_back(std::move(*glob));
  }
  return success();
}

void StepBuilder::recomputeLayers(ArrayRef<Operation *> forwardOps,
                                  ValueRange inputs) {
  if (recomputeGlobs.empty())
    return;
  OpBuilder::InsertionGuard guard(b);
  // Only what depends on the inputs is recomputed (weights and their
  // transposes are kept); the forward reads nothing computed after it.
  llvm::DenseSet<Value> dependent = inputDependent(inputs, forwardOps);
  std::map<std::string, SmallVector<Operation *>> layers;
  for (Operation *op : forwardOps)
    if (op->getNumResults() && dependent.contains(op->getResult(0)))
      if (std::string layer = recomputeLayer(op); !layer.empty())
        layers[layer].push_back(op);
  for (auto &[layer, ops] : layers) {
    // The backward of this layer: its ops carry the forward ops' names.
    SmallVector<OpOperand *> uses;
    Operation *first = nullptr;
    for (Operation *op : ops)
      for (OpOperand &use : op->getUses()) {
        Operation *user = use.getOwner();
        auto phase = user->getAttrOfType<StringAttr>(nn::kPhaseAttr);
        if (!phase || phase.getValue() != "backward" ||
            recomputeLayer(user) != layer)
          continue;
        uses.push_back(&use);
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
    if (uses.empty())
      continue;
    // The copy, in forward order, reading what entered the layer.
    b.setInsertionPoint(first);
    IRMapping map;
    for (Operation *op : ops)
      b.clone(*op, map);
    for (OpOperand *use : uses)
      use->set(map.lookup(use->get()));
  }
}

/// The global gradient norm (every gradient, every shard: a cross-device
/// sum when gradients are split), and torch's clip_grad_norm_ scaling.
Value StepBuilder::clipGradients(Location loc) {
  nn::GradientBuilder g = gb(loc);
  // Summed in the order the forward first reads the parameters, so a
  // pipeline adds each stage's share before passing the sum on.
  auto firstRead = [&](const Parameter &p) {
    unsigned first = std::numeric_limits<unsigned>::max();
    for (Operation *user : p.weight->getUsers())
      if (auto it = forwardOrder.find(user); it != forwardOrder.end())
        first = std::min(first, it->second);
    return first;
  };
  std::vector<Parameter *> ordered;
  for (Parameter &p : params)
    ordered.push_back(&p);
  llvm::stable_sort(ordered, [&](Parameter *a, Parameter *b) {
    return firstRead(*a) < firstRead(*b);
  });
  Value sum;
  for (Parameter *pp : ordered) {
    Parameter &p = *pp;
    auto t = cast<RankedTensorType>(p.grad.getType());
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < t.getRank(); ++d)
      axes.push_back(d);
    Value sq = g.reduceSum(g.create<nn::MulOp>(p.grad, p.grad), axes, false);
    sum = sum ? g.create<nn::AddOp>(sum, sq) : sq;
  }
  Value norm = g.create<nn::SqrtOp>(sum);
  if (!config.clipGradNorm)
    return norm;
  Type f = cast<RankedTensorType>(norm.getType()).getElementType();
  Value coef =
      g.create<nn::DivOp>(g.scalar(*config.clipGradNorm, f),
                          g.create<nn::AddOp>(norm, g.scalar(1e-6, f)));
  // Each parameter's update scales its gradient by this (torch scales every
  // gradient by it, also when it is 1).
  gradScale = g.create<nn::MinOp>(coef, g.scalar(1.0, f));
  return norm;
}

Value StepBuilder::scaleSeed(nn::GradientBuilder &g, Value seed) {
  if (!lossScaleIn)
    return seed;
  return g.create<nn::MulOp>(seed,
                             g.castLike(lossScaleIn, getElementTypeOrSelf(seed)));
}

Value StepBuilder::unscale(Value grad, Location loc) {
  if (!lossScaleIn)
    return grad;
  nn::GradientBuilder g = gb(loc);
  Type f = getElementTypeOrSelf(grad);
  // One reciprocal, then a multiply per gradient (GradScaler's and
  // Megatron's unscale; exact for the powers of two a scaler uses).
  if (!inverseLossScale)
    inverseLossScale = g.create<nn::DivOp>(g.scalar(1.0, f),
                                           g.castLike(lossScaleIn, f));
  return g.create<nn::MulOp>(grad, inverseLossScale);
}

Value StepBuilder::narrowForReduce(Value grad, StringRef key, Location loc) {
  const std::string &reduce = config.precision.reduce;
  if (reduce == "f32")
    return grad;
  Type narrow = reduce == "bf16" ? Type(b.getBF16Type()) : Type(b.getF16Type());
  Attribute of = b.getStringAttr(key);
  // Without microbatches a bf16 parameter's gradient already is the
  // widening of its bf16 gradient: the reduction goes before that cast.
  if (auto c = grad.getDefiningOp<nn::CastOp>();
      c && getElementTypeOrSelf(c.getInput()) == narrow && c->hasOneUse()) {
    c->setAttr(nn::kNarrowReduceOfAttr, of);
    return grad;
  }
  // Otherwise (a microbatch loop's f32 sum, an f32-computing parameter's
  // gradient) it is rounded once, reduced once and widened again: the
  // microbatches still add up in f32, as Megatron's main grads do.
  nn::GradientBuilder g = gb(loc);
  Value low = g.castLike(grad, narrow);
  low.getDefiningOp()->setAttr(nn::kNarrowReduceOfAttr, of);
  Value wide = g.castLike(low, getElementTypeOrSelf(grad));
  wide.getDefiningOp()->setAttr(nn::kNarrowReduceOfAttr, of);
  return wide;
}

void StepBuilder::checkFinite(Value norm, Location loc) {
  if (!lossScaleIn)
    return;
  // The global norm is already summed over every gradient on every rank of
  // every axis, so each rank takes the same decision: it is finite exactly
  // when every (unscaled) gradient is (or an f32 sum of squares of finite
  // gradients overflows, which no f16 model reaches).
  nn::GradientBuilder g = gb(loc);
  gradsFinite = g.create<nn::LessOp>(
      norm, g.scalar(std::numeric_limits<double>::infinity(),
                     getElementTypeOrSelf(norm)));
}

Value StepBuilder::variable(Parameter &p, StringRef suffix,
                            RankedTensorType type) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  std::string name = p.key + "/" + suffix.str();
  auto v = nn::VariableOp::create(b, p.weight->getLoc(), type,
                                  b.getStringAttr(name));
  v->setAttr(nn::kStateOfAttr, b.getStringAttr(p.key));
  info.states.push_back(name);
  return v.getResult();
}

void StepBuilder::optimizerUpdate(Parameter &p, Location loc) {
  nn::GradientBuilder g = gb(loc);
  const OptimizerSpec &o = config.optimizer;
  // The update computes in f32; a bf16 parameter (`master: bf16`) is read
  // widened and its new value rounded back.
  Value storedW = p.weight->getResult(0);
  Type f = b.getF32Type();
  Value w = g.castLike(storedW, f);
  auto type = cast<RankedTensorType>(w.getType());
  auto c = [&](double v) { return g.scalar(v, f); };
  Value lr = g.castLike(hyper.at(kLrInput.str()), f);
  double wd = p.decays ? o.weightDecay : 0.0;
  // A step whose gradients overflowed writes back what it read.
  auto update = [&](Value next, Value old, StringRef key) {
    if (gradsFinite)
      next = g.create<nn::WhereOp>(gradsFinite, next, old);
    results.push_back({next, "update:" + key.str(), key.str()});
  };
  Value scale = gradScale ? g.castLike(gradScale, f) : c(1.0);
  // `precision.optimizer_state: bf16`: the states are stored in bf16, read
  // widened to f32, updated there and rounded back.
  RankedTensorType stateType = config.precision.optimizerState == "bf16"
                                   ? type.clone(b.getBF16Type())
                                   : type;
  auto stored = [&](Value next, Value state) {
    return g.castLike(next, getElementTypeOrSelf(state));
  };
  // One fused op per parameter where its state exists (Adam, AdamW, SGD
  // with momentum): a few thousand ops for a 70B-shaped model instead of
  // tens of thousands, and one pass over the parameter at run time.
  if (o.kind != OptimizerSpec::Kind::SGD) {
    Value m = variable(p, "exp_avg", stateType);
    Value v = variable(p, "exp_avg_sq", stateType);
    bool decoupled = o.kind == OptimizerSpec::Kind::AdamW;
    Value paramScale = decoupled && wd != 0
                           ? g.castLike(hyper.at(kDecayInput.str()), f)
                           : c(1.0);
    OpBuilder &b = g.builder();
    auto op = nn::AdamUpdateOp::create(
        b, loc, type, type, type, /*new_param_copy=*/Type(), w, p.grad,
        g.castLike(m, f), g.castLike(v, f), scale, paramScale,
        g.castLike(hyper.at(kStepSizeInput.str()), f),
        g.castLike(hyper.at(kBiasCorrection2SqrtInput.str()), f),
        b.getF64FloatAttr(o.beta1), b.getF64FloatAttr(o.beta2),
        b.getF64FloatAttr(o.eps), b.getF64FloatAttr(decoupled ? 0.0 : wd));
    update(stored(op.getNewExpAvg(), m), m, p.key + "/exp_avg");
    update(stored(op.getNewExpAvgSq(), v), v, p.key + "/exp_avg_sq");
    update(stored(op.getNewParam(), storedW), storedW, p.key);
    return;
  }
  if (o.momentum != 0) {
    Value buf = variable(p, "momentum_buffer", stateType);
    OpBuilder &b = g.builder();
    auto op = nn::SgdUpdateOp::create(
        b, loc, type, type, w, p.grad, g.castLike(buf, f), scale, lr,
        b.getF64FloatAttr(o.momentum), b.getF64FloatAttr(wd),
        b.getBoolAttr(o.nesterov));
    update(stored(op.getNewMomentumBuffer(), buf), buf,
           p.key + "/momentum_buffer");
    update(stored(op.getNewParam(), storedW), storedW, p.key);
    return;
  }
  // Plain SGD (no state): p += -lr * (g * scale + wd * p).
  Value grad = p.grad;
  if (gradScale)
    grad = g.create<nn::MulOp>(grad, scale);
  if (wd != 0)
    grad = g.create<nn::AddOp>(grad, g.create<nn::MulOp>(w, c(wd)));
  Value nextW = g.create<nn::AddOp>(
      w, g.create<nn::MulOp>(g.create<nn::NegOp>(lr), grad));
  update(stored(nextW, storedW), storedW, p.key);
}

void StepBuilder::eraseDeadOps() {
  SmallVector<Block *> blocks{&func.getBody().front()};
  if (loop)
    blocks.push_back(&loop.getBody().front());
  bool changed = true;
  while (changed) {
    changed = false;
    for (Block *body : blocks)
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body))) {
        if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty() ||
            !isa<nn::NNDialect>(op.getDialect()))
          continue;
        op.erase();
        changed = true;
      }
  }
}

/// One batch, no microbatches: forward, loss and backward once.
FailureOr<Value> StepBuilder::wholeBatch(ArrayRef<Operation *> forward,
                                         Value output, Value labels,
                                         ArrayRef<Value> wrt,
                                         MutableArrayRef<Value> grads) {
  setPhase("loss");
  auto [l, seed] = loss(output, labels, 1.0, {});
  setPhase("backward");
  auto g = buildGradients(b, {{output, seed}}, wrt);
  if (failed(g))
    return failure();
  recomputeLayers(forward, func.getArguments());
  for (auto [grad, gk] : llvm::zip(grads, *g))
    grad = gk;
  droppedStep = dropped;
  return l;
}

/// The terms of a gradient the backward summed inside the loop body: a
/// parameter read in several places (a tied embedding and head, on two
/// pipeline stages) keeps one running sum per place, so that each stage
/// sums its own share over the microbatches and the shares are added once.
static SmallVector<Value> gradientTerms(Value g, Block *body) {
  SmallVector<Value> terms, work{g};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    auto add = v.getDefiningOp<nn::AddOp>();
    auto phase = add ? add->getAttrOfType<StringAttr>(nn::kPhaseAttr)
                     : StringAttr();
    if (add && add->getBlock() == body && phase &&
        phase.getValue() == "backward" &&
        add.getLhs().getType() == v.getType() &&
        add.getRhs().getType() == v.getType()) {
      work.push_back(add.getRhs());
      work.push_back(add.getLhs());
      continue;
    }
    terms.push_back(v);
  }
  return terms;
}

/// Gradient accumulation and a pipeline's microbatches: one copy of the
/// forward, loss and backward in an nn.microbatch_loop that runs once per
/// microbatch and sums the gradients and the losses. What does not read
/// the inputs (constants, the weights' transposes) stays before the loop
/// and is computed once. A pipeline's stages later cut the body into the
/// actions their schedule interleaves (dist-cut-pipeline-stages).
FailureOr<Value> StepBuilder::microbatchLoop(ArrayRef<Operation *> forward,
                                             unsigned modelInputs, Value output,
                                             Value labels, ArrayRef<Value> wrt,
                                             MutableArrayRef<Value> grads) {
  const int64_t micro = std::max(config.accumulationSteps, batchSplit);
  Location loc = output.getLoc();
  // Every input once per microbatch: the model's own for microbatch 0,
  // "<name>.mb<j>" for the others.
  SmallVector<Value> roots;
  std::vector<SmallVector<Value>> candidates;
  for (unsigned i = 0; i < modelInputs; ++i) {
    roots.push_back(func.getArgument(i));
    candidates.push_back({func.getArgument(i)});
  }
  SmallVector<Value> labelCandidates{labels};
  if (labels)
    for (int64_t j = 1; j < micro; ++j)
      labelCandidates.push_back(
          addInput(microbatchInputName(kLabelsInput, j), labels.getType()));
  for (int64_t j = 1; j < micro; ++j)
    for (unsigned i = 0; i < modelInputs; ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, nn::kNameAttr);
      std::string base = name ? name.str() : "input_" + std::to_string(i);
      candidates[i].push_back(addInput(microbatchInputName(base, j),
                                       func.getArgument(i).getType()));
    }
  // A batch split into a pipeline's microbatches must give the whole
  // batch's loss: cross-entropy divides by the valid labels of all of them
  // (counted once, before the loop); equal-sized means average.
  Value globalCount;
  if (batchSplit > 1 && config.loss.kind == LossSpec::Kind::CrossEntropy) {
    setPhase("loss");
    globalCount = validLabels(
        labelCandidates,
        cast<RankedTensorType>(output.getType()).getElementType());
  }
  const double seedScale =
      globalCount ? 1.0 : 1.0 / static_cast<double>(micro);

  // The body: the microbatch's inputs, then the forward ops that read them,
  // built in a loop without results until the sums' types are known.
  Operation *ret = &*b.getInsertionPoint();
  auto building = nn::MicrobatchLoopOp::create(b, loc, TypeRange{}, micro,
                                               nullptr, nullptr);
  Block *body = new Block();
  building.getBody().push_back(body);
  Value index =
      body->addArgument(RankedTensorType::get({}, b.getI64Type()), loc);
  b.setInsertionPointToEnd(body);
  tagger.phase = {};
  SmallVector<Value> selected;
  for (auto [i, c] : llvm::enumerate(candidates))
    selected.push_back(nn::MicrobatchSelectOp::create(
        b, func.getArgument(i).getLoc(), c.front().getType(), index, c));
  llvm::DenseSet<Value> dependent = inputDependent(roots, forward);
  SmallVector<Operation *> bodyOps;
  for (Operation *op : forward)
    if (op->getNumResults() && dependent.contains(op->getResult(0))) {
      op->moveBefore(body, body->end());
      bodyOps.push_back(op);
    }
  for (auto [root, sel] : llvm::zip(roots, selected))
    root.replaceUsesWithIf(sel, [&](OpOperand &use) {
      return use.getOwner()->getBlock() == body &&
             !isa<nn::MicrobatchSelectOp>(use.getOwner());
    });
  Value lab;
  if (labels)
    lab = nn::MicrobatchSelectOp::create(b, labels.getLoc(), labels.getType(),
                                         index, labelCandidates);

  setPhase("loss");
  auto [l, seed] = loss(output, lab, seedScale, globalCount);
  setPhase("backward");
  // A pipeline keeps each term of a tied parameter's gradient apart
  // (gradientTerms); a lookup's term is not scattered into another.
  auto g = buildGradients(b, {{output, seed}}, wrt,
                          /*scatterLookups=*/batchSplit <= 1);
  if (failed(g))
    return failure();
  recomputeLayers(bodyOps, selected);
  // Per gradient, its yields: one, or (a pipeline's) one per term.
  SmallVector<Value> yielded;
  SmallVector<unsigned> termsOf;
  for (Value gk : *g) {
    if (!gk)
      continue;
    SmallVector<Value> terms =
        batchSplit > 1 ? gradientTerms(gk, body) : SmallVector<Value>{gk};
    // The microbatches' gradients add up in f32, also those of bf16
    // parameters (`master: bf16`).
    for (Value &term : terms)
      term = gb(term.getLoc()).castLike(term, b.getF32Type());
    yielded.append(terms.begin(), terms.end());
    termsOf.push_back(terms.size());
  }
  yielded.push_back(l);
  if (dropped)
    yielded.push_back(dropped);
  nn::MicrobatchYieldOp::create(b, loc, yielded);

  b.setInsertionPoint(ret);
  SmallVector<Type> types;
  for (Value v : yielded)
    types.push_back(v.getType());
  loop = nn::MicrobatchLoopOp::create(b, loc, types, micro, nullptr, nullptr);
  loop.getBody().takeBody(building.getBody());
  building.erase();
  unsigned k = 0, t = 0;
  setPhase("backward");
  for (auto [grad, gk] : llvm::zip(grads, *g)) {
    if (!gk)
      continue;
    for (unsigned term = 0; term < termsOf[t]; ++term) {
      Value sum = loop.getResult(k++);
      grad = grad ? gb(sum.getLoc()).create<nn::AddOp>(grad, sum) : sum;
    }
    ++t;
  }
  setPhase("loss");
  nn::GradientBuilder gl = gb(loc);
  if (dropped)
    droppedStep = gl.create<nn::MulOp>(
        loop.getResult(k + 1),
        gl.scalar(1.0 / static_cast<double>(micro),
                  getElementTypeOrSelf(loop.getResult(k + 1).getType())));
  Value sum = loop.getResult(k);
  if (seedScale == 1.0)
    return sum;
  return gl.create<nn::MulOp>(
      sum, gl.scalar(seedScale, getElementTypeOrSelf(sum.getType())));
}

FailureOr<TrainingStepInfo> StepBuilder::run() {
  unifyWeights();
  FailureOr<Value> output = findOutput();
  if (failed(output) || failed(selectParameters()) ||
      failed(compileRecomputeGlobs()))
    return failure();
  auto outType = dyn_cast<RankedTensorType>(output->getType());
  bool modelLoss = config.loss.kind == LossSpec::Kind::ModelOutput;
  if (modelLoss && (!outType || !isa<FloatType>(outType.getElementType()) ||
                    outType.getNumElements() != 1))
    return emitError(Location(config.loc))
           << "output '" << config.output
           << "' must be a float scalar to be the loss (loss kind model), it "
              "is "
           << output->getType();
  if (!modelLoss && outType && isa<FloatType>(outType.getElementType()) &&
      outType.getRank() == 0)
    return emitError(Location(config.loc))
           << "output '" << config.output << "' is a scalar, not something a "
           << lossName(config.loss.kind)
           << " loss reads; if it is the loss the model computes, say loss: "
              "{kind: model}";
  if (!modelLoss && (!outType || !isa<FloatType>(outType.getElementType()) ||
                     outType.getRank() == 0))
    return emitError(Location(config.loc))
           << "output '" << config.output
           << "' must be a float tensor of rank 1 or more for a loss, it is "
           << output->getType();
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto name = func.getArgAttrOfType<StringAttr>(i, nn::kNameAttr);
        !modelLoss && name && name.getValue() == kLabelsInput)
      return emitError(Location(config.loc))
             << "the model already has an input named '" << kLabelsInput
             << "'; if its output '" << config.output
             << "' is the loss, say loss: {kind: model}";

  if (config.loss.kind == LossSpec::Kind::CrossEntropy)
    info.classes = outType.getShape().back();
  // A mixture of experts' dropped-token fraction, when the model returns
  // one (a float scalar). A pipeline's stages would each hold a part of it;
  // it is left out there.
  if (config.output != kDroppedTokensOutput && batchSplit == 1)
    if (Value v = namedOutput(kDroppedTokensOutput)) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (type && type.getNumElements() == 1 &&
          isa<FloatType>(type.getElementType()))
        dropped = v;
    }
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  Location loc = ret->getLoc();
  b.setInsertionPoint(ret);
  // The forward as the model has it.
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  unsigned modelInputs = func.getNumArguments();

  // Labels, and the per-step hyper-parameters.
  Value labels;
  if (config.loss.kind == LossSpec::Kind::CrossEntropy)
    labels = addInput(
        kLabelsInput,
        RankedTensorType::get(outType.getShape().drop_back(), b.getI64Type()));
  else if (!modelLoss)
    labels = addInput(kLabelsInput, outType);
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  hyper[kLrInput.str()] = addInput(kLrInput, scalarType);
  if (config.optimizer.kind != OptimizerSpec::Kind::SGD) {
    hyper[kStepSizeInput.str()] = addInput(kStepSizeInput, scalarType);
    hyper[kBiasCorrection2SqrtInput.str()] =
        addInput(kBiasCorrection2SqrtInput, scalarType);
    if (config.optimizer.kind == OptimizerSpec::Kind::AdamW)
      hyper[kDecayInput.str()] = addInput(kDecayInput, scalarType);
  }
  if (config.precision.lossScale != PrecisionPolicy::LossScale::None)
    lossScaleIn = hyper[kLossScaleInput.str()] =
        addInput(kLossScaleInput, scalarType);

  // Microbatches (accumulation's or a pipeline's) run one copy of the
  // forward, loss and backward in a loop; the gradients add up.
  if (batchSplit > 1 && config.accumulationSteps > 1)
    return emitError(Location(config.loc))
           << "gradient_accumulation_steps: " << config.accumulationSteps
           << " together with a pipeline's " << batchSplit
           << " microbatches; a pipeline already accumulates over its "
              "microbatches, so set only pipeline.microbatches";
  const int64_t micro = std::max(config.accumulationSteps, batchSplit);
  for (auto [i, op] : llvm::enumerate(forward))
    forwardOrder[op] = i;
  SmallVector<Value> wrt;
  for (Parameter &p : params)
    wrt.push_back(p.weight->getResult(0));
  SmallVector<Value> grads(wrt.size());
  FailureOr<Value> stepLoss =
      micro > 1
          ? microbatchLoop(forward, modelInputs, *output, labels, wrt, grads)
          : wholeBatch(forward, *output, labels, wrt, grads);
  if (failed(stepLoss))
    return failure();
  Value loss = *stepLoss;

  setPhase("backward");
  std::vector<Parameter> trained;
  for (auto [p, grad] : llvm::zip(params, grads)) {
    if (!grad) {
      info.untouched.push_back(p.key);
      continue;
    }
    // The parameter's final gradient, marked for plans (ZeRO level 2 keeps
    // it split).
    // A loop's sum is marked where the body computed it.
    Location gradLoc = grad.getLoc();
    if (auto sum = dyn_cast<OpResult>(grad);
        loop && sum && sum.getOwner() == loop)
      gradLoc = loop.getYielded()[sum.getResultNumber()].getLoc();
    // A bf16 parameter's (`master: bf16`) gradient is clipped and applied
    // in f32 like any other.
    grad = gb(gradLoc).castLike(grad, b.getF32Type());
    grad = unscale(narrowForReduce(grad, p.key, gradLoc), gradLoc);
    p.grad = nn::IdentityOp::create(b, gradLoc, grad);
    p.grad.getDefiningOp()->setAttr(nn::kGradientOfAttr,
                                    b.getStringAttr(p.key));
    trained.push_back(p);
    info.parameters.push_back(p.key);
  }
  params = std::move(trained);
  if (params.empty())
    return emitError(Location(config.loc))
           << "no trainable parameter affects output '" << config.output << "'";

  setPhase("optimizer");
  Value gradNorm = clipGradients(loc);
  checkFinite(gradNorm, loc);
  for (Parameter &p : params)
    optimizerUpdate(p, loc);

  // The step's results: loss, gradient norm, (whether the gradients were
  // finite,) (the dropped-token fraction,) then every update.
  SmallVector<Value> values{loss, gradNorm};
  SmallVector<DictionaryAttr> attrs{
      b.getDictionaryAttr(
          {b.getNamedAttr(nn::kNameAttr, b.getStringAttr(kLossOutput))}),
      b.getDictionaryAttr(
          {b.getNamedAttr(nn::kNameAttr, b.getStringAttr(kGradNormOutput))})};
  if (gradsFinite) {
    values.push_back(gb(loc).castLike(gradsFinite, b.getF32Type()));
    attrs.push_back(b.getDictionaryAttr({b.getNamedAttr(
        nn::kNameAttr, b.getStringAttr(kGradsFiniteOutput))}));
  }
  if (droppedStep) {
    values.push_back(droppedStep);
    attrs.push_back(b.getDictionaryAttr({b.getNamedAttr(
        nn::kNameAttr, b.getStringAttr(kDroppedTokensOutput))}));
  }
  for (const Result &r : results) {
    values.push_back(r.value);
    attrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(nn::kNameAttr, b.getStringAttr(r.name)),
         b.getNamedAttr(nn::kUpdatesAttr, b.getStringAttr(r.updates))}));
  }
  b.setListener(nullptr);
  func::ReturnOp::create(b, loc, values);
  ret->erase();
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), types));
  func.setAllResultAttrs(attrs);
  eraseDeadOps();
  info.microbatches = micro;
  info.batchSplit = batchSplit;
  return info;
}

FailureOr<TrainingStepInfo>
distopt::buildTrainingStep(ModuleOp module, const TrainConfig &config,
                           int64_t batchSplit) {
  func::FuncOp func = stepFunction(module);
  if (!func)
    return module.emitError("a training step is built from the function "
                            "@main (or the module's only function)");
  FailureOr<TrainingStepInfo> info =
      StepBuilder(module, func, config, batchSplit).run();
  // A frozen parameter (a LoRA base, an attention mask) has no master to
  // keep: where the policy casts it, it is loaded in the compute dtype.
  if (succeeded(info) && config.precision.mixed()) {
    std::set<std::string> trained(info->parameters.begin(),
                                  info->parameters.end());
    loadWeightsNarrow(func, [&](Operation *w) {
      return trained.count(nn::getPersistentKey(w)) > 0;
    });
  }
  return info;
}

std::vector<std::pair<std::string, double>>
distopt::hyperParameters(const TrainConfig &config, int64_t step) {
  const OptimizerSpec &o = config.optimizer;
  double lr = config.schedule.at(step, o.lr, config.steps);
  std::vector<std::pair<std::string, double>> out{{kLrInput.str(), lr}};
  if (o.kind == OptimizerSpec::Kind::SGD)
    return out;
  // torch computes these in double from the 1-based step count.
  double t = static_cast<double>(step + 1);
  double bc1 = 1.0 - std::pow(o.beta1, t), bc2 = 1.0 - std::pow(o.beta2, t);
  out.push_back({kStepSizeInput.str(), lr / bc1});
  out.push_back({kBiasCorrection2SqrtInput.str(), std::sqrt(bc2)});
  if (o.kind == OptimizerSpec::Kind::AdamW)
    out.push_back({kDecayInput.str(), 1.0 - lr * o.weightDecay});
  return out;
}

/// One nn.weight op per stored tensor (or window of one): a parameter read
/// in several places is one parameter with one gradient.
void distopt::unifyWeights(func::FuncOp func) {
  std::map<std::pair<std::string, const void *>, nn::WeightOp> first;
  SmallVector<nn::WeightOp> dup;
  func.walk([&](nn::WeightOp w) {
    auto key =
        std::make_pair(nn::getPersistentKey(w) + "@" + w.getFile().str() + ":" +
                           std::to_string(w.getOffset()),
                       w.getResult().getType().getAsOpaquePointer());
    auto [it, inserted] = first.try_emplace(key, w);
    if (!inserted) {
      w.getResult().replaceAllUsesWith(it->second.getResult());
      dup.push_back(w);
    }
  });
  for (nn::WeightOp w : dup)
    w.erase();
}

func::FuncOp distopt::stepFunction(ModuleOp module) {
  if (func::FuncOp main = module.lookupSymbol<func::FuncOp>("main"))
    return main;
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1)
    return {};
  return *funcs.begin();
}

std::string distopt::microbatchInputName(StringRef name, int64_t j) {
  return j == 0 ? name.str() : (name + ".mb" + Twine(j)).str();
}

std::pair<std::string, int64_t>
distopt::splitMicrobatchInputName(StringRef name, int64_t microbatches) {
  size_t dot = name.rfind(".mb");
  int64_t j = 0;
  if (microbatches > 1 && dot != StringRef::npos &&
      !name.drop_front(dot + 3).getAsInteger(10, j) && j > 0 &&
      j < microbatches)
    return {name.take_front(dot).str(), j};
  return {name.str(), 0};
}

bool distopt::isTrainingStep(ModuleOp module) {
  bool found = false;
  module.walk([&](func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      found |= static_cast<bool>(func.getResultAttr(i, nn::kUpdatesAttr));
  });
  return found;
}

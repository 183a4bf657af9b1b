//===- Precision.cpp - a mixed-precision policy as casts in the forward ---===//
//
// Runs on the forward model, before the training step is built: the
// backward of each cast (nn.cast's gradient is a cast back) then gives the
// f32 parameters f32 gradients, which accumulate over microbatches, are
// clipped and update the f32 masters in f32, as Megatron's main grads and
// FSDP2's MixedPrecisionPolicy do. See docs/training.md, "Mixed precision".
//
//===----------------------------------------------------------------------===//
#include "distopt/Training/Passes.h"
#include "distopt/Training/TrainingStep.h"

#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Plan/Plan.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/GlobPattern.h"

namespace distopt {
#define GEN_PASS_DEF_DISTAPPLYPRECISION
#include "distopt/Training/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {

/// Layers that compute in f32 whatever the policy says: normalisations by
/// their module names (a spelled-out RMSNorm is several ops) and rotary
/// embeddings.
constexpr const char *kDefaultKeepF32Layers[] = {"*norm*", "*Norm*",
                                                 "*rotary*"};

class PrecisionRewriter {
public:
  PrecisionRewriter(func::FuncOp func, Type compute)
      : func(func), compute(compute), b(func.getContext()) {}

  LogicalResult compileGlobs(const PrecisionPolicy &policy);
  void run();

private:
  bool keepsF32(Operation *op);
  bool matchesAny(ArrayRef<llvm::GlobPattern> globs, Operation *op);
  /// `v` in element type `to`: itself, or one cast of it (made once, right
  /// after its definition, and shared by every reader).
  Value in(Value v, Type to);

  func::FuncOp func;
  Type compute;
  OpBuilder b;
  std::vector<llvm::GlobPattern> defaults, user;
  DenseMap<std::pair<Value, Type>, Value> casts;
};

} // namespace

static bool hasElementType(Value v, Type t) {
  auto tt = dyn_cast<RankedTensorType>(v.getType());
  return tt && tt.getElementType() == t;
}

bool PrecisionRewriter::matchesAny(ArrayRef<llvm::GlobPattern> globs,
                                   Operation *op) {
  std::string name = nn::getNodeName(op);
  std::vector<std::string> names = nn::getNodeModulePrefixes(op);
  if (!name.empty())
    names.push_back(name);
  for (const llvm::GlobPattern &g : globs)
    for (const std::string &n : names)
      if (g.match(n))
        return true;
  return false;
}

bool PrecisionRewriter::keepsF32(Operation *op) {
  // The normalisations and softmax accumulate over a row whose sum bf16
  // cannot hold (torch's autocast and Megatron keep them f32 as well).
  if (isa<nn::LayerNormOp, nn::BatchNormOp, nn::SoftmaxOp, nn::LogSoftmaxOp>(
          op))
    return true;
  return matchesAny(defaults, op) || matchesAny(user, op);
}

LogicalResult PrecisionRewriter::compileGlobs(const PrecisionPolicy &policy) {
  for (const char *pattern : kDefaultKeepF32Layers)
    defaults.push_back(cantFail(llvm::GlobPattern::create(pattern)));
  for (const auto &[pattern, loc] : policy.keepF32) {
    auto glob = llvm::GlobPattern::create(pattern, /*MaxSubPatterns=*/1024);
    if (!glob)
      return emitError(Location(loc))
             << "bad precision.keep_f32 pattern '" << pattern
             << "': " << llvm::toString(glob.takeError());
    // A typo would silently compute the layer in the compute dtype.
    WalkResult found = func.walk([&](Operation *op) {
      return matchesAny(*glob, op) ? WalkResult::interrupt()
                                   : WalkResult::advance();
    });
    if (!found.wasInterrupted())
      emitWarning(Location(loc))
          << "precision.keep_f32 pattern '" << pattern
          << "' matches no node or layer of the model; nothing more "
             "computes in f32";
    user.push_back(std::move(*glob));
  }
  return success();
}

Value PrecisionRewriter::in(Value v, Type to) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getElementType() == to)
    return v;
  auto [it, inserted] = casts.try_emplace({v, to});
  if (!inserted)
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  if (Operation *def = v.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
  it->second = nn::CastOp::create(b, v.getLoc(), type.clone(to), v);
  return it->second;
}

void PrecisionRewriter::run() {
  Type f32 = b.getF32Type();
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops) {
    bool readsFloat = llvm::any_of(op->getOperands(), [&](Value v) {
      return hasElementType(v, f32) || hasElementType(v, compute);
    });
    // Sources (weights, constants, casts from integers) stay f32: their
    // readers cast them, once each.
    if (!readsFloat)
      continue;
    bool computes = isa<nn::NNDialect>(op->getDialect()) &&
                    op->getNumRegions() == 0 && !keepsF32(op);
    Type want = computes ? compute : f32;
    for (OpOperand &use : op->getOpOperands())
      if (hasElementType(use.get(), f32) || hasElementType(use.get(), compute))
        use.set(in(use.get(), want));
    if (!computes)
      continue;
    for (Value r : op->getResults())
      if (hasElementType(r, f32))
        r.setType(cast<RankedTensorType>(r.getType()).clone(compute));
  }
}

/// The float type `user` casts to; null when it is not a cast to a float.
static FloatType floatCastType(Operation *user) {
  auto c = dyn_cast<nn::CastOp>(user);
  return c ? dyn_cast<FloatType>(c.getType().getElementType()) : FloatType();
}

void distopt::loadWeightsNarrow(func::FuncOp func,
                                llvm::function_ref<bool(Operation *)> keep) {
  SmallVector<nn::WeightOp> weights;
  func.walk([&](nn::WeightOp w) { weights.push_back(w); });
  for (nn::WeightOp w : weights) {
    Value v = w.getResult();
    if ((keep && keep(w)) || v.use_empty())
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    // The one float type every reader casts to, if they all do.
    FloatType to = floatCastType(*v.user_begin());
    auto from = dyn_cast<FloatType>(type.getElementType());
    if (!to || !from || to.getWidth() >= from.getWidth() ||
        !llvm::all_of(v.getUsers(),
                      [&](Operation *u) { return floatCastType(u) == to; }))
      continue;
    if (!w.getStoredType())
      w.setStoredTypeAttr(TypeAttr::get(from));
    v.setType(type.clone(to));
    for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
      user->getResult(0).replaceAllUsesWith(v);
      user->erase();
    }
  }
}

LogicalResult distopt::applyPrecision(ModuleOp module,
                                      const PrecisionPolicy &given,
                                      SixteenBitModel mode) {
  func::FuncOp func = stepFunction(module);
  if (!func)
    return given.mixed() ? module.emitError(
                               "precision applies to the function @main (or "
                               "the module's only function)")
                         : success();
  PrecisionPolicy policy = given;
  Type narrow = mode == SixteenBitModel::Keep ? Type()
                                              : sixteenBitParameterType(func);
  if (narrow && failed(widenSixteenBitModel(func)))
    return failure();
  if (narrow && mode == SixteenBitModel::TrainMasters) {
    std::string name = narrow.isBF16() ? "bf16" : "f16";
    // f16 gradients underflow without a loss scale, which the config
    // chooses (the step and the trainer both read it from there).
    if (narrow.isF16() && !given.loc)
      return emitError(module.getLoc())
             << "the model's parameters are f16: training them needs a loss "
                "scale; add `precision: {compute: f16, loss_scale: dynamic}` "
                "to the training config (or `precision: f32`)";
    InFlightDiagnostic note = emitRemark(module.getLoc());
    note << "the model's parameters are " << name
         << ": training f32 masters initialised from them";
    // Without a policy a bf16 model computes in bf16, as it was written.
    if (!given.loc) {
      policy.compute = name;
      note << ", computing in " << name
           << " (the training config's `precision` overrides this)";
    } else {
      note << ", computing as the config's precision says (compute: "
           << policy.compute << ")";
    }
  }
  if (!policy.mixed())
    return success();
  // Windows of fused projections become parameters of their own before a
  // cast stands between a weight and its projection.
  splitFusedProjections(module);
  unifyWeights(func);
  MLIRContext *ctx = module.getContext();
  Type compute = policy.compute == "bf16" ? Type(BFloat16Type::get(ctx))
                                          : Type(Float16Type::get(ctx));
  // `master: bf16`: the parameters themselves are bf16 (rounded from the
  // file when loaded), with no f32 copy; forward reads them as they are.
  if (policy.master == "bf16")
    func.walk([&](nn::WeightOp w) {
      auto type = w.getResult().getType();
      if (!type.getElementType().isF32())
        return;
      if (!w.getStoredType())
        w.setStoredTypeAttr(TypeAttr::get(type.getElementType()));
      if (w.getStoredType() == compute)
        w.removeStoredTypeAttr();
      w.getResult().setType(type.clone(compute));
    });
  PrecisionRewriter rewriter(func, compute);
  if (failed(rewriter.compileGlobs(policy)))
    return failure();
  rewriter.run();
  // Inference keeps no f32 masters. (A training step narrows its frozen
  // parameters once it knows which they are: dist-build-training-step.)
  if (mode != SixteenBitModel::TrainMasters)
    loadWeightsNarrow(func);
  return success();
}

namespace {
struct ApplyPrecisionPass
    : public distopt::impl::DistApplyPrecisionBase<ApplyPrecisionPass> {
  using Base::Base;
  ApplyPrecisionPass(PrecisionPolicy policy, SixteenBitModel mode)
      : parsed(std::move(policy)), mode(mode) {}

  void runOnOperation() override {
    std::optional<PrecisionPolicy> policy = parsed;
    if (!policy) {
      if (config.empty()) {
        emitError(getOperation().getLoc(),
                  "dist-apply-precision needs config=<file>: a training "
                  "config with a precision policy (docs/training.md)");
        return signalPassFailure();
      }
      FailureOr<TrainConfig> read = parseTrainConfig(&getContext(), config);
      if (failed(read))
        return signalPassFailure();
      policy = read->precision;
    }
    // (The tools give inference's mode; the option is the pipeline's way.)
    SixteenBitModel applied = inference ? SixteenBitModel::Keep : mode;
    if (failed(applyPrecision(getOperation(), *policy, applied)))
      signalPassFailure();
  }

  std::optional<PrecisionPolicy> parsed;
  // A config file's policy is a training one.
  SixteenBitModel mode = SixteenBitModel::TrainMasters;
};
} // namespace

std::unique_ptr<Pass>
distopt::createDistApplyPrecision(PrecisionPolicy policy,
                                  SixteenBitModel mode) {
  return std::make_unique<ApplyPrecisionPass>(std::move(policy), mode);
}

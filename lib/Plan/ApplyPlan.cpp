//===- ApplyPlan.cpp - plans and presets become annotations ----*- C++ -*-===//
#include "PlanUtils.h"
#include "distopt/Plan/Experts.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

#include <map>
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

/// The mesh axis the data-parallel presets also split the batch over,
/// replicating what they shard over dp (HSDP).
static constexpr StringLiteral kReplicateAxis = "rep";

/// The ZeRO level a data-parallel preset (dp, zero1, zero2, fsdp) applies
/// over dp, or none for another preset.
static std::optional<int64_t> zeroLevelOfPreset(StringRef preset) {
  return llvm::StringSwitch<std::optional<int64_t>>(preset)
      .Case("dp", 0)
      .Case("zero1", 1)
      .Case("zero2", 2)
      .Case("fsdp", 3)
      .Default(std::nullopt);
}

ArrayRef<StringRef> distopt::presetNames() {
  static const StringRef names[] = {"replicate", "dp", "zero1", "zero2",
                                    "fsdp",      "tp", "sp",    "cp",
                                    "ep"};
  return names;
}

namespace {

/// "file:line" of a plan location, for the report.
std::string whereOf(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine());
  return "--plan";
}

/// Applies one plan, collecting what the user should see.
class PlanApplier {
public:
  PlanApplier(ModuleOp module, func::FuncOp func, const Plan &plan,
              std::shared_ptr<const cost::MachineProfile> machine)
      : module(module), func(func), plan(plan), machine(std::move(machine)) {}

  LogicalResult apply();
  PlanFindings findings;

private:
  LogicalResult applySpec(const PlanSpec &spec);
  LogicalResult applyPreset(const PlanSpec &spec, StringRef preset);
  LogicalResult applyStyles(const PlanSpec &spec);
  LogicalResult applySequenceParallel(Location loc, StringRef axisName);
  LogicalResult applyDataParallel(Location loc, StringRef axisName,
                                  int64_t level);
  LogicalResult applyExpertParallel(Location loc, StringRef axisName);
  LogicalResult applyContext(const ContextParallelSpec &spec);
  LogicalResult applyPlacements(const PlanSpec &spec);
  LogicalResult checkPipeline(const PipelineSpec &pp);
  void shardParameters();
  void reduceGradientsAfterWidening(dist::MeshOp mesh, int64_t axis);
  void reduceNarrowGradients();
  /// A pattern that matched nothing: a warning (an error when strict) with
  /// the closest names.
  LogicalResult unmatched(Location loc, StringRef pattern,
                          const std::vector<std::string> &names);
  void note(Location loc, const Twine &message) {
    findings.notes.push_back(message.str());
    mlir::emitWarning(loc) << message;
  }

  ModuleOp module;
  func::FuncOp func;
  const Plan &plan;
  std::shared_ptr<const cost::MachineProfile> machine;
  /// ZeRO levels asked for, by data axis (1: optimizer states split, 2: and
  /// gradients, 3: and parameters), applied once every other plan part has
  /// placed its splits.
  std::map<int64_t, int64_t> zeroLevels;
  /// Mesh axes context parallelism splits sequences over. Parameters are
  /// whole on each of their ranks and gradients summed over them, as over
  /// a data axis, so ZeRO asked for on a data axis applies over these too.
  std::set<int64_t> contextAxes;
  /// `precision.reduce` narrower than f32: each gradient's narrow value
  /// (after its partial annotation), its parameter and the data axis it is
  /// reduced over; and, at ZeRO level 2 or more, each parameter's gradient
  /// split by axis.
  struct NarrowGradient {
    Value partial;
    std::string key;
    dist::MeshOp mesh;
    int64_t axis;
  };
  std::vector<NarrowGradient> narrowGradients;
  std::map<std::pair<std::string, int64_t>, dist::ShardingAttr> gradientSplit;
};

} // namespace

LogicalResult PlanApplier::unmatched(Location loc, StringRef pattern,
                                     const std::vector<std::string> &names) {
  findings.unmatchedPatterns.push_back(whereOf(loc) + ": '" + pattern.str() +
                                       "'");
  InFlightDiagnostic d =
      plan.strict ? mlir::emitError(loc) : mlir::emitWarning(loc);
  d << "pattern '" << pattern << "' matches nothing";
  std::vector<std::string> close = closestNames(pattern, names);
  if (!close.empty()) {
    d << "; closest names: ";
    llvm::interleaveComma(close, d, [&](const std::string &s) { d << s; });
  }
  return success(!plan.strict);
}

/// "nn.matmul 'node name'" (the name only when the model has one).
static std::string usedBy(Operation *op) {
  std::string node = nn::getNodeName(op);
  std::string out = op->getName().getStringRef().str();
  return node.empty() ? out : out + " '" + node + "'";
}

LogicalResult PlanApplier::applyStyles(const PlanSpec &spec) {
  Location specLoc(spec.loc);
  dist::MeshOp mesh = requireMesh(module, specLoc, "tensor_parallel", spec.tpAxis);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, specLoc, spec.tpAxis, "tensor_parallel");
  if (axis < 0)
    return failure();
  std::vector<WeightUse> uses = findWeightUses(func);
  std::vector<std::string> allNames;
  for (const WeightUse &u : uses)
    for (std::string &n : namesOf(u))
      allNames.push_back(std::move(n));

  // Which rule claims each use; two rules with different styles conflict.
  std::map<std::pair<Operation *, unsigned>, const StyleRule *> claimed;
  for (const StyleRule &rule : spec.styles) {
    Location loc(rule.loc);
    auto glob = compileGlob(rule.pattern, loc);
    if (failed(glob))
      return failure();
    bool matched = false;
    for (const WeightUse &u : uses) {
      std::vector<std::string> names = namesOf(u);
      if (llvm::none_of(names,
                        [&](const std::string &n) { return glob->match(n); }))
        continue;
      matched = true;
      auto key = std::make_pair(u.op, u.operand);
      auto it = claimed.find(key);
      if (it != claimed.end() && it->second->style != rule.style) {
        InFlightDiagnostic d = mlir::emitError(loc);
        d << "'" << rule.pattern << ": " << rule.style << "' conflicts with '"
          << it->second->pattern << ": " << it->second->style << "' on weight '"
          << cast<nn::WeightOp>(u.weight).getName() << "' used by "
          << usedBy(u.op);
        d.attachNote(Location(it->second->loc)) << "the other style";
        return failure();
      }
      claimed[key] = &rule;
    }
    if (!matched && failed(unmatched(loc, rule.pattern, allNames)))
      return failure();
  }
  for (const WeightUse &u : uses) {
    auto it = claimed.find({u.op, u.operand});
    if (it == claimed.end())
      continue;
    const StyleRule &rule = *it->second;
    std::string source = rule.pattern + ": " + rule.style;
    dist::Placement placement = dist::Placement::replicate();
    if (rule.style != "replicate") {
      std::string why;
      FailureOr<int64_t> dim = styleDim(u, rule.style, why);
      if (failed(dim))
        return mlir::emitError(Location(rule.loc))
               << "'" << source << "' does not fit weight '"
               << cast<nn::WeightOp>(u.weight).getName() << "' as used by "
               << usedBy(u.op) << ": " << why;
      placement = dist::Placement::shard(*dim);
    }
    annotateOperand(u.op, u.operand, oneAxisSharding(mesh, axis, placement),
                    kStylePriority, source);
  }
  return success();
}

/// Sequence parallelism: the tensors normalised by LayerNorm (and RMSNorm
/// written out) are split along the sequence between tensor-parallel regions.
LogicalResult PlanApplier::applySequenceParallel(Location loc,
                                                 StringRef axisName) {
  dist::MeshOp mesh = requireMesh(module, loc, "sequence parallelism", axisName);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, axisName, "sequence parallelism");
  if (axis < 0)
    return failure();
  SmallVector<Value> targets;
  func.walk([&](Operation *op) {
    if (auto ln = dyn_cast<nn::LayerNormOp>(op)) {
      targets.push_back(ln.getInput());
      targets.push_back(ln.getResult());
    }
    // RMSNorm spelled out: mean(x*x) or mean(pow(x, 2)) over the last axis.
    if (auto mean = dyn_cast<nn::ReduceMeanOp>(op)) {
      auto in = mean.getInput().getType();
      if (mean.getAxes().size() != 1 || mean.getAxes()[0] != in.getRank() - 1)
        return;
      Operation *sq = mean.getInput().getDefiningOp();
      if (auto mul = dyn_cast_or_null<nn::MulOp>(sq);
          mul && mul.getLhs() == mul.getRhs())
        targets.push_back(mul.getLhs());
      if (auto pow = dyn_cast_or_null<nn::PowOp>(sq))
        targets.push_back(pow.getLhs());
    }
  });
  llvm::SmallPtrSet<void *, 16> done;
  int count = 0;
  for (Value v : targets) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() < 3 || !done.insert(v.getAsOpaquePointer()).second)
      continue;
    annotateValue(
        v,
        oneAxisSharding(mesh, axis, dist::Placement::shard(type.getRank() - 2)),
        kSequencePriority, "sequence_parallel");
    ++count;
  }
  if (count == 0)
    note(loc, "sequence parallelism found no LayerNorm or RMSNorm over "
              "[batch, seq, features] tensors to split");
  return success();
}

LogicalResult PlanApplier::applyDataParallel(Location loc, StringRef axisName,
                                             int64_t level) {
  dist::MeshOp mesh = requireMesh(module, loc, "data parallelism", axisName);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, axisName, "data parallelism");
  if (axis < 0)
    return failure();
  int64_t size = mesh.getAxisSizes()[axis];
  // Inputs with fewer rows than the axis: said once, for the first of them
  // (a pipeline's microbatches are inputs of their own).
  std::optional<std::pair<std::string, int64_t>> shortInput;
  int64_t shortInputs = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0)
      continue;
    int64_t batch = type.getDimSize(0);
    if (!ShapedType::isDynamic(batch) && batch < size && shortInputs++ == 0) {
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttr);
      shortInput = {name ? name.str()
                         : "input_" + std::to_string(arg.getArgNumber()),
                    batch};
    }
    annotateValue(arg, oneAxisSharding(mesh, axis, dist::Placement::shard(0)),
                  kStylePriority, "data_parallel: batch");
  }
  if (shortInput) {
    auto [name, batch] = *shortInput;
    note(loc,
         "data parallelism: input '" + name + "' has " + std::to_string(batch) +
             " rows in dimension 0 (the batch), fewer than " + axisName.str() +
             "=" + std::to_string(size) + "; " + std::to_string(size - batch) +
             " device(s) get empty pieces" +
             (plan.microbatches() > 1
                  ? " (rows of one microbatch: the pipeline's " +
                        std::to_string(plan.microbatches()) +
                        " microbatches split the batch first)"
                  : std::string()) +
             (shortInputs > 1 ? "; so do " + std::to_string(shortInputs - 1) +
                                    " more input(s)"
                              : std::string()));
  }
  // A batch the model assembles from inputs, such as the chosen and rejected
  // rows of preference pairs concatenated (TRL's concatenated_forward), is
  // split by rows too. A concat cannot keep its operands' row split (each
  // device's rows would not be a block of the result), so its inputs are
  // gathered (token ids, small) and the result is split again: every device
  // runs the model on its share of the rows.
  SmallVector<Value> assembled;
  func.walk([&](nn::ConcatOp concat) {
    if (concat.getAxis() != 0)
      return;
    auto isInput = [&](Value v) {
      if (auto a = v.getDefiningOp<dist::AnnotateOp>())
        v = a.getInput();
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &func.getBody().front();
    };
    // Under gradient accumulation, the running microbatch's inputs.
    auto fromInput = [&](Value v) {
      if (auto select = v.getDefiningOp<nn::MicrobatchSelectOp>())
        return llvm::all_of(select.getCandidates(), isInput);
      return isInput(v);
    };
    if (llvm::all_of(concat.getInputs(), fromInput))
      assembled.push_back(concat.getResult());
  });
  for (Value v : assembled)
    annotateValue(v, oneAxisSharding(mesh, axis, dist::Placement::shard(0)),
                  kStylePriority,
                  "data_parallel: batch concatenated from inputs");
  reduceGradientsAfterWidening(mesh, axis);
  // Levels 1 to 3 split optimizer states, gradients and parameters over the
  // data axis (forward programs have only parameters).
  if (level > 0)
    zeroLevels[axis] = std::max(zeroLevels[axis], level);
  return success();
}

/// Expert parallelism (GShard): each expert's weights live on one rank of
/// the axis, split along the expert dimension, and the tokens routed to an
/// expert travel to that rank and back. The tokens arrive split over the
/// axis along the batch (as data parallelism splits them, applied here);
/// the experts' einsums take their tokens split by expert, so the reshard
/// into the first is an all-to-all from the batch split to the expert
/// split; the einsum combining the experts' outputs takes them, and gives
/// its result, split along the batch again: the all-to-all back.
LogicalResult PlanApplier::applyExpertParallel(Location loc,
                                               StringRef axisName) {
  dist::MeshOp mesh = requireMesh(module, loc, "expert parallelism", axisName);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, axisName, "expert parallelism");
  if (axis < 0 || failed(applyDataParallel(loc, axisName, 0)))
    return failure();
  SmallVector<ExpertEinsum> found = findExpertEinsums(func);
  llvm::DenseMap<Operation *, ExpertEinsum> byOp;
  for (const ExpertEinsum &x : found)
    byOp.try_emplace(x.op, x);
  if (found.empty())
    return mlir::emitError(loc)
           << "expert parallelism found no experts' weights: a weight whose "
              "first dimension an nn.einsum keeps in its result and shares "
              "with another operand (GShard's 'gecd,edf->gecf')";
  auto pin = [&](Value v, int64_t dim, StringRef why) {
    annotateValue(v, oneAxisSharding(mesh, axis, dist::Placement::shard(dim)),
                  kStylePriority, why);
  };
  // The tokens' batch dimension of a tensor whose dimension `expertDim` is
  // the expert: its first other dimension (g in GShard's gecd).
  auto batchDim = [](int64_t expertDim) { return expertDim == 0 ? 1 : 0; };
  llvm::SmallPtrSet<void *, 16> weights;
  for (const ExpertEinsum &x : found) {
    auto operands = x.op.getInputs();
    Value w = weightOperand(operands[x.weight]);
    if (weights.insert(w.getAsOpaquePointer()).second)
      pin(w, 0, "expert_parallel: experts' weights");
    // Tokens coming from outside the experts arrive split by batch and are
    // sent to their experts (annotations nearest the value come last).
    for (auto [i, term] : llvm::enumerate(x.eq.inputs)) {
      Value v = operands[i];
      if (i == x.weight || weightOperand(v))
        continue;
      if (fromExperts(v, byOp))
        continue; // already at the experts
      int64_t e = term.find(x.expert);
      pin(v, e, "expert_parallel: tokens to their experts");
      pin(v, batchDim(e), "expert_parallel: tokens from their batch rows");
    }
    // The result stays with the experts; before the einsum that combines
    // the experts' outputs it goes back to the batch split.
    int64_t e = x.eq.output.find(x.expert);
    if (feedsCombine(x))
      pin(x.op.getResult(), batchDim(e),
          "expert_parallel: experts' outputs back to their batch rows");
    pin(x.op.getResult(), e, "expert_parallel: experts' outputs");
  }
  return success();
}

/// Whether `c` casts floats to a wider float type (bf16 -> f32).
static bool widens(nn::CastOp c) {
  auto from = dyn_cast<FloatType>(c.getInput().getType().getElementType());
  auto to = dyn_cast<FloatType>(c.getResult().getType().getElementType());
  return from && to && to.getWidth() > from.getWidth();
}

/// A mixed-precision parameter's gradient is the widening cast of its
/// compute-dtype gradient (dist-apply-precision). The cast's result (and
/// so its input: a widening cast lets partial sums through) stays partial
/// over the data axis, so the reduction (all-reduce or reduce-scatter)
/// runs after the cast, in f32 (`precision.reduce`), where the cost model
/// alone would reduce the narrower bf16 value.
void PlanApplier::reduceGradientsAfterWidening(dist::MeshOp mesh,
                                               int64_t axis) {
  // `precision.reduce: bf16` (the training step marked the casts): the
  // reduction goes before the widening, on the narrow gradient.
  SmallVector<nn::CastOp> narrow;
  func.walk([&](nn::CastOp c) {
    if (c->hasAttr(nn::kNarrowReduceOfAttr) && widens(c))
      narrow.push_back(c);
  });
  for (nn::CastOp c : narrow) {
    Value v = c.getInput();
    annotateValue(
        v,
        oneAxisSharding(mesh, axis,
                        dist::Placement::partial(dist::ReductionKind::Sum)),
        kShardedStatePriority,
        "precision: gradient in the reduce dtype, partial over the data axis");
    // The cast now reads the annotation's result, which the reduced
    // sharding annotates in turn (reduceNarrowGradients).
    narrowGradients.push_back(
        {c.getInput(),
         c->getAttrOfType<StringAttr>(nn::kNarrowReduceOfAttr).str(), mesh,
         axis});
  }
  if (!narrow.empty())
    return;
  SmallVector<Value> widened;
  func.walk([&](Operation *op) {
    if (!op->hasAttr(nn::kGradientOfAttr) || op->getNumOperands() != 1)
      return;
    Value g = op->getOperand(0);
    // With gradient accumulation, the sum of what the loop body yields.
    if (auto r = dyn_cast<OpResult>(g))
      if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(r.getOwner()))
        g = loop.getYielded()[r.getResultNumber()];
    // Under a loss scale, the widened gradient times 1/scale (a scalar).
    if (auto mul = g.getDefiningOp<nn::MulOp>()) {
      auto scalar = [](Value v) {
        return cast<RankedTensorType>(v.getType()).getRank() == 0;
      };
      if (scalar(mul.getRhs()))
        g = mul.getLhs();
      else if (scalar(mul.getLhs()))
        g = mul.getRhs();
    }
    if (auto c = g.getDefiningOp<nn::CastOp>(); c && widens(c))
      widened.push_back(c.getResult());
  });
  for (Value v : widened)
    annotateValue(v,
                  oneAxisSharding(mesh, axis,
                                  dist::Placement::partial(
                                      dist::ReductionKind::Sum)),
                  kShardedStatePriority,
                  "precision: gradients are reduced after the cast to f32");
}

/// Per weight (in program order), its placement per mesh axis once every
/// other plan part has spoken (row-parallel weights get their split from
/// propagation, not from an annotation of their own): propagation is read,
/// not written.
static std::vector<SmallVector<dist::Placement>> propagatedWeightPlacements(
    ModuleOp module, std::shared_ptr<const cost::MachineProfile> machine) {
  SmallVector<Value> weights;
  module.walk([&](nn::WeightOp w) { weights.push_back(w.getResult()); });
  return propagatedPlacementsQuietly(module, weights, std::move(machine));
}

/// ZeRO's dimension for a weight of `shape` per axis of `zeroAxes` (in
/// mesh order), or none for an axis it is not split along. `propagated` is
/// what the rest of the plan gives the weight (empty: nothing): dimensions
/// it splits are not taken, and an axis that already splits the weight (a
/// rotary table sliced along a context-parallel sequence) keeps its split.
/// Later axes split the dimension earlier ones took while its piece still
/// divides (FSDP over dp x cp splits one dimension over both, as
/// torchtitan's flattened dp_shard x cp does); else the largest free
/// dimension that divides.
static std::map<int64_t, int64_t>
zeroDims(ArrayRef<int64_t> shape, ArrayRef<dist::Placement> propagated,
         const std::map<int64_t, int64_t> &zeroAxes, ArrayRef<int64_t> sizes) {
  std::set<int64_t> taken;
  for (const dist::Placement &p : propagated)
    if (p.isShard())
      taken.insert(p.dim);
  SmallVector<int64_t> extent(shape);
  std::map<int64_t, int64_t> dims;
  for (const auto &entry : zeroAxes) {
    int64_t axis = entry.first;
    if (axis < static_cast<int64_t>(propagated.size()) &&
        propagated[axis].isShard())
      continue;
    int64_t size = sizes[axis];
    auto fits = [&](int64_t d) {
      return !taken.count(d) && extent[d] >= size && extent[d] % size == 0;
    };
    int64_t best = -1;
    for (auto &[earlier, d] : dims)
      if (fits(d)) {
        best = d;
        break;
      }
    if (best < 0)
      for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
        if (fits(d) && (best < 0 || extent[d] > extent[best]))
          best = d;
    if (best < 0)
      continue;
    dims[axis] = best;
    extent[best] /= size;
  }
  return dims;
}

/// Whether an annotation splits or sums along a mesh axis outside
/// `zeroAxes`. Only such a plan part can make propagation split a weight
/// along another axis; splits along the ZeRO axes themselves (batch splits
/// reaching a weight) agree with ZeRO's whatever dimension it takes.
static bool splitsOtherAxes(func::FuncOp func,
                            const std::map<int64_t, int64_t> &zeroAxes) {
  WalkResult found = func.walk([&](dist::AnnotateOp a) {
    for (auto [axis, p] : llvm::enumerate(a.getSharding().getPlacements()))
      if ((p.isShard() || p.isPartial()) &&
          !zeroAxes.count(static_cast<int64_t>(axis)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// The casts of `v` to a narrower float type (dist-apply-precision's
/// compute copies of a parameter), looking through annotations.
static SmallVector<Value> computeCopies(Value v) {
  SmallVector<Value> copies;
  for (Operation *user : v.getUsers()) {
    if (auto a = dyn_cast<dist::AnnotateOp>(user)) {
      copies.append(computeCopies(a.getResult()));
      continue;
    }
    auto c = dyn_cast<nn::CastOp>(user);
    if (!c)
      continue;
    auto from = dyn_cast<FloatType>(c.getInput().getType().getElementType());
    auto to = dyn_cast<FloatType>(c.getResult().getType().getElementType());
    if (from && to && to.getWidth() < from.getWidth())
      copies.push_back(c.getResult());
  }
  return copies;
}

/// Whether every reader of parameter `v` (looking through annotations) is
/// one of its narrowing casts `copies` or an optimizer op: then forward and
/// backward never need the master itself.
static bool readThroughCopiesOnly(Value v, ArrayRef<Value> copies) {
  for (Operation *user : v.getUsers()) {
    if (auto a = dyn_cast<dist::AnnotateOp>(user)) {
      if (!readThroughCopiesOnly(a.getResult(), copies))
        return false;
      continue;
    }
    if (user->getNumResults() == 1 &&
        llvm::is_contained(copies, user->getResult(0)))
      continue;
    auto phase = user->getAttrOfType<StringAttr>(nn::kPhaseAttr);
    if (!phase || phase.getValue() != "optimizer")
      return false;
  }
  return true;
}

/// ZeRO over a data axis: each parameter's largest dimension that divides
/// and that no other plan part splits (FSDP2 + TP shard the dimension TP
/// leaves free) splits, by level, its optimizer states (1), its gradient
/// (2: reduce-scattered where it is made) and the parameter itself (3:
/// gathered where it is used). With a 16-bit compute policy the f32 master
/// is optimizer state, as in Megatron's and DeepSpeed's ZeRO-1/2: levels 1
/// and 2 split it too, and its compute copy, cast from the rank's updated
/// shard, is gathered whole once per step (in the compute dtype) for
/// forward and backward.
void PlanApplier::shardParameters() {
  dist::MeshOp mesh = *module.getOps<dist::MeshOp>().begin();
  // The propagation on a copy is a whole propagation: skipped where it
  // cannot split a weight (dp-only meshes). A context-parallel axis splits
  // activations along the sequence, which can reach a weight (a rotary
  // table): it counts as another axis here.
  std::map<int64_t, int64_t> dataAxes;
  for (auto &[axis, level] : zeroLevels)
    if (!contextAxes.count(axis))
      dataAxes[axis] = level;
  std::vector<SmallVector<dist::Placement>> propagated;
  if (splitsOtherAxes(func, dataAxes))
    propagated = propagatedWeightPlacements(module, machine);
  std::vector<std::map<int64_t, int64_t>> dimsOf;
  func.walk([&](nn::WeightOp w) {
    size_t index = dimsOf.size();
    dimsOf.push_back(zeroDims(w.getResult().getType().getShape(),
                              index < propagated.size()
                                  ? ArrayRef(propagated[index])
                                  : ArrayRef<dist::Placement>(),
                              zeroLevels, mesh.getAxisSizes()));
  });
  std::map<std::string, SmallVector<Value>> statesOf, gradientOf;
  func.walk([&](Operation *op) {
    if (auto of = op->getAttrOfType<StringAttr>(nn::kStateOfAttr))
      statesOf[of.str()].push_back(op->getResult(0));
    if (auto of = op->getAttrOfType<StringAttr>(nn::kGradientOfAttr))
      gradientOf[of.str()].push_back(op->getResult(0));
  });
  // One annotation per value over every ZeRO axis at once: a chain of
  // one-axis annotations would make the value between them whole over the
  // later axis (a gather where the weight is read).
  int64_t numAxes = mesh.getNumAxes();
  SmallVector<dist::Placement> open(numAxes, dist::Placement::open());
  auto sharding = [&](ArrayRef<dist::Placement> ps) -> dist::ShardingAttr {
    if (llvm::all_of(ps, [](dist::Placement p) { return p.isOpen(); }))
      return {};
    return dist::ShardingAttr::get(
        mesh.getContext(), FlatSymbolRefAttr::get(mesh.getSymNameAttr()), ps);
  };
  size_t index = 0;
  func.walk([&](nn::WeightOp w) {
    const std::map<int64_t, int64_t> &dims = dimsOf[index++];
    if (dims.empty())
      return;
    // The source names the highest level and any context axis included.
    int64_t top = 0;
    bool overContext = false;
    for (auto &[axis, d] : dims) {
      top = std::max(top, zeroLevels[axis]);
      overContext |= contextAxes.count(axis) > 0;
    }
    std::string prefix = "data_parallel level " + std::to_string(top) +
                         (overContext ? " (with the context axis)" : "");
    std::string key = nn::getPersistentKey(w);
    SmallVector<Value> copies = computeCopies(w.getResult());
    bool masterOnly = !copies.empty() && !gradientOf[key].empty() &&
                      readThroughCopiesOnly(w.getResult(), copies);
    // Per axis: the split states, gradient, parameter and compute copy,
    // and the copy's whole form (levels 1-2 with a 16-bit policy).
    SmallVector<dist::Placement> states(open), gradient(open), parameter(open),
        copy(open), copyWhole(open);
    bool reformed = false;
    for (auto &[axis, d] : dims) {
      int64_t level = zeroLevels[axis];
      dist::Placement split = dist::Placement::shard(d);
      states[axis] = split;
      if (level >= 2)
        gradient[axis] = split;
      if (level >= 3) {
        // A mixed-precision compute copy is split as its master is, so
        // that forward gathers the copy (bf16: half the bytes), not the
        // f32 master.
        parameter[axis] = copy[axis] = copyWhole[axis] = split;
      } else if (masterOnly) {
        // The f32 master is split and updated as its states are; the
        // compute copy is cast from the updated shard and gathered whole,
        // half the bytes of gathering the f32 update.
        parameter[axis] = copy[axis] = split;
        copyWhole[axis] = dist::Placement::replicate();
        reformed = true;
      } else if (!statesOf[key].empty()) {
        // The parameter itself stays whole on every data-parallel rank
        // (its update is gathered back); without this its split states
        // would pull it apart.
        parameter[axis] = dist::Placement::replicate();
      }
    }
    for (Value state : statesOf[key])
      annotateValue(state, sharding(states), kShardedStatePriority,
                    prefix + ": sharded optimizer state");
    if (dist::ShardingAttr g = sharding(gradient)) {
      for (auto &[axis, d] : dims)
        if (zeroLevels[axis] >= 2)
          gradientSplit[{key, axis}] = g;
      for (Value grad : gradientOf[key])
        annotateValue(grad, g, kShardedStatePriority,
                      prefix + ": sharded gradient");
    }
    if (dist::ShardingAttr p = sharding(parameter))
      annotateValue(w.getResult(), p, kShardedStatePriority,
                    prefix + (reformed   ? ": sharded f32 master"
                              : top >= 3 ? ": sharded parameter"
                                         : ": replicated parameter"));
    if (!reformed) {
      if (top >= 3)
        for (Value c : copies)
          annotateValue(c, sharding(copy), kShardedStatePriority,
                        prefix + ": sharded parameter's compute copy");
      return;
    }
    for (Value c : copies) {
      c.getDefiningOp()->setAttr(dist::kGatheredOnceAttr,
                                 UnitAttr::get(c.getContext()));
      // Whole first, then the split right after the cast: the chain
      // cast -> split -> whole puts the gather on the compute dtype.
      annotateValue(c, sharding(copyWhole), kShardedStatePriority,
                    prefix + ": compute copy re-formed from the updated "
                             "master shards");
      annotateValue(c, sharding(copy), kShardedStatePriority,
                    prefix + ": compute copy cast from the master's shard");
    }
  });
}

LogicalResult PlanApplier::applyPlacements(const PlanSpec &spec) {
  dist::MeshOp mesh = requireMesh(module, Location(spec.loc), "placements");
  if (!mesh)
    return failure();
  // Named values: inputs, weights, op results (by node name) and outputs.
  struct Named {
    std::string name;
    Value value;
    OpOperand *output = nullptr; // a graph output: constrain where returned
  };
  std::vector<Named> named;
  for (BlockArgument arg : func.getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttr);
    named.push_back(
        {name ? name.str() : "input_" + std::to_string(arg.getArgNumber()),
         arg});
  }
  func.walk([&](Operation *op) {
    if (auto w = dyn_cast<nn::WeightOp>(op))
      named.push_back({w.getName().str(), w.getResult()});
    else if (op->getNumResults() == 1 && !nn::getNodeName(op).empty())
      named.push_back({nn::getNodeName(op), op->getResult(0)});
  });
  Operation *ret = func.getBody().front().getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    auto name = func.getResultAttrOfType<StringAttr>(operand.getOperandNumber(),
                                                     nn::kNameAttr);
    named.push_back(
        {name ? name.str()
              : "output_" + std::to_string(operand.getOperandNumber()),
         operand.get(), &operand});
  }
  std::vector<std::string> names;
  for (auto &n : named)
    names.push_back(n.name);
  for (const ExplicitPlacement &p : spec.placements) {
    Location loc(p.loc);
    if (static_cast<int64_t>(p.placements.size()) != mesh.getNumAxes())
      return mlir::emitError(loc)
             << "'" << p.pattern << "' gives " << p.placements.size()
             << " placements but the mesh has " << mesh.getNumAxes() << " axes";
    std::string text = "#dist.sharding<@" + mesh.getSymName().str() + ", [";
    for (size_t i = 0; i < p.placements.size(); ++i)
      text += (i ? ", " : "") + p.placements[i];
    text += "]>";
    Attribute attr;
    {
      // The attribute parser's own message points into the text we built;
      // the plan's line says it better.
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      attr = parseAttribute(text, module.getContext());
    }
    auto sharding = dyn_cast_or_null<dist::ShardingAttr>(attr);
    if (!sharding)
      return mlir::emitError(loc)
             << "bad placements for '" << p.pattern
             << "'; use S(dim), S(dim, sizes=[...]), R, P(sum) or ?";
    auto glob = compileGlob(p.pattern, loc);
    if (failed(glob))
      return failure();
    bool matched = false;
    for (const Named &n : named) {
      if (!glob->match(n.name))
        continue;
      auto type = cast<RankedTensorType>(n.value.getType());
      if (failed(sharding.verifyFor(
              [&] { return mlir::emitError(loc) << "'" << n.name << "': "; },
              type.getRank(), mesh, type.getShape())))
        return failure();
      std::string source = "placement '" + p.pattern + "'";
      if (n.output)
        annotateOperand(ret, n.output->getOperandNumber(), sharding, p.priority,
                        source);
      else
        annotateValue(n.value, sharding, p.priority, source);
      matched = true;
    }
    if (!matched && failed(unmatched(loc, p.pattern, names)))
      return failure();
  }
  return success();
}

LogicalResult PlanApplier::checkPipeline(const PipelineSpec &pp) {
  Location loc(pp.loc);
  dist::MeshOp mesh = requireMesh(module, loc, "pipeline", pp.axis);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, pp.axis, "pipeline");
  if (axis < 0)
    return failure();
  int64_t size = mesh.getAxisSizes()[axis];
  if (pp.stages && pp.stages != size)
    return mlir::emitError(loc)
           << "pipeline.stages is " << pp.stages << " but mesh axis '"
           << pp.axis << "' has " << size << " positions; one stage runs on "
           << "each";
  return success();
}

LogicalResult PlanApplier::applyContext(const ContextParallelSpec &spec) {
  if (failed(applyContextParallel(module, spec, machine, findings)))
    return failure();
  dist::MeshOp mesh = *module.getOps<dist::MeshOp>().begin();
  contextAxes.insert(mesh.getAxisIndex(spec.axis));
  return success();
}

LogicalResult PlanApplier::applyPreset(const PlanSpec &spec, StringRef preset) {
  Location loc(spec.loc);
  if (preset == "replicate")
    return success(requireMesh(module, loc, "preset 'replicate'") != nullptr);
  if (std::optional<int64_t> level = zeroLevelOfPreset(preset)) {
    if (failed(applyDataParallel(loc, "dp", *level)))
      return failure();
    // HSDP: a mesh axis `rep` replicates what dp shards, and splits the
    // batch too (torchtitan's dp_replicate x dp_shard).
    dist::MeshOp mesh = *module.getOps<dist::MeshOp>().begin();
    if (mesh.getAxisIndex(kReplicateAxis) >= 0)
      return applyDataParallel(loc, kReplicateAxis, 0);
    return success();
  }
  if (preset == "tp")
    return applyAutoTensorParallel(module, loc, "tp", findings.notes);
  if (preset == "sp")
    return applySequenceParallel(loc, "tp");
  if (preset == "cp") {
    ContextParallelSpec cp;
    cp.loc = spec.loc;
    return applyContext(cp);
  }
  if (preset == "ep")
    return applyExpertParallel(loc, "ep");
  return mlir::emitError(loc) << "unknown preset '" << preset << "'";
}

LogicalResult PlanApplier::applySpec(const PlanSpec &spec) {
  Location loc(spec.loc);
  for (const std::string &preset : spec.presets)
    if (failed(applyPreset(spec, preset)))
      return failure();
  if (!spec.styles.empty() && failed(applyStyles(spec)))
    return failure();
  if (spec.sequenceParallel && failed(applySequenceParallel(loc, spec.tpAxis)))
    return failure();
  if (spec.dpAxis && failed(applyDataParallel(loc, *spec.dpAxis, spec.dpLevel)))
    return failure();
  if (spec.dpReplicateAxis &&
      failed(applyDataParallel(
          spec.dpReplicateLoc ? Location(spec.dpReplicateLoc) : loc,
          *spec.dpReplicateAxis, 0)))
    return failure();
  if (spec.contextParallel && failed(applyContext(*spec.contextParallel)))
    return failure();
  if (spec.epAxis && failed(applyExpertParallel(loc, *spec.epAxis)))
    return failure();
  if (!spec.placements.empty() && failed(applyPlacements(spec)))
    return failure();
  if (spec.pipeline && failed(checkPipeline(*spec.pipeline)))
    return failure();
  return success();
}

LogicalResult PlanApplier::apply() {
  // Fused projections split afterwards become one projection per part, so
  // each part can be split over devices on its own.
  splitFusedProjections(func);
  for (const PlanSpec &spec : plan.specs)
    if (failed(applySpec(spec)))
      return failure();
  // Sharded parameters last: they take the dimension no other part splits.
  if (!zeroLevels.empty()) {
    int64_t level = 0;
    for (auto &[axis, l] : zeroLevels)
      level = std::max(level, l);
    for (int64_t axis : contextAxes)
      zeroLevels.try_emplace(axis, level);
    shardParameters();
  }
  reduceNarrowGradients();
  checkUlyssesHeads(module, machine, findings);
  return success();
}

/// Ends each narrow gradient's partial annotation with what its reduction
/// gives: the gradient's ZeRO split (a reduce-scatter) or whole (an
/// all-reduce), so that the collective moves the narrow dtype and the
/// widening cast after it reads a reduced value.
void PlanApplier::reduceNarrowGradients() {
  for (const NarrowGradient &n : narrowGradients) {
    auto split = gradientSplit.find({n.key, n.axis});
    dist::ShardingAttr reduced =
        split != gradientSplit.end()
            ? split->second
            : oneAxisSharding(n.mesh, n.axis, dist::Placement::replicate());
    annotateValue(n.partial, reduced, kShardedStatePriority,
                  "precision: gradient reduced in the reduce dtype");
  }
}

/// Whether `spec` places anything along mesh axis `index` called `name`.
static bool specUsesAxis(const PlanSpec &spec, int64_t index, StringRef name) {
  for (const std::string &preset : spec.presets)
    if (((name == "dp" || name == kReplicateAxis) &&
         zeroLevelOfPreset(preset)) ||
        (name == "tp" && (preset == "tp" || preset == "sp")) ||
        (name == "cp" && preset == "cp") || (name == "ep" && preset == "ep"))
      return true;
  if (spec.contextParallel && spec.contextParallel->axis == name)
    return true;
  if (spec.epAxis && *spec.epAxis == name)
    return true;
  if ((!spec.styles.empty() || spec.sequenceParallel) && spec.tpAxis == name)
    return true;
  if ((spec.dpAxis && *spec.dpAxis == name) ||
      (spec.dpReplicateAxis && *spec.dpReplicateAxis == name))
    return true;
  if (spec.pipeline && spec.pipeline->axis == name)
    return true;
  for (const ExplicitPlacement &p : spec.placements)
    if (index < static_cast<int64_t>(p.placements.size()) &&
        p.placements[index] != "R")
      return true;
  return false;
}

/// A mesh axis (of size > 1) that no plan entry uses holds copies of the
/// whole computation: every rank along it runs the same batch. Warned
/// about, with the presets that would use it, when the model brought no
/// placements of its own.
static void warnUnusedAxes(ModuleOp module, const Plan &plan) {
  auto meshes = module.getOps<dist::MeshOp>();
  if (meshes.empty())
    return;
  bool annotated = false;
  module.walk([&](dist::AnnotateOp) {
    annotated = true;
    return WalkResult::interrupt();
  });
  if (annotated)
    return;
  dist::MeshOp mesh = *meshes.begin();
  for (int64_t i = 0; i < mesh.getNumAxes(); ++i) {
    StringRef name = mesh.getAxisName(i);
    if (mesh.getAxisSizes()[i] < 2 ||
        llvm::any_of(plan.specs, [&](const PlanSpec &spec) {
          return specUsesAxis(spec, i, name);
        }))
      continue;
    std::string users =
        name == "dp" || name == kReplicateAxis
            ? "the presets dp, zero1, zero2 and fsdp"
        : name == "tp" ? "the presets tp and sp"
        : name == "ep" ? "the preset ep"
        : name == "pp" ? "a plan file's pipeline section"
        : name == "cp" ? "the preset cp and a plan file's context_parallel "
                         "section"
                       : "a plan file's placements";
    mlir::emitWarning(mesh.getLoc())
        << "mesh axis '" << name << "' (size " << mesh.getAxisSizes()[i]
        << ") is used by no plan entry: every rank along it computes the "
           "same thing on the whole batch; "
        << users << " would use it";
  }
}

FailureOr<PlanFindings>
distopt::applyPlan(ModuleOp module, const Plan &plan,
                   std::shared_ptr<const cost::MachineProfile> machine,
                   std::vector<AttentionDecision> chosen) {
  warnUnusedAxes(module, plan);
  if (plan.empty()) {
    PlanFindings none;
    none.attention = std::move(chosen);
    return none;
  }
  func::FuncOp func = mainFunction(module);
  if (!func)
    return failure();
  PlanApplier applier(module, func, plan, std::move(machine));
  applier.findings.attention = std::move(chosen);
  if (failed(applier.apply()))
    return failure();
  return std::move(applier.findings);
}

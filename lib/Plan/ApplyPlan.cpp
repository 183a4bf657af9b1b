//===- ApplyPlan.cpp - plans and presets become annotations ----*- C++ -*-===//
#include "PlanUtils.h"
#include "distopt/Plan/PipelineConfig.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include <map>

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

ArrayRef<StringRef> distopt::presetNames() {
  static const StringRef names[] = {"replicate", "dp", "fsdp", "tp", "sp"};
  return names;
}

static FailureOr<llvm::GlobPattern>
compileGlob(ModuleOp module, StringRef pattern, StringRef where) {
  auto glob = llvm::GlobPattern::create(pattern);
  if (!glob) {
    module.emitError() << where << ": bad pattern '" << pattern
                       << "': " << llvm::toString(glob.takeError());
    return failure();
  }
  return std::move(*glob);
}

static void warnUnmatched(ModuleOp module, StringRef where, StringRef pattern,
                          const std::vector<std::string> &names) {
  InFlightDiagnostic d = module.emitWarning();
  d << where << ": pattern '" << pattern << "' matches nothing";
  std::vector<std::string> close = closestNames(pattern, names);
  if (!close.empty()) {
    d << "; closest names: ";
    llvm::interleaveComma(close, d, [&](const std::string &s) { d << s; });
  }
}

/// "nn.matmul 'node name'" (the name only when the model has one).
static std::string usedBy(Operation *op) {
  std::string node = nodeName(op);
  std::string out = op->getName().getStringRef().str();
  return node.empty() ? out : out + " '" + node + "'";
}

static LogicalResult applyStyles(ModuleOp module, func::FuncOp func,
                                 const PlanSpec &spec) {
  dist::MeshOp mesh = requireMesh(module, "tensor_parallel");
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, spec.tpAxis, "tensor_parallel");
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
    std::string where = spec.path + ":" + std::to_string(rule.line);
    auto glob = compileGlob(module, rule.pattern, where);
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
      if (it != claimed.end() && it->second->style != rule.style)
        return module.emitError()
               << where << ": '" << rule.pattern << ": " << rule.style
               << "' conflicts with line " << it->second->line << " '"
               << it->second->pattern << ": " << it->second->style
               << "' on weight '" << cast<nn::WeightOp>(u.weight).getName()
               << "' used by " << usedBy(u.op);
      claimed[key] = &rule;
    }
    if (!matched)
      warnUnmatched(module, where, rule.pattern, allNames);
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
        return module.emitError()
               << spec.path << ":" << rule.line << ": '" << source
               << "' does not fit weight '"
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
static LogicalResult applySequenceParallel(ModuleOp module, func::FuncOp func,
                                           StringRef axisName) {
  dist::MeshOp mesh = requireMesh(module, "sequence parallelism");
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, axisName, "sequence parallelism");
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
    module.emitWarning("sequence parallelism found no LayerNorm or RMSNorm "
                       "over [batch, seq, features] tensors to split");
  return success();
}

static LogicalResult applyDataParallel(ModuleOp module, func::FuncOp func,
                                       StringRef axisName, int64_t level) {
  dist::MeshOp mesh = requireMesh(module, "data parallelism");
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, axisName, "data parallelism");
  if (axis < 0)
    return failure();
  int64_t size = mesh.getAxisSizes()[axis];
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0)
      continue;
    annotateValue(arg, oneAxisSharding(mesh, axis, dist::Placement::shard(0)),
                  kStylePriority, "data_parallel: batch");
  }
  if (level != 3)
    return success();
  // Sharded parameters: stored split over the data axis, gathered where used.
  func.walk([&](nn::WeightOp w) {
    auto type = w.getResult().getType();
    int64_t best = -1;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) >= size && type.getDimSize(d) % size == 0 &&
          (best < 0 || type.getDimSize(d) > type.getDimSize(best)))
        best = d;
    if (best < 0)
      return;
    annotateValue(w.getResult(),
                  oneAxisSharding(mesh, axis, dist::Placement::shard(best)),
                  kShardedStatePriority,
                  "data_parallel level 3: sharded parameter");
  });
  return success();
}

static LogicalResult applyPlacements(ModuleOp module, func::FuncOp func,
                                     const PlanSpec &spec) {
  dist::MeshOp mesh = requireMesh(module, "placements");
  if (!mesh)
    return failure();
  // Named values: inputs, weights, and op results (by node name).
  std::vector<std::pair<std::string, Value>> named;
  for (BlockArgument arg : func.getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.name");
    named.push_back(
        {name ? name.str() : "input_" + std::to_string(arg.getArgNumber()),
         arg});
  }
  func.walk([&](Operation *op) {
    if (auto w = dyn_cast<nn::WeightOp>(op))
      named.push_back({w.getName().str(), w.getResult()});
    else if (op->getNumResults() == 1 && !nodeName(op).empty())
      named.push_back({nodeName(op), op->getResult(0)});
  });
  std::vector<std::string> names;
  for (auto &n : named)
    names.push_back(n.first);
  for (const ExplicitPlacement &p : spec.placements) {
    std::string where = spec.path + ":" + std::to_string(p.line);
    if (static_cast<int64_t>(p.placements.size()) != mesh.getNumAxes())
      return module.emitError()
             << where << ": '" << p.pattern << "' gives " << p.placements.size()
             << " placements but the mesh has " << mesh.getNumAxes() << " axes";
    std::string text = "#dist.sharding<@" + mesh.getSymName().str() + ", [";
    for (size_t i = 0; i < p.placements.size(); ++i)
      text += (i ? ", " : "") + p.placements[i];
    text += "]>";
    Attribute attr = parseAttribute(text, module.getContext());
    auto sharding = dyn_cast_or_null<dist::ShardingAttr>(attr);
    if (!sharding)
      return module.emitError() << where << ": bad placements for '"
                                << p.pattern << "'; use S(dim), R, P(sum) or ?";
    auto glob = compileGlob(module, p.pattern, where);
    if (failed(glob))
      return failure();
    bool matched = false;
    for (auto &[name, value] : named) {
      if (!glob->match(name))
        continue;
      auto type = cast<RankedTensorType>(value.getType());
      if (failed(sharding.verifyFor(
              [&] {
                return module.emitError() << where << ": '" << name << "': ";
              },
              type.getRank(), mesh)))
        return failure();
      annotateValue(value, sharding, p.priority,
                    "placement '" + p.pattern + "'");
      matched = true;
    }
    if (!matched)
      warnUnmatched(module, where, p.pattern, names);
  }
  return success();
}

static LogicalResult applyPreset(ModuleOp module, func::FuncOp func,
                                 StringRef preset) {
  if (preset == "replicate")
    return success(requireMesh(module, "preset 'replicate'") != nullptr);
  if (preset == "dp")
    return applyDataParallel(module, func, "dp", 0);
  if (preset == "fsdp")
    return applyDataParallel(module, func, "dp", 3);
  if (preset == "tp")
    return applyAutoTensorParallel(module, "tp");
  if (preset == "sp")
    return applySequenceParallel(module, func, "tp");
  InFlightDiagnostic d = module.emitError();
  d << "unknown plan '" << preset << "': not a file, and not a preset (";
  llvm::interleaveComma(presetNames(), d);
  return d << ")";
}

LogicalResult distopt::applyPlanSpec(ModuleOp module, const PlanSpec &spec) {
  func::FuncOp func = mainFunction(module);
  if (!func)
    return failure();
  // Fused projections split afterwards become one projection per part, so
  // each part can be split over devices on its own.
  splitFusedProjections(func);
  for (const std::string &preset : spec.presets)
    if (failed(applyPreset(module, func, preset)))
      return failure();
  if (!spec.styles.empty() && failed(applyStyles(module, func, spec)))
    return failure();
  if (spec.sequenceParallel &&
      failed(applySequenceParallel(module, func, spec.tpAxis)))
    return failure();
  if (spec.dpAxis &&
      failed(applyDataParallel(module, func, *spec.dpAxis, spec.dpLevel)))
    return failure();
  if (!spec.placements.empty() && failed(applyPlacements(module, func, spec)))
    return failure();
  if (spec.pipeline) {
    dist::MeshOp mesh = requireMesh(module, "pipeline");
    if (!mesh)
      return failure();
    int64_t axis = requireAxis(mesh, spec.pipeline->axis, "pipeline");
    if (axis < 0)
      return failure();
    int64_t size = mesh.getAxisSizes()[axis];
    if (spec.pipeline->stages && spec.pipeline->stages != size)
      return module.emitError()
             << spec.path << ": pipeline.stages is " << spec.pipeline->stages
             << " but mesh axis '" << spec.pipeline->axis << "' has " << size
             << " positions; one stage runs on each";
    PipelineConfig config;
    config.axis = spec.pipeline->axis;
    config.split = spec.pipeline->split;
    config.microbatches = spec.pipeline->microbatches;
    config.schedule = spec.pipeline->schedule;
    setPipelineConfig(module, config);
  }
  return success();
}

LogicalResult distopt::applyPlan(ModuleOp module, StringRef plan) {
  bool isFile = plan.ends_with(".yaml") || plan.ends_with(".yml") ||
                plan.ends_with(".json") || llvm::sys::fs::exists(plan);
  if (isFile) {
    auto spec = parsePlanFile(plan);
    if (!spec)
      return module.emitError(llvm::toString(spec.takeError()));
    return applyPlanSpec(module, *spec);
  }
  PlanSpec spec;
  spec.path = "--plan";
  SmallVector<StringRef> parts;
  plan.split(parts, ',', -1, false);
  for (StringRef p : parts)
    spec.presets.push_back(p.trim().str());
  return applyPlanSpec(module, spec);
}

int64_t distopt::plannedMicrobatches(const std::vector<std::string> &plans) {
  for (const std::string &plan : plans) {
    bool isFile = StringRef(plan).ends_with(".yaml") ||
                  StringRef(plan).ends_with(".yml") ||
                  StringRef(plan).ends_with(".json") ||
                  llvm::sys::fs::exists(plan);
    if (!isFile)
      continue;
    auto spec = parsePlanFile(plan);
    if (!spec) {
      llvm::consumeError(spec.takeError()); // reported when the plan is applied
      continue;
    }
    if (spec->pipeline)
      return spec->pipeline->microbatches;
  }
  return 1;
}

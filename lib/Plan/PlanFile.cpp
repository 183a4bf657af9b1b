//===- PlanFile.cpp - parse plan files and --plan arguments -----*- C++ -*-===//
//
// A plan file is user input: every malformed one is a diagnostic at its line
// and column, never a crash. Values are checked here as far as the file
// alone can tell (keys, styles, schedules, integer ranges); what needs the
// model or the mesh is checked when the plan is applied.
//
//===----------------------------------------------------------------------===//
#include "distopt/Plan/Plan.h"
#include "distopt/Support/YamlReader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;
using namespace distopt;
namespace yaml = llvm::yaml;

namespace {

/// Largest microbatch or stage count a plan may ask for: beyond this a
/// number is a typo, and splitting a batch that far would only exhaust
/// memory.
constexpr int64_t kMaxPlanCount = 1 << 20;

class PlanParser {
public:
  PlanParser(YamlReader &r) : r(r) {}

  LogicalResult parse(yaml::Node *root, PlanSpec &spec);

private:
  FailureOr<int64_t> count(yaml::Node *node, const Twine &what) {
    FailureOr<int64_t> v = r.integer(node, what);
    if (failed(v))
      return failure();
    if (*v <= 0 || *v > kMaxPlanCount)
      return r.error(node) << what << " must be between 1 and " << kMaxPlanCount
                           << ", got " << *v;
    return v;
  }
  LogicalResult parseTensorParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parseDataParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parseContextParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parseExpertParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parsePlacements(yaml::Node *node, PlanSpec &spec);
  LogicalResult parsePipeline(yaml::Node *node, PlanSpec &spec);

  YamlReader &r;
};

} // namespace

LogicalResult PlanParser::parseTensorParallel(yaml::Node *node,
                                              PlanSpec &spec) {
  auto map = r.mapping(node, "tensor_parallel must be a mapping with 'axis' "
                             "and 'styles'");
  if (failed(map))
    return failure();
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key == "axis") {
          FailureOr<std::string> v = r.scalar(value, "tensor_parallel.axis");
          if (failed(v))
            return failure();
          spec.tpAxis = *v;
          return success();
        }
        if (key != "styles")
          return r.error(keyNode) << "unknown key 'tensor_parallel." << key
                                  << "'; expected axis or styles";
        auto styles = r.mapping(value, "tensor_parallel.styles must map name "
                                       "patterns to styles");
        if (failed(styles))
          return failure();
        return r.forEachKey(
            *styles,
            [&](StringRef pattern, yaml::Node *patternNode,
                yaml::Node *styleNode) -> LogicalResult {
              FailureOr<std::string> style = r.scalar(styleNode, "a style");
              if (failed(style))
                return failure();
              if (*style != "colwise" && *style != "rowwise" &&
                  *style != "vocab" && *style != "replicate")
                return r.error(styleNode)
                       << "unknown style '" << *style << "' for '" << pattern
                       << "'; expected colwise, rowwise, vocab or replicate";
              spec.styles.push_back(
                  {pattern.str(), *style, r.locOf(patternNode)});
              return success();
            });
      });
}

LogicalResult PlanParser::parseDataParallel(yaml::Node *node, PlanSpec &spec) {
  auto map = r.mapping(node, "data_parallel must be a mapping with 'axis' and "
                             "'level'");
  if (failed(map))
    return failure();
  spec.dpAxis = "dp";
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key == "axis" || key == "replicate") {
          FailureOr<std::string> v =
              r.scalar(value, ("data_parallel." + key).str());
          if (failed(v))
            return failure();
          (key == "axis" ? spec.dpAxis : spec.dpReplicateAxis) = *v;
          if (key == "replicate")
            spec.dpReplicateLoc = r.locOf(value);
          return success();
        }
        if (key != "level")
          return r.error(keyNode) << "unknown key 'data_parallel." << key
                                  << "'; expected axis, level or replicate";
        FailureOr<int64_t> v = r.integer(value, "data_parallel.level");
        if (failed(v))
          return failure();
        if (*v < 0 || *v > 3)
          return r.error(value)
                 << "data_parallel.level must be 0 (replicated), 1 (optimizer "
                    "states sharded), 2 (and gradients) or 3 (and parameters), "
                    "got "
                 << *v;
        spec.dpLevel = *v;
        return success();
      });
}

LogicalResult PlanParser::parseContextParallel(yaml::Node *node,
                                               PlanSpec &spec) {
  auto map = r.mapping(node, "context_parallel must be a mapping with 'axis' "
                             "and 'attention'");
  if (failed(map))
    return failure();
  ContextParallelSpec cp;
  cp.loc = r.locOf(node);
  yaml::Node *balanceNode = nullptr;
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            if (key == "load_balance") {
              FailureOr<bool> v = r.boolean(value, "context_parallel." + key);
              if (failed(v))
                return failure();
              cp.loadBalance = *v;
              balanceNode = keyNode;
              return success();
            }
            if (key != "axis" && key != "attention")
              return r.error(keyNode)
                     << "unknown key 'context_parallel." << key
                     << "'; expected axis, attention or load_balance";
            FailureOr<std::string> v =
                r.scalar(value, ("context_parallel." + key).str());
            if (failed(v))
              return failure();
            if (key == "axis") {
              cp.axis = *v;
              return success();
            }
            if (!llvm::is_contained(contextParallelAttentions(), *v)) {
              InFlightDiagnostic d = r.error(value);
              d << "unknown context_parallel.attention '" << *v
                << "'; expected ";
              ArrayRef<StringRef> names = contextParallelAttentions();
              llvm::interleaveComma(names.drop_back(), d);
              d << " or " << names.back();
              return failure();
            }
            cp.attention = *v;
            return success();
          })))
    return failure();
  if (cp.loadBalance && cp.attention != "ring") {
    InFlightDiagnostic d = r.error(balanceNode);
    d << "context_parallel.load_balance needs attention: ring (the mirrored "
         "chunks pay off where ring attention skips the blocks a causal mask "
         "hides), not ";
    // No attention named: the cost model chooses, and may not choose ring.
    if (cp.attention.empty())
      d << "a variant left to the cost model";
    else
      d << "'" << cp.attention << "'";
    return failure();
  }
  spec.contextParallel = cp;
  return success();
}

LogicalResult PlanParser::parseExpertParallel(yaml::Node *node,
                                              PlanSpec &spec) {
  auto map = r.mapping(node, "expert_parallel must be a mapping with 'axis'");
  if (failed(map))
    return failure();
  spec.epAxis = "ep";
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key != "axis")
          return r.error(keyNode) << "unknown key 'expert_parallel." << key
                                  << "'; expected axis";
        FailureOr<std::string> v = r.scalar(value, "expert_parallel.axis");
        if (failed(v))
          return failure();
        spec.epAxis = *v;
        return success();
      });
}

LogicalResult PlanParser::parsePlacements(yaml::Node *node, PlanSpec &spec) {
  auto map = r.mapping(node, "placements must map tensor name patterns to "
                             "placements, e.g. input_ids: [S(0), R]");
  if (failed(map))
    return failure();
  return r.forEachKey(
      *map,
      [&](StringRef pattern, yaml::Node *patternNode,
          yaml::Node *value) -> LogicalResult {
        ExplicitPlacement p;
        p.pattern = pattern.str();
        p.loc = r.locOf(patternNode);
        if (auto *m = dyn_cast_or_null<yaml::MappingNode>(value)) {
          if (failed(r.forEachKey(
                  m,
                  [&](StringRef key, yaml::Node *keyNode,
                      yaml::Node *field) -> LogicalResult {
                    if (key == "placements") {
                      auto list = r.stringList(field, "placements");
                      if (failed(list))
                        return failure();
                      p.placements = *list;
                      return success();
                    }
                    if (key != "priority")
                      return r.error(keyNode)
                             << "unknown key '" << key
                             << "'; expected placements or priority";
                    FailureOr<int64_t> v = r.integer(field, "priority");
                    if (failed(v))
                      return failure();
                    if (*v < 0 || *v > kShardedStatePriority)
                      return r.error(field)
                             << "priority must be between 0 (strongest) and "
                             << int64_t(kShardedStatePriority) << ", got "
                             << *v;
                    p.priority = *v;
                    return success();
                  })))
            return failure();
        } else {
          auto list = r.stringList(value, "placements");
          if (failed(list))
            return failure();
          p.placements = *list;
        }
        if (p.placements.empty())
          return r.error(patternNode)
                 << "no placements given for '" << pattern << "'";
        spec.placements.push_back(std::move(p));
        return success();
      });
}

ArrayRef<StringRef> distopt::pipelineScheduleNames() {
  static const StringRef names[] = {"gpipe", "1f1b", "interleaved-1f1b",
                                    "zb-h1"};
  return names;
}

LogicalResult PlanParser::parsePipeline(yaml::Node *node, PlanSpec &spec) {
  auto map = r.mapping(node, "pipeline must be a mapping");
  if (failed(map))
    return failure();
  PipelineSpec pp;
  pp.loc = r.locOf(node);
  if (failed(r.forEachKey(
          *map,
          [&](StringRef key, yaml::Node *keyNode,
              yaml::Node *value) -> LogicalResult {
            if (key == "axis" || key == "split" || key == "schedule") {
              FailureOr<std::string> v = r.scalar(value, "pipeline." + key);
              if (failed(v))
                return failure();
              (key == "axis"    ? pp.axis
               : key == "split" ? pp.split
                                : pp.schedule) = *v;
              if (key == "schedule" &&
                  !llvm::is_contained(pipelineScheduleNames(), *v))
                return r.error(value)
                       << "unknown pipeline schedule '" << *v << "'; expected "
                       << llvm::join(pipelineScheduleNames(), ", ");
              return success();
            }
            if (key == "stages" || key == "microbatches" ||
                key == "virtual_stages") {
              FailureOr<int64_t> v = count(value, "pipeline." + key);
              if (failed(v))
                return failure();
              (key == "stages"         ? pp.stages
               : key == "microbatches" ? pp.microbatches
                                       : pp.virtualStages) = *v;
              return success();
            }
            return r.error(keyNode)
                   << "unknown key 'pipeline." << key
                   << "'; expected axis, split, stages, microbatches, "
                      "schedule or virtual_stages";
          })))
    return failure();
  if (pp.split.empty())
    return r.error(node) << "pipeline needs a 'split' pattern naming the "
                            "layers to cut between, e.g. split: blocks.*";
  if (pp.virtualStages > 1 && pp.schedule != "interleaved-1f1b")
    return r.error(node) << "pipeline.virtual_stages: " << pp.virtualStages
                         << " chunks per stage need schedule: "
                            "interleaved-1f1b (the schedule is "
                         << pp.schedule << ")";
  spec.pipeline = pp;
  return success();
}

LogicalResult PlanParser::parse(yaml::Node *root, PlanSpec &spec) {
  auto map = r.mapping(root, "a plan file must be a mapping of sections "
                             "(presets, tensor_parallel, sequence_parallel, "
                             "data_parallel, context_parallel, "
                             "expert_parallel, placements, "
                             "pipeline, mesh, recompute, strict)");
  if (failed(map))
    return failure();
  return r.forEachKey(
      *map,
      [&](StringRef key, yaml::Node *keyNode,
          yaml::Node *value) -> LogicalResult {
        if (key == "presets") {
          auto list = r.stringList(value, "presets");
          if (failed(list))
            return failure();
          spec.presets = *list;
          spec.loc = r.locOf(value);
          return success();
        }
        if (key == "tensor_parallel")
          return parseTensorParallel(value, spec);
        if (key == "sequence_parallel" || key == "strict") {
          FailureOr<bool> v = r.boolean(value, key);
          if (failed(v))
            return failure();
          (key == "strict" ? spec.strict : spec.sequenceParallel) = *v;
          return success();
        }
        if (key == "data_parallel")
          return parseDataParallel(value, spec);
        if (key == "context_parallel")
          return parseContextParallel(value, spec);
        if (key == "expert_parallel")
          return parseExpertParallel(value, spec);
        if (key == "placements")
          return parsePlacements(value, spec);
        if (key == "pipeline")
          return parsePipeline(value, spec);
        if (key == "mesh") {
          FailureOr<std::string> v = r.scalar(value, "mesh");
          if (failed(v))
            return failure();
          if (auto axes = parseMeshSpec(*v, "mesh"); !axes)
            return r.error(value) << llvm::toString(axes.takeError());
          spec.mesh = *v;
          spec.meshLoc = r.locOf(value);
          return success();
        }
        if (key == "recompute") {
          auto *list = dyn_cast_or_null<yaml::SequenceNode>(value);
          if (!list)
            return r.error(value) << "recompute must be a list of layer "
                                     "globs, e.g. recompute: [\"h.*\"]";
          for (yaml::Node &item : *list) {
            FailureOr<std::string> glob = r.scalar(&item, "a recompute glob");
            if (failed(glob))
              return failure();
            spec.recompute.push_back({*glob, r.locOf(&item)});
          }
          return success();
        }
        return r.error(keyNode)
               << "unknown section '" << key
               << "'; expected presets, tensor_parallel, sequence_parallel, "
                  "data_parallel, context_parallel, expert_parallel, "
                  "placements, pipeline, "
                  "mesh, recompute or strict";
      });
}

FailureOr<PlanSpec> distopt::parsePlanFile(MLIRContext *ctx, StringRef path) {
  YamlReader reader(ctx, path);
  PlanSpec spec;
  spec.source = path.str();
  spec.loc = FileLineColLoc::get(ctx, path, 0, 0);
  PlanParser parser(reader);
  if (failed(reader.parse("plan file", [&](yaml::Node *root) {
        return parser.parse(root, spec);
      })))
    return failure();
  return spec;
}

const PipelineSpec *Plan::pipeline() const {
  for (const PlanSpec &spec : specs)
    if (spec.pipeline)
      return &*spec.pipeline;
  return nullptr;
}

const ContextParallelSpec *Plan::contextParallel() const {
  // The preset's: axis cp, each attention's variant by cost.
  static const ContextParallelSpec preset;
  const ContextParallelSpec *found = nullptr;
  for (const PlanSpec &spec : specs) {
    if (llvm::is_contained(spec.presets, "cp"))
      found = &preset;
    if (spec.contextParallel)
      found = &*spec.contextParallel;
  }
  return found;
}

const PlanSpec *Plan::meshSource() const {
  for (const PlanSpec &spec : specs)
    if (!spec.mesh.empty())
      return &spec;
  return nullptr;
}

std::vector<std::pair<std::string, LocationAttr>> Plan::recompute() const {
  std::vector<std::pair<std::string, LocationAttr>> globs;
  for (const PlanSpec &spec : specs)
    globs.insert(globs.end(), spec.recompute.begin(), spec.recompute.end());
  return globs;
}

FailureOr<std::string> distopt::resolvePlanMesh(MLIRContext *ctx,
                                                StringRef flagMesh,
                                                const Plan &plan) {
  const PlanSpec *source = plan.meshSource();
  if (!source)
    return flagMesh.str();
  for (const PlanSpec &spec : plan.specs)
    if (!spec.mesh.empty() && spec.mesh != source->mesh)
      return mlir::emitError(Location(spec.meshLoc))
             << "mesh '" << spec.mesh << "' differs from mesh '" << source->mesh
             << "' of " << source->source;
  if (!flagMesh.empty() && flagMesh != source->mesh)
    return mlir::emitError(Location(source->meshLoc))
           << "the plan is for mesh '" << source->mesh << "' but --mesh is '"
           << flagMesh << "'; leave --mesh out or make them the same";
  return source->mesh;
}

int64_t Plan::microbatches() const {
  const PipelineSpec *pp = pipeline();
  return pp ? pp->microbatches : 1;
}

/// Whether a --plan argument names a file (it has a plan file's extension or
/// exists) rather than presets.
static bool isPlanFile(StringRef arg) {
  return arg.ends_with(".yaml") || arg.ends_with(".yml") ||
         arg.ends_with(".json") || llvm::sys::fs::exists(arg);
}

FailureOr<Plan> distopt::parsePlans(MLIRContext *ctx,
                                    ArrayRef<std::string> args) {
  Plan plan;
  for (const std::string &arg : args) {
    if (isPlanFile(arg)) {
      FailureOr<PlanSpec> spec = parsePlanFile(ctx, arg);
      if (failed(spec))
        return failure();
      plan.strict |= spec->strict;
      plan.specs.push_back(std::move(*spec));
      continue;
    }
    PlanSpec spec;
    spec.source = "--plan";
    spec.loc = UnknownLoc::get(ctx);
    SmallVector<StringRef> parts;
    StringRef(arg).split(parts, ',', -1, false);
    for (StringRef p : parts)
      spec.presets.push_back(p.trim().str());
    plan.specs.push_back(std::move(spec));
  }
  const PipelineSpec *first = nullptr;
  for (const PlanSpec &spec : plan.specs) {
    for (const std::string &preset : spec.presets) {
      if (llvm::is_contained(presetNames(), preset))
        continue;
      InFlightDiagnostic d = mlir::emitError(Location(spec.loc));
      if (spec.source == "--plan")
        d << "--plan: unknown plan '" << preset
          << "': not a file, and not a preset (";
      else
        d << "unknown preset '" << preset << "'; expected presets (";
      llvm::interleaveComma(presetNames(), d);
      d << ")";
      return failure();
    }
    if (!spec.pipeline)
      continue;
    if (first) {
      InFlightDiagnostic d = mlir::emitError(Location(spec.pipeline->loc))
                             << "a second pipeline section; a model is cut "
                                "into stages once";
      d.attachNote(Location(first->loc)) << "the first pipeline section";
      return failure();
    }
    first = &*spec.pipeline;
  }
  return plan;
}

//===- PlanFile.cpp - parse plan files and --plan arguments -----*- C++ -*-===//
//
// A plan file is user input: every malformed one is a diagnostic at its line
// and column, never a crash. Values are checked here as far as the file
// alone can tell (keys, styles, schedules, integer ranges); what needs the
// model or the mesh is checked when the plan is applied.
//
//===----------------------------------------------------------------------===//
#include "distopt/Plan/Plan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

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
  PlanParser(MLIRContext *ctx, StringRef path, llvm::SourceMgr &sm)
      : ctx(ctx), path(path.str()), sm(sm) {}

  FailureOr<PlanSpec> parse(yaml::Node *root);

private:
  Location locOf(yaml::Node *node) {
    if (!node || !node->getSourceRange().Start.isValid())
      return FileLineColLoc::get(ctx, path, 0, 0);
    auto [line, col] = sm.getLineAndColumn(node->getSourceRange().Start);
    return FileLineColLoc::get(ctx, path, line, col);
  }
  InFlightDiagnostic error(yaml::Node *node) {
    return mlir::emitError(locOf(node));
  }
  FailureOr<std::string> scalar(yaml::Node *node, const Twine &what) {
    auto *s = dyn_cast_or_null<yaml::ScalarNode>(node);
    if (!s)
      return error(node) << what << " must be a single value";
    SmallString<64> storage;
    return s->getValue(storage).str();
  }
  FailureOr<int64_t> integer(yaml::Node *node, const Twine &what) {
    FailureOr<std::string> text = scalar(node, what);
    if (failed(text))
      return failure();
    int64_t v;
    if (StringRef(*text).getAsInteger(10, v))
      return error(node) << what << " must be an integer, got '" << *text
                         << "'";
    return v;
  }
  FailureOr<int64_t> count(yaml::Node *node, const Twine &what) {
    FailureOr<int64_t> v = integer(node, what);
    if (failed(v))
      return failure();
    if (*v <= 0 || *v > kMaxPlanCount)
      return error(node) << what << " must be between 1 and " << kMaxPlanCount
                         << ", got " << *v;
    return v;
  }
  FailureOr<bool> boolean(yaml::Node *node, const Twine &what) {
    FailureOr<std::string> text = scalar(node, what);
    if (failed(text))
      return failure();
    StringRef t = *text;
    if (t == "true" || t == "on" || t == "yes")
      return true;
    if (t == "false" || t == "off" || t == "no")
      return false;
    return error(node) << what << " must be true or false, got '" << t << "'";
  }
  /// The entries of a mapping, or a diagnostic saying what was expected.
  FailureOr<yaml::MappingNode *> mapping(yaml::Node *node, const Twine &what) {
    auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
    if (!map)
      return error(node) << what;
    return map;
  }
  FailureOr<std::vector<std::string>> stringList(yaml::Node *node,
                                                 const Twine &what);
  LogicalResult parseTensorParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parseDataParallel(yaml::Node *node, PlanSpec &spec);
  LogicalResult parsePlacements(yaml::Node *node, PlanSpec &spec);
  LogicalResult parsePipeline(yaml::Node *node, PlanSpec &spec);

  MLIRContext *ctx;
  std::string path;
  llvm::SourceMgr &sm;
};

} // namespace

FailureOr<std::vector<std::string>> PlanParser::stringList(yaml::Node *node,
                                                           const Twine &what) {
  std::vector<std::string> out;
  if (auto *seq = dyn_cast_or_null<yaml::SequenceNode>(node)) {
    for (yaml::Node &item : *seq) {
      FailureOr<std::string> s = scalar(&item, what + " entries");
      if (failed(s))
        return failure();
      out.push_back(*s);
    }
    return out;
  }
  FailureOr<std::string> s = scalar(node, what);
  if (failed(s))
    return failure();
  // "R, S(1, sizes=[3, 1])": commas inside brackets belong to an entry.
  int depth = 0;
  std::string entry;
  for (char c : *s) {
    depth += (c == '(' || c == '[') - (c == ')' || c == ']');
    if (c == ',' && depth == 0) {
      out.push_back(StringRef(entry).trim().str());
      entry.clear();
      continue;
    }
    entry += c;
  }
  if (!StringRef(entry).trim().empty())
    out.push_back(StringRef(entry).trim().str());
  return out;
}

LogicalResult PlanParser::parseTensorParallel(yaml::Node *node,
                                              PlanSpec &spec) {
  auto map = mapping(node, "tensor_parallel must be a mapping with 'axis' and "
                           "'styles'");
  if (failed(map))
    return failure();
  for (yaml::KeyValueNode &kv : **map) {
    FailureOr<std::string> key = scalar(kv.getKey(), "a key");
    if (failed(key))
      return failure();
    if (*key == "axis") {
      FailureOr<std::string> v = scalar(kv.getValue(), "tensor_parallel.axis");
      if (failed(v))
        return failure();
      spec.tpAxis = *v;
    } else if (*key == "styles") {
      auto styles = mapping(kv.getValue(), "tensor_parallel.styles must map "
                                           "name patterns to styles");
      if (failed(styles))
        return failure();
      for (yaml::KeyValueNode &rule : **styles) {
        FailureOr<std::string> pattern =
            scalar(rule.getKey(), "a style pattern");
        if (failed(pattern))
          return failure();
        FailureOr<std::string> style = scalar(rule.getValue(), "a style");
        if (failed(style))
          return failure();
        if (*style != "colwise" && *style != "rowwise" && *style != "vocab" &&
            *style != "replicate")
          return error(rule.getValue())
                 << "unknown style '" << *style << "' for '" << *pattern
                 << "'; expected colwise, rowwise, vocab or replicate";
        spec.styles.push_back({*pattern, *style, locOf(rule.getKey())});
      }
    } else {
      return error(kv.getKey()) << "unknown key 'tensor_parallel." << *key
                                << "'; expected axis or styles";
    }
  }
  return success();
}

LogicalResult PlanParser::parseDataParallel(yaml::Node *node, PlanSpec &spec) {
  auto map = mapping(node, "data_parallel must be a mapping with 'axis' and "
                           "'level'");
  if (failed(map))
    return failure();
  spec.dpAxis = "dp";
  for (yaml::KeyValueNode &kv : **map) {
    FailureOr<std::string> key = scalar(kv.getKey(), "a key");
    if (failed(key))
      return failure();
    if (*key == "axis") {
      FailureOr<std::string> v = scalar(kv.getValue(), "data_parallel.axis");
      if (failed(v))
        return failure();
      spec.dpAxis = *v;
    } else if (*key == "level") {
      FailureOr<int64_t> v = integer(kv.getValue(), "data_parallel.level");
      if (failed(v))
        return failure();
      if (*v < 0 || *v > 3)
        return error(kv.getValue())
               << "data_parallel.level must be 0 (replicated), 1 (optimizer "
                  "states sharded), 2 (and gradients) or 3 (and parameters), "
                  "got "
               << *v;
      spec.dpLevel = *v;
    } else {
      return error(kv.getKey()) << "unknown key 'data_parallel." << *key
                                << "'; expected axis or level";
    }
  }
  return success();
}

LogicalResult PlanParser::parsePlacements(yaml::Node *node, PlanSpec &spec) {
  auto map = mapping(node, "placements must map tensor name patterns to "
                           "placements, e.g. input_ids: [S(0), R]");
  if (failed(map))
    return failure();
  for (yaml::KeyValueNode &kv : **map) {
    FailureOr<std::string> pattern = scalar(kv.getKey(), "a tensor pattern");
    if (failed(pattern))
      return failure();
    ExplicitPlacement p;
    p.pattern = *pattern;
    p.loc = locOf(kv.getKey());
    yaml::Node *value = kv.getValue();
    if (auto *m = dyn_cast_or_null<yaml::MappingNode>(value)) {
      for (yaml::KeyValueNode &field : *m) {
        FailureOr<std::string> key = scalar(field.getKey(), "a key");
        if (failed(key))
          return failure();
        if (*key == "placements") {
          auto list = stringList(field.getValue(), "placements");
          if (failed(list))
            return failure();
          p.placements = *list;
        } else if (*key == "priority") {
          FailureOr<int64_t> v = integer(field.getValue(), "priority");
          if (failed(v))
            return failure();
          if (*v < 0 || *v > kShardedStatePriority)
            return error(field.getValue())
                   << "priority must be between 0 (strongest) and "
                   << int64_t(kShardedStatePriority) << ", got " << *v;
          p.priority = *v;
        } else {
          return error(field.getKey()) << "unknown key '" << *key
                                       << "'; expected placements or priority";
        }
      }
    } else {
      auto list = stringList(value, "placements");
      if (failed(list))
        return failure();
      p.placements = *list;
    }
    if (p.placements.empty())
      return error(kv.getKey())
             << "no placements given for '" << *pattern << "'";
    spec.placements.push_back(std::move(p));
  }
  return success();
}

LogicalResult PlanParser::parsePipeline(yaml::Node *node, PlanSpec &spec) {
  auto map = mapping(node, "pipeline must be a mapping");
  if (failed(map))
    return failure();
  PipelineSpec pp;
  pp.loc = locOf(node);
  for (yaml::KeyValueNode &kv : **map) {
    FailureOr<std::string> key = scalar(kv.getKey(), "a key");
    if (failed(key))
      return failure();
    if (*key == "axis" || *key == "split" || *key == "schedule") {
      FailureOr<std::string> v = scalar(kv.getValue(), "pipeline." + *key);
      if (failed(v))
        return failure();
      (*key == "axis"    ? pp.axis
       : *key == "split" ? pp.split
                         : pp.schedule) = *v;
      if (*key == "schedule" && *v != "gpipe" && *v != "1f1b")
        return error(kv.getValue()) << "unknown pipeline schedule '" << *v
                                    << "'; expected gpipe or 1f1b";
    } else if (*key == "stages" || *key == "microbatches") {
      FailureOr<int64_t> v = count(kv.getValue(), "pipeline." + *key);
      if (failed(v))
        return failure();
      (*key == "stages" ? pp.stages : pp.microbatches) = *v;
    } else {
      return error(kv.getKey())
             << "unknown key 'pipeline." << *key
             << "'; expected axis, split, stages, microbatches or schedule";
    }
  }
  if (pp.split.empty())
    return error(node) << "pipeline needs a 'split' pattern naming the layers "
                          "to cut between, e.g. split: blocks.*";
  spec.pipeline = pp;
  return success();
}

FailureOr<PlanSpec> PlanParser::parse(yaml::Node *root) {
  PlanSpec spec;
  spec.source = path;
  spec.loc = FileLineColLoc::get(ctx, path, 0, 0);
  auto map = mapping(root, "a plan file must be a mapping of sections "
                           "(presets, tensor_parallel, sequence_parallel, "
                           "data_parallel, placements, pipeline, strict)");
  if (failed(map))
    return failure();
  for (yaml::KeyValueNode &kv : **map) {
    FailureOr<std::string> key = scalar(kv.getKey(), "a section name");
    if (failed(key))
      return failure();
    LogicalResult ok = success();
    if (*key == "presets") {
      auto list = stringList(kv.getValue(), "presets");
      if (failed(list))
        return failure();
      spec.presets = *list;
      spec.loc = locOf(kv.getValue());
    } else if (*key == "tensor_parallel") {
      ok = parseTensorParallel(kv.getValue(), spec);
    } else if (*key == "sequence_parallel") {
      FailureOr<bool> v = boolean(kv.getValue(), "sequence_parallel");
      if (failed(v))
        return failure();
      spec.sequenceParallel = *v;
    } else if (*key == "data_parallel") {
      ok = parseDataParallel(kv.getValue(), spec);
    } else if (*key == "placements") {
      ok = parsePlacements(kv.getValue(), spec);
    } else if (*key == "pipeline") {
      ok = parsePipeline(kv.getValue(), spec);
    } else if (*key == "strict") {
      FailureOr<bool> v = boolean(kv.getValue(), "strict");
      if (failed(v))
        return failure();
      spec.strict = *v;
    } else {
      return error(kv.getKey())
             << "unknown section '" << *key
             << "'; expected presets, tensor_parallel, sequence_parallel, "
                "data_parallel, placements, pipeline or strict";
    }
    if (failed(ok))
      return failure();
  }
  return spec;
}

FailureOr<PlanSpec> distopt::parsePlanFile(MLIRContext *ctx, StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return mlir::emitError(UnknownLoc::get(ctx))
           << "cannot read plan file " << path << ": "
           << buffer.getError().message();
  llvm::SourceMgr sm;
  // The YAML scanner reports syntax errors through the source manager: the
  // first one becomes the diagnostic.
  std::optional<std::pair<Location, std::string>> syntaxError;
  std::pair<MLIRContext *, std::optional<std::pair<Location, std::string>> *>
      state{ctx, &syntaxError};
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic &d, void *context) {
        auto *s = static_cast<decltype(state) *>(context);
        if (*s->second)
          return;
        Location loc = FileLineColLoc::get(s->first, d.getFilename(),
                                           d.getLineNo(), d.getColumnNo() + 1);
        s->second->emplace(loc, d.getMessage().str());
      },
      &state);
  yaml::Stream stream((*buffer)->getMemBufferRef(), sm);
  yaml::document_iterator doc = stream.begin();
  if (doc == stream.end() || !doc->getRoot() || syntaxError) {
    if (syntaxError)
      return mlir::emitError(syntaxError->first)
             << "malformed plan: " << syntaxError->second;
    return mlir::emitError(FileLineColLoc::get(ctx, path, 0, 0))
           << "plan file is empty";
  }
  PlanParser parser(ctx, path, sm);
  // Syntax errors surface while the document is walked; they win over what
  // the walk made of the broken document.
  FailureOr<PlanSpec> spec;
  {
    ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &d) {
      return syntaxError ? success() : failure();
    });
    spec = parser.parse(doc->getRoot());
    if (!syntaxError)
      doc->skip(); // the rest of the document, for its syntax errors
  }
  if (syntaxError || stream.failed())
    return mlir::emitError(syntaxError
                               ? syntaxError->first
                               : Location(FileLineColLoc::get(ctx, path, 0, 0)))
           << "malformed plan: "
           << (syntaxError ? syntaxError->second : "bad YAML");
  return spec;
}

const PipelineSpec *Plan::pipeline() const {
  for (const PlanSpec &spec : specs)
    if (spec.pipeline)
      return &*spec.pipeline;
  return nullptr;
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
    for (StringRef p : parts) {
      p = p.trim();
      if (!llvm::is_contained(presetNames(), p)) {
        InFlightDiagnostic d = mlir::emitError(UnknownLoc::get(ctx));
        d << "--plan: unknown plan '" << p
          << "': not a file, and not a preset (";
        llvm::interleaveComma(presetNames(), d);
        return d << ")";
      }
      spec.presets.push_back(p.str());
    }
    plan.specs.push_back(std::move(spec));
  }
  const PipelineSpec *first = nullptr;
  for (const PlanSpec &spec : plan.specs) {
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
  for (const PlanSpec &spec : plan.specs)
    for (const std::string &preset : spec.presets)
      if (!llvm::is_contained(presetNames(), preset)) {
        InFlightDiagnostic d = mlir::emitError(Location(spec.loc));
        d << "unknown preset '" << preset << "'; expected ";
        llvm::interleaveComma(presetNames(), d);
        return failure();
      }
  return plan;
}

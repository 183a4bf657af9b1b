//===- PlanFile.cpp - parse plan files --------------------------*- C++ -*-===//
#include "distopt/Plan/Plan.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

using namespace llvm;
using namespace distopt;

namespace {

class PlanParser {
public:
  PlanParser(StringRef path, SourceMgr &sm) : path(path), sm(sm) {}

  Expected<PlanSpec> parse(yaml::Node *root);

private:
  Error error(yaml::Node *node, const Twine &message) {
    unsigned line = node ? sm.FindLineNumber(node->getSourceRange().Start) : 0;
    return createStringError(path + ":" + Twine(line) + ": " + message);
  }
  int lineOf(yaml::Node *node) {
    return sm.FindLineNumber(node->getSourceRange().Start);
  }
  Expected<std::string> scalar(yaml::Node *node, const Twine &what) {
    auto *s = dyn_cast_or_null<yaml::ScalarNode>(node);
    if (!s)
      return error(node, what + " must be a single value");
    SmallString<64> storage;
    return s->getValue(storage).str();
  }
  Expected<int64_t> integer(yaml::Node *node, const Twine &what) {
    auto text = scalar(node, what);
    if (!text)
      return text.takeError();
    int64_t v;
    if (StringRef(*text).getAsInteger(10, v))
      return error(node, what + " must be an integer, got '" + *text + "'");
    return v;
  }
  Expected<bool> boolean(yaml::Node *node, const Twine &what) {
    auto text = scalar(node, what);
    if (!text)
      return text.takeError();
    StringRef t = *text;
    if (t == "true" || t == "on" || t == "yes")
      return true;
    if (t == "false" || t == "off" || t == "no")
      return false;
    return error(node, what + " must be true or false, got '" + t + "'");
  }
  Error parseTensorParallel(yaml::Node *node, PlanSpec &spec);
  Error parseDataParallel(yaml::Node *node, PlanSpec &spec);
  Error parsePlacements(yaml::Node *node, PlanSpec &spec);
  Error parsePipeline(yaml::Node *node, PlanSpec &spec);
  Expected<std::vector<std::string>> stringList(yaml::Node *node,
                                                const Twine &what);

  std::string path;
  SourceMgr &sm;
};

} // namespace

Expected<std::vector<std::string>> PlanParser::stringList(yaml::Node *node,
                                                          const Twine &what) {
  std::vector<std::string> out;
  if (auto *seq = dyn_cast_or_null<yaml::SequenceNode>(node)) {
    for (yaml::Node &item : *seq) {
      auto s = scalar(&item, what + " entries");
      if (!s)
        return s.takeError();
      out.push_back(*s);
    }
    return out;
  }
  auto s = scalar(node, what);
  if (!s)
    return s.takeError();
  SmallVector<StringRef> parts;
  StringRef(*s).split(parts, ',', -1, false);
  for (StringRef p : parts)
    out.push_back(p.trim().str());
  return out;
}

Error PlanParser::parseTensorParallel(yaml::Node *node, PlanSpec &spec) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return error(node, "tensor_parallel must be a mapping with 'axis' and "
                       "'styles'");
  for (yaml::KeyValueNode &kv : *map) {
    auto key = scalar(kv.getKey(), "a key");
    if (!key)
      return key.takeError();
    if (*key == "axis") {
      auto v = scalar(kv.getValue(), "tensor_parallel.axis");
      if (!v)
        return v.takeError();
      spec.tpAxis = *v;
    } else if (*key == "styles") {
      auto *styles = dyn_cast_or_null<yaml::MappingNode>(kv.getValue());
      if (!styles)
        return error(kv.getValue(), "tensor_parallel.styles must map name "
                                    "patterns to styles");
      for (yaml::KeyValueNode &rule : *styles) {
        auto pattern = scalar(rule.getKey(), "a style pattern");
        if (!pattern)
          return pattern.takeError();
        auto style = scalar(rule.getValue(), "a style");
        if (!style)
          return style.takeError();
        if (*style != "colwise" && *style != "rowwise" && *style != "vocab" &&
            *style != "replicate")
          return error(rule.getValue(),
                       "unknown style '" + *style + "' for '" + *pattern +
                           "'; expected colwise, rowwise, vocab or replicate");
        spec.styles.push_back({*pattern, *style, lineOf(rule.getKey())});
      }
    } else {
      return error(kv.getKey(), "unknown key 'tensor_parallel." + *key +
                                    "'; expected axis or styles");
    }
  }
  return Error::success();
}

Error PlanParser::parseDataParallel(yaml::Node *node, PlanSpec &spec) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return error(node, "data_parallel must be a mapping with 'axis' and "
                       "'level'");
  spec.dpAxis = "dp";
  for (yaml::KeyValueNode &kv : *map) {
    auto key = scalar(kv.getKey(), "a key");
    if (!key)
      return key.takeError();
    if (*key == "axis") {
      auto v = scalar(kv.getValue(), "data_parallel.axis");
      if (!v)
        return v.takeError();
      spec.dpAxis = *v;
    } else if (*key == "level") {
      auto v = integer(kv.getValue(), "data_parallel.level");
      if (!v)
        return v.takeError();
      if (*v != 0 && *v != 3)
        return error(kv.getValue(),
                     "data_parallel.level must be 0 (replicated parameters) "
                     "or 3 (parameters sharded over the data axis)");
      spec.dpLevel = *v;
    } else {
      return error(kv.getKey(), "unknown key 'data_parallel." + *key +
                                    "'; expected axis or level");
    }
  }
  return Error::success();
}

Error PlanParser::parsePlacements(yaml::Node *node, PlanSpec &spec) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return error(node, "placements must map tensor name patterns to "
                       "placements, e.g. input_ids: [S(0), R]");
  for (yaml::KeyValueNode &kv : *map) {
    auto pattern = scalar(kv.getKey(), "a tensor pattern");
    if (!pattern)
      return pattern.takeError();
    ExplicitPlacement p;
    p.pattern = *pattern;
    p.line = lineOf(kv.getKey());
    yaml::Node *value = kv.getValue();
    if (auto *m = dyn_cast_or_null<yaml::MappingNode>(value)) {
      for (yaml::KeyValueNode &field : *m) {
        auto key = scalar(field.getKey(), "a key");
        if (!key)
          return key.takeError();
        if (*key == "placements") {
          auto list = stringList(field.getValue(), "placements");
          if (!list)
            return list.takeError();
          p.placements = *list;
        } else if (*key == "priority") {
          auto v = integer(field.getValue(), "priority");
          if (!v)
            return v.takeError();
          if (*v < 0)
            return error(field.getValue(), "priority must be non-negative");
          p.priority = *v;
        } else {
          return error(field.getKey(),
                       "unknown key '" + *key +
                           "'; expected placements or priority");
        }
      }
    } else {
      auto list = stringList(value, "placements");
      if (!list)
        return list.takeError();
      p.placements = *list;
    }
    if (p.placements.empty())
      return error(kv.getKey(), "no placements given for '" + *pattern + "'");
    spec.placements.push_back(std::move(p));
  }
  return Error::success();
}

Error PlanParser::parsePipeline(yaml::Node *node, PlanSpec &spec) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return error(node, "pipeline must be a mapping");
  PipelineSpec pp;
  for (yaml::KeyValueNode &kv : *map) {
    auto key = scalar(kv.getKey(), "a key");
    if (!key)
      return key.takeError();
    if (*key == "axis" || *key == "split" || *key == "schedule") {
      auto v = scalar(kv.getValue(), "pipeline." + *key);
      if (!v)
        return v.takeError();
      (*key == "axis"    ? pp.axis
       : *key == "split" ? pp.split
                         : pp.schedule) = *v;
    } else if (*key == "stages" || *key == "microbatches") {
      auto v = integer(kv.getValue(), "pipeline." + *key);
      if (!v)
        return v.takeError();
      if (*v <= 0)
        return error(kv.getValue(), "pipeline." + *key + " must be positive");
      (*key == "stages" ? pp.stages : pp.microbatches) = *v;
    } else {
      return error(kv.getKey(), "unknown key 'pipeline." + *key +
                                    "'; expected axis, split, stages, "
                                    "microbatches or schedule");
    }
  }
  if (pp.schedule != "gpipe" && pp.schedule != "1f1b")
    return error(node, "unknown pipeline schedule '" + pp.schedule +
                           "'; expected gpipe or 1f1b");
  if (pp.split.empty())
    return error(node, "pipeline needs a 'split' pattern naming the layers to "
                       "cut between, e.g. split: blocks.*");
  spec.pipeline = pp;
  return Error::success();
}

Expected<PlanSpec> PlanParser::parse(yaml::Node *root) {
  PlanSpec spec;
  spec.path = path;
  auto *map = dyn_cast_or_null<yaml::MappingNode>(root);
  if (!map)
    return error(root, "a plan file must be a mapping of sections "
                       "(presets, tensor_parallel, sequence_parallel, "
                       "data_parallel, placements, pipeline)");
  for (yaml::KeyValueNode &kv : *map) {
    auto key = scalar(kv.getKey(), "a section name");
    if (!key)
      return key.takeError();
    Error err = Error::success();
    if (*key == "presets") {
      auto list = stringList(kv.getValue(), "presets");
      if (!list)
        return list.takeError();
      spec.presets = *list;
    } else if (*key == "tensor_parallel") {
      err = parseTensorParallel(kv.getValue(), spec);
    } else if (*key == "sequence_parallel") {
      auto v = boolean(kv.getValue(), "sequence_parallel");
      if (!v)
        return v.takeError();
      spec.sequenceParallel = *v;
    } else if (*key == "data_parallel") {
      err = parseDataParallel(kv.getValue(), spec);
    } else if (*key == "placements") {
      err = parsePlacements(kv.getValue(), spec);
    } else if (*key == "pipeline") {
      err = parsePipeline(kv.getValue(), spec);
    } else {
      return error(kv.getKey(),
                   "unknown section '" + *key +
                       "'; expected presets, tensor_parallel, "
                       "sequence_parallel, data_parallel, placements or "
                       "pipeline");
    }
    if (err)
      return std::move(err);
  }
  return spec;
}

Expected<PlanSpec> distopt::parsePlanFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError("cannot read plan file " + path.str() + ": " +
                             buffer.getError().message());
  SourceMgr sm;
  std::string diag;
  sm.setDiagHandler(
      [](const SMDiagnostic &d, void *ctx) {
        auto *out = static_cast<std::string *>(ctx);
        if (out->empty())
          *out = d.getFilename().str() + ":" + std::to_string(d.getLineNo()) +
                 ": " + d.getMessage().str();
      },
      &diag);
  yaml::Stream stream((*buffer)->getMemBufferRef(), sm);
  yaml::document_iterator doc = stream.begin();
  if (doc == stream.end() || !doc->getRoot())
    return createStringError("plan file " + path.str() + " is empty");
  yaml::Node *root = doc->getRoot();
  PlanParser parser(path, sm);
  // Force the whole document to be parsed so syntax errors surface.
  Expected<PlanSpec> spec = parser.parse(root);
  if (!diag.empty() || stream.failed()) {
    consumeError(spec.takeError());
    return createStringError(diag.empty() ? path.str() + ": malformed YAML"
                                          : diag);
  }
  return spec;
}

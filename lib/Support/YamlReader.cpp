//===- YamlReader.cpp - user files in YAML, read with locations -*- C++ -*-===//
#include "distopt/Support/YamlReader.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace distopt;
namespace yaml = llvm::yaml;

YamlReader::YamlReader(MLIRContext *ctx, StringRef path)
    : ctx(ctx), file(path.str()) {
  // The scanner reports syntax errors through the source manager: keep the
  // first one.
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic &d, void *context) {
        auto *self = static_cast<YamlReader *>(context);
        if (self->syntaxError)
          return;
        Location loc = FileLineColLoc::get(self->ctx, self->file, d.getLineNo(),
                                           d.getColumnNo() + 1);
        self->syntaxError.emplace(loc, d.getMessage().str());
      },
      this);
}

YamlReader::~YamlReader() = default;

LogicalResult
YamlReader::parse(StringRef what,
                  function_ref<LogicalResult(yaml::Node *)> body) {
  auto buffer = llvm::MemoryBuffer::getFile(file);
  if (!buffer)
    return emitError(UnknownLoc::get(ctx))
           << "cannot read " << what << " " << file << ": "
           << buffer.getError().message();
  unsigned id = sm.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  yaml::Stream stream(sm.getMemoryBuffer(id)->getMemBufferRef(), sm);
  yaml::document_iterator doc = stream.begin();
  auto malformed = [&]() -> LogicalResult {
    return emitError(syntaxError->first)
           << "malformed " << what << ": " << syntaxError->second;
  };
  if (doc == stream.end() || !doc->getRoot() || syntaxError) {
    if (syntaxError)
      return malformed();
    return emitError(FileLineColLoc::get(ctx, file, 0, 0))
           << what << " is empty";
  }
  LogicalResult result = success();
  {
    // Diagnostics about a broken document are noise once the scanner has
    // complained: the syntax error is reported instead.
    ScopedDiagnosticHandler quiet(
        ctx, [&](Diagnostic &) { return syntaxError ? success() : failure(); });
    result = body(doc->getRoot());
    if (!syntaxError)
      doc->skip(); // the rest of the document, for its syntax errors
  }
  if (syntaxError)
    return malformed();
  if (stream.failed())
    return emitError(FileLineColLoc::get(ctx, file, 0, 0))
           << "malformed " << what;
  return result;
}

Location YamlReader::locOf(yaml::Node *node) {
  if (!node || !node->getSourceRange().Start.isValid())
    return FileLineColLoc::get(ctx, file, 0, 0);
  auto [line, col] = sm.getLineAndColumn(node->getSourceRange().Start);
  return FileLineColLoc::get(ctx, file, line, col);
}

FailureOr<std::string> YamlReader::scalar(yaml::Node *node, const Twine &what) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(node);
  if (!s)
    return error(node) << what << " must be a single value";
  SmallString<64> storage;
  return s->getValue(storage).str();
}

FailureOr<int64_t> YamlReader::integer(yaml::Node *node, const Twine &what) {
  FailureOr<std::string> text = scalar(node, what);
  if (failed(text))
    return failure();
  int64_t v;
  if (StringRef(*text).getAsInteger(10, v))
    return error(node) << what << " must be an integer, got '" << *text << "'";
  return v;
}

FailureOr<double> YamlReader::number(yaml::Node *node, const Twine &what) {
  FailureOr<std::string> text = scalar(node, what);
  if (failed(text))
    return failure();
  double v;
  if (StringRef(*text).trim().getAsDouble(v) || !std::isfinite(v))
    return error(node) << what << " must be a finite number, got '" << *text
                       << "'";
  return v;
}

FailureOr<bool> YamlReader::boolean(yaml::Node *node, const Twine &what) {
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

FailureOr<yaml::MappingNode *> YamlReader::mapping(yaml::Node *node,
                                                   const Twine &expected) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return error(node) << expected;
  return map;
}

FailureOr<std::vector<std::string>> YamlReader::stringList(yaml::Node *node,
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

FailureOr<std::vector<double>> YamlReader::numberList(yaml::Node *node,
                                                      const Twine &what) {
  auto *seq = dyn_cast_or_null<yaml::SequenceNode>(node);
  if (!seq)
    return error(node) << what << " must be a list of numbers";
  std::vector<double> out;
  for (yaml::Node &item : *seq) {
    FailureOr<double> v = number(&item, what + " entries");
    if (failed(v))
      return failure();
    out.push_back(*v);
  }
  return out;
}

LogicalResult YamlReader::forEachKey(
    yaml::MappingNode *map,
    function_ref<LogicalResult(StringRef, yaml::Node *, yaml::Node *)> entry) {
  for (yaml::KeyValueNode &kv : *map) {
    FailureOr<std::string> key = scalar(kv.getKey(), "a key");
    if (failed(key) || failed(entry(*key, kv.getKey(), kv.getValue())))
      return failure();
  }
  return success();
}

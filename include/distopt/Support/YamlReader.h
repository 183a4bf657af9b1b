//===- YamlReader.h - user files in YAML, read with locations ---*- C++ -*-===//
//
// Plan files and training configs are user input in YAML (or JSON, which is
// YAML): every value is read with the file, line and column it came from,
// so a mistake is a diagnostic that points at it, and a malformed document
// is refused with the scanner's first complaint, never a crash.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_SUPPORT_YAMLREADER_H
#define DISTOPT_SUPPORT_YAMLREADER_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace distopt {

class YamlReader {
public:
  YamlReader(mlir::MLIRContext *ctx, llvm::StringRef path);
  ~YamlReader();

  /// Reads the file and parses its document with `body(root)`. Fails with a
  /// diagnostic when the file cannot be read, is empty or malformed (the
  /// syntax error wins over what `body` made of a broken document).
  mlir::LogicalResult
  parse(llvm::StringRef what,
        llvm::function_ref<mlir::LogicalResult(llvm::yaml::Node *)> body);

  mlir::Location locOf(llvm::yaml::Node *node);
  mlir::InFlightDiagnostic error(llvm::yaml::Node *node) {
    return mlir::emitError(locOf(node));
  }

  mlir::FailureOr<std::string> scalar(llvm::yaml::Node *node,
                                      const llvm::Twine &what);
  mlir::FailureOr<int64_t> integer(llvm::yaml::Node *node,
                                   const llvm::Twine &what);
  mlir::FailureOr<double> number(llvm::yaml::Node *node,
                                 const llvm::Twine &what);
  mlir::FailureOr<bool> boolean(llvm::yaml::Node *node,
                                const llvm::Twine &what);
  /// A mapping, or a diagnostic `expected` at the node.
  mlir::FailureOr<llvm::yaml::MappingNode *>
  mapping(llvm::yaml::Node *node, const llvm::Twine &expected);
  /// A sequence of scalars, or one scalar holding a comma-separated list
  /// (commas inside brackets belong to an entry).
  mlir::FailureOr<std::vector<std::string>> stringList(llvm::yaml::Node *node,
                                                       const llvm::Twine &what);
  /// A sequence of numbers.
  mlir::FailureOr<std::vector<double>> numberList(llvm::yaml::Node *node,
                                                  const llvm::Twine &what);
  /// Calls `entry(key, value)` for each key of a mapping.
  mlir::LogicalResult
  forEachKey(llvm::yaml::MappingNode *map,
             llvm::function_ref<mlir::LogicalResult(llvm::StringRef key,
                                                    llvm::yaml::Node *keyNode,
                                                    llvm::yaml::Node *value)>
                 entry);

  mlir::MLIRContext *context() const { return ctx; }
  llvm::StringRef path() const { return file; }

private:
  mlir::MLIRContext *ctx;
  std::string file;
  llvm::SourceMgr sm;
  std::optional<std::pair<mlir::Location, std::string>> syntaxError;
};

} // namespace distopt

#endif // DISTOPT_SUPPORT_YAMLREADER_H

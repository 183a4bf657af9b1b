//===- EinsumEquation.cpp - nn.einsum's equation, parsed --------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/EinsumEquation.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace distopt::nn;

static bool isLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

std::optional<EinsumEquation> EinsumEquation::parse(StringRef text,
                                                    std::string &error) {
  auto arrow = text.find("->");
  if (arrow == StringRef::npos) {
    error = "equation '" + text.str() + "' has no '->'";
    return std::nullopt;
  }
  EinsumEquation eq;
  SmallVector<StringRef> terms;
  text.take_front(arrow).split(terms, ',');
  for (StringRef t : terms)
    eq.inputs.push_back(t.str());
  eq.output = text.drop_front(arrow + 2).str();
  for (const std::string &t : eq.inputs)
    for (char c : t)
      if (!isLetter(c)) {
        error = "equation '" + text.str() + "': '" + std::string(1, c) +
                "' is not an index letter";
        return std::nullopt;
      }
  for (auto [i, c] : llvm::enumerate(eq.output)) {
    if (!isLetter(c) || eq.output.find(c) != i) {
      error = "equation '" + text.str() + "': result letter '" +
              std::string(1, c) + "' is not a letter or repeats";
      return std::nullopt;
    }
    if (llvm::none_of(eq.inputs, [&](const std::string &t) {
          return t.find(c) != std::string::npos;
        })) {
      error = "equation '" + text.str() + "': result letter '" +
              std::string(1, c) + "' names no operand dimension";
      return std::nullopt;
    }
  }
  return eq;
}

std::string EinsumEquation::str() const {
  return llvm::join(inputs, ",") + "->" + output;
}

bool EinsumEquation::letterExtents(ArrayRef<ArrayRef<int64_t>> shapes,
                                   SmallVectorImpl<int64_t> &resultShape,
                                   std::string &error) const {
  if (shapes.size() != inputs.size()) {
    error = "equation '" + str() + "' has " + std::to_string(inputs.size()) +
            " terms for " + std::to_string(shapes.size()) + " operands";
    return false;
  }
  std::map<char, int64_t> extent;
  for (auto [i, term] : llvm::enumerate(inputs)) {
    if (term.size() != shapes[i].size()) {
      error = "term '" + term + "' of equation '" + str() + "' has " +
              std::to_string(term.size()) + " letters for operand " +
              std::to_string(i) + " of rank " +
              std::to_string(shapes[i].size());
      return false;
    }
    for (auto [d, c] : llvm::enumerate(term)) {
      int64_t s = shapes[i][d];
      auto [it, inserted] = extent.insert({c, s});
      if (inserted || s == ShapedType::kDynamic)
        continue;
      if (it->second == ShapedType::kDynamic)
        it->second = s;
      else if (it->second != s) {
        error = "letter '" + std::string(1, c) + "' of equation '" + str() +
                "' names extents " + std::to_string(it->second) + " and " +
                std::to_string(s);
        return false;
      }
    }
  }
  resultShape.clear();
  for (char c : output)
    resultShape.push_back(extent.at(c));
  return true;
}

//===- EinsumEquation.h - nn.einsum's equation, parsed ----------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_NN_IR_EINSUMEQUATION_H
#define DISTOPT_DIALECT_NN_IR_EINSUMEQUATION_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace distopt::nn {

/// An nn.einsum equation in explicit form ("bij,bjk->bik"): one string of
/// letters per operand and one for the result.
struct EinsumEquation {
  llvm::SmallVector<std::string> inputs;
  std::string output;

  /// Parses `text`; on failure `error` says what is wrong.
  static std::optional<EinsumEquation> parse(llvm::StringRef text,
                                             std::string &error);
  std::string str() const;
  /// The extent of every letter across `shapes` (one per operand), checked
  /// against the terms' lengths and each other; the result shape goes to
  /// `resultShape`. Dynamic extents are taken as agreeing.
  bool letterExtents(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                     llvm::SmallVectorImpl<int64_t> &resultShape,
                     std::string &error) const;
};

/// The debug name of EinsumOp's canonicalization that turns a matrix
/// product einsum into nn.matmul, for a canonicalizer that runs only it.
inline constexpr llvm::StringLiteral kEinsumAsMatMulPattern =
    "nn-einsum-as-matmul";

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_EINSUMEQUATION_H

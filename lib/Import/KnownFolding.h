//===- KnownFolding.h - evaluate shape arithmetic at import -----*- C++ -*-===//
#ifndef DISTOPT_LIB_IMPORT_KNOWNFOLDING_H
#define DISTOPT_LIB_IMPORT_KNOWNFOLDING_H

#include "ImportContext.h"

namespace distopt::onnximport {

/// Whether tryFold evaluates this op type (element-wise ops).
bool isElementwiseFoldable(llvm::StringRef op);

// Data movement on known values; callers validate the arguments and keep the
// result within kMaxFoldElements.
Known knownReshape(const Known &k, std::vector<int64_t> shape);
Known knownTranspose(const Known &k, llvm::ArrayRef<int64_t> perm);
/// Element i of dimension d comes from starts[d] + i * steps[d].
Known knownSlice(const Known &k, llvm::ArrayRef<int64_t> starts,
                 llvm::ArrayRef<int64_t> steps, llvm::ArrayRef<int64_t> shape);
/// Indices already checked to be in [-extent, extent).
Known knownGather(const Known &k, const Known &indices, int64_t axis);
Known knownConcat(llvm::ArrayRef<const Known *> parts, int64_t axis);
Known knownBroadcast(const Known &k, llvm::ArrayRef<int64_t> shape);
std::optional<Known> knownReduce(const Known &k, llvm::ArrayRef<int64_t> axes,
                                 bool keepdims, llvm::StringRef op,
                                 mlir::Type elementType);
Known knownCast(const Known &k, mlir::Type to);

} // namespace distopt::onnximport

#endif // DISTOPT_LIB_IMPORT_KNOWNFOLDING_H

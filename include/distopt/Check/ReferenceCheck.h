//===- ReferenceCheck.h - compare a run with one device ---------*- C++ -*-===//
#ifndef DISTOPT_CHECK_REFERENCECHECK_H
#define DISTOPT_CHECK_REFERENCECHECK_H

#include "distopt/Check/TensorComparison.h"
#include "distopt/Session/Session.h"

namespace distopt {

struct ReferenceCheck {
  bool passed = true;
  size_t checked = 0;
  /// One line per output and microbatch: its max difference and verdict.
  std::vector<std::string> lines;
};

/// Compiles the model for one device, runs it on each microbatch's inputs
/// and compares with `outputs` (what the distributed run produced).
llvm::Expected<ReferenceCheck> checkAgainstSingleDevice(
    mlir::MLIRContext &ctx, llvm::StringRef modelPath,
    const CompileOptions &distributed,
    const std::vector<std::vector<distrt::NamedTensor>> &inputs,
    const std::vector<std::vector<distrt::NamedTensor>> &outputs,
    const RunSettings &settings, const Tolerances &tolerances);

} // namespace distopt

#endif // DISTOPT_CHECK_REFERENCECHECK_H

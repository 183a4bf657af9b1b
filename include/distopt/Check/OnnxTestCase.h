//===- OnnxTestCase.h - run one ONNX backend test case ----------*- C++ -*-===//
//
// An ONNX backend test case is a directory with model.onnx and
// test_data_set_<k>/{input_<i>.pb, output_<j>.pb}. Each data set compiles
// with its own dimension bindings (the shapes of its inputs), runs on the
// chosen backend and mesh, and is compared with its expected outputs.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_CHECK_ONNXTESTCASE_H
#define DISTOPT_CHECK_ONNXTESTCASE_H

#include "distopt/Check/TensorComparison.h"
#include "distopt/Session/Session.h"

namespace distopt {

struct OnnxTestOutcome {
  bool passed = true;
  int dataSets = 0;
  int outputs = 0;
  double maxAbsDiff = 0;
  /// The first mismatch: which output of which data set, and how.
  std::string failure;
};

/// Runs every data set of the case in `caseDir`. Errors (a case that cannot
/// compile or run) are errors; a wrong output is a failed outcome. Under
/// MPI only the root process compares.
llvm::Expected<OnnxTestOutcome> runOnnxTestCase(mlir::MLIRContext &ctx,
                                                llvm::StringRef caseDir,
                                                const CompileOptions &base,
                                                const RunSettings &settings,
                                                const Tolerances &tolerances);

} // namespace distopt

#endif // DISTOPT_CHECK_ONNXTESTCASE_H
